"""The memory's sleep: nightly, weekly and monthly jobs on cron, with a fallback sensor."""

import dagster as dg

from memory_assets.defs.scheduled_jobs import CRONS, SELECTIONS, run_config

nightly_job = dg.define_asset_job(
    "nightly", selection=dg.AssetSelection.assets(*SELECTIONS["nightly"]), config=run_config("nightly"),
    description="Fold feedback, apply the lifecycle (decay, boosts, TTLs, purge, promotion), "
                "lessons and triggers, summaries.",
)
weekly_job = dg.define_asset_job(
    "weekly", selection=dg.AssetSelection.assets(*SELECTIONS["weekly"]), config=run_config("weekly"),
    description="The nightly work, plus: archive items not accessed for 90 days, rebuild summaries "
                "from scratch, cluster the archive into insights.",
)
monthly_job = dg.define_asset_job(
    "monthly", selection=dg.AssetSelection.assets(*SELECTIONS["monthly"]), config=run_config("monthly"),
    description="Re-embed every item, rebuild and compact the indexes, move items unused for 6 months "
                "to cold, and write the health report.",
)

nightly_schedule = dg.ScheduleDefinition(
    name="nightly_0200", job=nightly_job, cron_schedule=CRONS["nightly"],
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
weekly_schedule = dg.ScheduleDefinition(
    name="weekly_sunday_0100", job=weekly_job, cron_schedule=CRONS["weekly"],
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
monthly_schedule = dg.ScheduleDefinition(
    name="monthly_first_0300", job=monthly_job, cron_schedule=CRONS["monthly"],
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
