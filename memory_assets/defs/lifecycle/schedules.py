"""The memory's sleep: nightly, weekly and monthly jobs on cron, each run one ``nights``
partition (the day it fires on), with a fallback sensor."""

from typing import Any

import dagster as dg

from memory_assets.defs.scheduled_jobs import CRONS, ITEMS_WRITER_TAGS, SELECTIONS, run_config
from retrieval.moments import utc

nightly_job = dg.define_asset_job(
    "nightly", selection=dg.AssetSelection.assets(*SELECTIONS["nightly"]), config=run_config("nightly"), tags=ITEMS_WRITER_TAGS,
    description="Fold feedback, apply the lifecycle (decay, boosts, TTLs, purge, promotion), "
                "lessons and triggers, summaries.",
)
weekly_job = dg.define_asset_job(
    "weekly", selection=dg.AssetSelection.assets(*SELECTIONS["weekly"]), config=run_config("weekly"), tags=ITEMS_WRITER_TAGS,
    description="The nightly work, plus: archive items not accessed for 90 days, rebuild summaries "
                "from scratch, cluster the archive into insights.",
)
monthly_job = dg.define_asset_job(
    "monthly", selection=dg.AssetSelection.assets(*SELECTIONS["monthly"]), config=run_config("monthly"), tags=ITEMS_WRITER_TAGS,
    description="Re-embed every item, rebuild and compact the indexes, move items unused for 6 months "
                "to cold, and write the health report.",
)



def _night_schedule(job: Any, name: str) -> dg.ScheduleDefinition:  # an unresolved asset job
    """``job`` on its cron, each tick running the ``nights`` partition of the day it fires on
    (so the partition key is the run's clock)."""

    @dg.schedule(name=name, job=job, cron_schedule=CRONS[job.name], execution_timezone="UTC",
                 default_status=dg.DefaultScheduleStatus.RUNNING)
    def _schedule(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
        night = utc(context.scheduled_execution_time).date().isoformat()
        return dg.RunRequest(run_key=f"{job.name}:{night}", partition_key=night)

    return _schedule


nightly_schedule = _night_schedule(nightly_job, "nightly_0200")
weekly_schedule = _night_schedule(weekly_job, "weekly_sunday_0100")
monthly_schedule = _night_schedule(monthly_job, "monthly_first_0300")
