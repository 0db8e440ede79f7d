"""The right to be forgotten as a pipeline job: ``erase`` (``memory erase``, or the sensor
when an agent calls ``MemoryClient.erase``)."""

import hashlib
from datetime import datetime, timezone

import dagster as dg

from memory_assets.defs.clock import Clock
from memory_assets.defs.partitions import sessions
from memory_assets.defs.runtime import MemoryRoot
from memory_assets.defs.scheduled_jobs import ITEMS_WRITER_TAGS
from memory_assets.lib import erasure as erasing

# The nightly work, between the two erasure steps: everything the agent reads is rebuilt
# from the cleaned sources, summaries from scratch.
ERASE_SELECTION = ["erasure", "memory_items", "entities", "edges", "published_items", "lessons_and_triggers",
                   "category_summaries", "erased_versions"]


def erase_run_config(now: datetime | None = None) -> dict:
    clock = {"now": now.isoformat() if now else ""}
    return {"ops": {"erasure": {"config": clock}, "memory_items": {"config": clock},
                    "lessons_and_triggers": {"config": clock},
                    "category_summaries": {"config": {**clock, "rebuild": True}},
                    "erased_versions": {"config": clock}}}


@dg.asset(
    group_name="lifecycle",
    kinds={"python", "parquet", "sqlite"},
    code_version="erasure-v1",
)
def erasure(context: dg.AssetExecutionContext, config: Clock, memory: MemoryRoot) -> dg.MaterializeResult:
    """The right to be forgotten, applied to what every build reads: each pending ``erase``
    request (a namespace, or one item: ``memory erase``) removes its words from the inbox,
    the stored turns, the extracted facts, rejections, quarantine, imports, feedback events,
    merge logs, the archive and the per-turn checkpoints; ``memory_items`` then rebuilds
    without them. A session left with nothing loses its runs and its partition here too.
    Counts only: an erasure never shows what it erased."""
    now = config.resolve(context)
    done = erasing.erase_sources(memory.paths, memory.config, now)
    # Dagster's own record of a removed session: its runs (their metadata) and its partition.
    runs = 0
    for session in done.sessions_removed:
        for record in context.instance.get_run_records(dg.RunsFilter(tags={"dagster/partition": session})):
            if record.dagster_run.run_id != context.run_id:
                context.instance.delete_run(record.dagster_run.run_id)
                runs += 1
        if context.instance.has_dynamic_partition(sessions.name, session):
            context.instance.delete_dynamic_partition(sessions.name, session)
    return dg.MaterializeResult(metadata={
        "clock": now.isoformat(), "requests": done.requests, "namespaces": len(done.namespaces),
        "items": done.items, "erased": dict(sorted(done.counts.items())),
        "sessions_removed": len(done.sessions_removed), "dagster_runs_deleted": runs,
    })


@dg.asset(
    deps=["published_items", "lessons_and_triggers", "category_summaries"],
    group_name="lifecycle",
    kinds={"python", "parquet", "lancedb"},
    code_version="erased-versions-v1",
)
def erased_versions(context: dg.AssetExecutionContext, config: Clock, memory: MemoryRoot) -> dg.MaterializeResult:
    """Every kept version without what was erased, once the rebuilt memory is published:
    item and graph versions rewritten, archived summary pages without the erased lines,
    LanceDB tables cut to their latest version (older ones are readable by version) and
    the rollback history with them; then the audit rows (``erasure_log``: id, namespace,
    when, why, by whom; no content)."""
    now = config.resolve(context)
    try:
        done = erasing.purge_versions(memory.paths, memory.config, now)
    except erasing.ErasureIncomplete as exc:
        raise dg.Failure(str(exc)) from None
    return dg.MaterializeResult(metadata={
        "clock": now.isoformat(), "requests": done.requests, "audit_rows": done.logged,
        "rewritten": dict(sorted(done.counts.items())),
        "lancedb_versions_removed": done.lancedb_versions_removed,
    })


erase_job = dg.define_asset_job(
    "erase", selection=dg.AssetSelection.assets(*ERASE_SELECTION), config=erase_run_config(), tags=ITEMS_WRITER_TAGS,
    description="The right to be forgotten: erase the requested namespaces and items from every store "
                "and every kept version, rebuilding and publishing what agents read without them.",
)


@dg.sensor(job=erase_job, minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING)
def erasure_sensor(context: dg.SensorEvaluationContext, memory: MemoryRoot) -> dg.RunRequest | dg.SkipReason:
    """An agent's ``MemoryClient.erase`` is carried out within a minute: the ``erase`` job
    runs for the requests not done yet (each set of requests once)."""
    waiting = erasing.pending(memory.paths)
    if not waiting:
        return dg.SkipReason("no erasure requested")
    key = hashlib.sha256(",".join(sorted(r.id for r in waiting)).encode()).hexdigest()[:16]
    return dg.RunRequest(run_key=f"erase:{key}", partition_key=datetime.now(timezone.utc).date().isoformat(),
                         tags={"memory/trigger": "erase-request"})
