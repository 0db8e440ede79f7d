"""Quarantined sessions are retried, never forgotten."""


import dagster as dg

from memory_assets.defs.resources import MemoryRoot
from memory_assets.lib import quarantine

extract_session_job = dg.define_asset_job(
    "extract_session",
    selection=dg.AssetSelection.assets("extracted_facts"),
    description="Re-extract one session's facts (quarantine retries, prompt backfills).",
)


@dg.sensor(job=extract_session_job, minimum_interval_seconds=1800, default_status=dg.DefaultSensorStatus.RUNNING)
def quarantine_retry_sensor(context: dg.SensorEvaluationContext, memory: MemoryRoot) -> dg.SensorResult | dg.SkipReason:
    """Every half hour, re-runs extraction for each session with an open quarantine record."""
    records = quarantine.open_records(memory.paths)
    if not records:
        return dg.SkipReason("quarantine is empty")
    latest: dict[str, str] = {}
    for record in records:
        latest[record["session_id"]] = max(latest.get(record["session_id"], ""), record["quarantined_at"])
    return dg.SensorResult(run_requests=[
        dg.RunRequest(partition_key=s, run_key=f"retry:{s}:{at}") for s, at in sorted(latest.items())
    ])
