"""Quarantined sessions are retried, never forgotten."""


import dagster as dg

from memory_assets.defs.runtime import MemoryRoot
from memory_assets.lib.extraction import quarantine

extract_session_job = dg.define_asset_job(
    "extract_session",
    selection=dg.AssetSelection.assets("extracted_facts"),
    description="Re-extract one session's facts (quarantine retries, prompt backfills).",
)


@dg.sensor(job=extract_session_job, minimum_interval_seconds=1800, default_status=dg.DefaultSensorStatus.RUNNING)
def quarantine_retry_sensor(context: dg.SensorEvaluationContext, memory: MemoryRoot) -> dg.SensorResult | dg.SkipReason:
    """Every half hour, re-runs extraction for each session with an open quarantine record
    that asks for a retry (an LLM failure; not a session over its time budget)."""
    records = [r for r in quarantine.open_records(memory.paths) if r.get("retry", True)]
    if not records:
        return dg.SkipReason("no quarantined session waits for a retry")
    latest: dict[str, str] = {}
    for record in records:
        latest[record["session_id"]] = max(latest.get(record["session_id"], ""), record["quarantined_at"])
    return dg.SensorResult(run_requests=[
        dg.RunRequest(partition_key=s, run_key=f"retry:{s}:{at}") for s, at in sorted(latest.items())
    ])


@dg.sensor(job=extract_session_job, minimum_interval_seconds=3600, default_status=dg.DefaultSensorStatus.RUNNING)
def unextracted_sessions_sensor(context: dg.SensorEvaluationContext, memory: MemoryRoot) -> dg.SensorResult | dg.SkipReason:
    """The nightly rule "extract sessions with no facts", on the daemon: every hour, a
    session whose turns are stored but that has no facts file (a run that crashed or was
    cancelled between ingest and extraction) is extracted again. A quarantined session is
    left to ``quarantine_retry_sensor``."""
    from memory_assets.cli.runner import pending_sessions

    _, waiting = pending_sessions(memory.paths)
    quarantined = set(quarantine.quarantined_sessions(memory.paths))
    missing = [s for s in waiting if s not in quarantined]
    if not missing:
        return dg.SkipReason("every stored session has its facts")
    known = set(context.instance.get_dynamic_partitions("sessions"))
    return dg.SensorResult(run_requests=[
        dg.RunRequest(partition_key=s, run_key=f"unextracted:{s}:{_resources_stamp(memory.paths, s)}")
        for s in missing if s in known
    ])


def _resources_stamp(paths, session_id: str) -> str:
    """Changes when the session gains turns, so a session that failed again is retried then."""
    folder = paths.resources / session_id
    return str(max((p.stat().st_mtime_ns for p in folder.glob("*.parquet")), default=0))
