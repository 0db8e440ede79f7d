"""New transcripts in the inbox become session partitions and runs."""


import hashlib

import dagster as dg

from memory_assets.defs.runtime import MemoryRoot
from memory_assets.lib.ingest import intake
from memory_assets.defs.partitions import sessions

ingest_session_job = dg.define_asset_job(
    "ingest_session",
    selection=dg.AssetSelection.assets("resources", "extracted_facts"),
    partitions_def=sessions,
    description="Read a session's new inbox files into resources and extract its facts.",
)


@dg.sensor(job=ingest_session_job, minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING)
def inbox_sensor(context: dg.SensorEvaluationContext, memory: MemoryRoot) -> dg.SensorResult | dg.SkipReason:
    """Adds a ``sessions`` partition per new session and requests a run for every session with unread files."""
    pending = intake.pending_files(memory.paths)
    if not pending:
        return dg.SkipReason("no unread transcripts in the inbox")
    known = set(context.instance.get_dynamic_partitions(sessions.name))
    new = sorted(s for s in pending if s not in known)
    requests = [
        dg.RunRequest(
            partition_key=session_id,
            # The same unread files never launch two runs.
            run_key=f"{session_id}:{hashlib.sha256(''.join(f.name for f in files).encode()).hexdigest()[:16]}",
        )
        for session_id, files in sorted(pending.items())
    ]
    return dg.SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[sessions.build_add_request(new)] if new else [],
    )
