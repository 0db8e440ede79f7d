"""New transcripts in the inbox become session partitions and runs."""


import hashlib

import dagster as dg

from memory_assets.defs.runtime import MemoryRoot, location_config
from memory_assets.lib.ingest import intake
from memory_assets.defs.partitions import (batch_tags, sensor_seconds, session_batches, sessions, sessions_per_run,
                                         with_new_sessions)

ingest_session_job = dg.define_asset_job(
    "ingest_session",
    selection=dg.AssetSelection.assets("resources", "extracted_facts"),
    partitions_def=sessions,
    description="Read new inbox files into resources and extract their facts: one session, or a batch (a range of sessions).",
)


BATCH_TAG = "memory/batch"


def _files_key(pending: dict, session_ids: list[str]) -> str:
    """Changes when any of these sessions gains unread files: the same files never launch two runs."""
    names = "".join(f"{s}:{f.name};" for s in session_ids for f in pending[s])
    return hashlib.sha256(names.encode()).hexdigest()[:16]


@dg.sensor(job=ingest_session_job, minimum_interval_seconds=sensor_seconds(location_config()),
           default_status=dg.DefaultSensorStatus.RUNNING)
def inbox_sensor(context: dg.SensorEvaluationContext, memory: MemoryRoot) -> dg.SensorResult | dg.SkipReason:
    """Adds a ``sessions`` partition per new session and requests runs for the sessions
    with unread files: one run per batch of ``[pipeline] sessions_per_run`` (a range of
    partitions), so a thousand sessions are a few dozen runs, not a thousand. A batch
    whose run failed is asked again one session at a time."""
    pending = intake.pending_files(memory.paths)
    if not pending:
        return dg.SkipReason("no unread transcripts in the inbox")
    # The new partitions are added, in this order, before the runs start.
    order, new = with_new_sessions(context.instance.get_dynamic_partitions(sessions.name), pending)
    requests = []
    for batch in session_batches(order, pending, sessions_per_run(memory.config)):
        key = _files_key(pending, batch)
        failed = len(batch) > 1 and context.instance.get_runs(
            dg.RunsFilter(tags={BATCH_TAG: key}, statuses=[dg.DagsterRunStatus.FAILURE]), limit=1)
        if len(batch) == 1 or failed:
            requests.extend(dg.RunRequest(partition_key=s, run_key=f"{s}:{_files_key(pending, [s])}") for s in batch)
        else:
            requests.append(dg.RunRequest(run_key=f"batch:{key}", tags={**batch_tags(batch), BATCH_TAG: key}))
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[sessions.build_add_request(new)] if new else [],
    )
