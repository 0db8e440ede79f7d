"""Raw turns, one row each, exactly as the agent handed them over (minus credentials)."""


import dagster as dg

from memory_assets.defs.clock import run_now
from memory_assets.defs.partitions import sessions
from memory_assets.defs.resources import MemoryRoot
from memory_assets.lib import warehouse
from memory_assets.lib.faults import crash_point
from memory_assets.lib.ingest import inbox_scan
from memory_assets.lib.ingest.turns import new_turns
from retrieval.credentials import pii_from_config


@dg.asset(
    partitions_def=sessions,
    group_name="ingest",
    kinds={"python", "parquet"},
    code_version="resources-v1",
)
def resources(context: dg.AssetExecutionContext, memory: MemoryRoot) -> dg.MaterializeResult:
    """Every turn of every session the agents handed over: who said what, when, with what trust.

    Append-only: a turn is stored once under its content hash and never updated, and
    every memory item points back to the turns it came from. Credentials are redacted
    before anything is stored.
    """
    session_id = context.partition_key
    paths = memory.paths
    now = run_now(context)  # one clock per run (defs/clock.py)
    stored = warehouse.resource_ids(paths, [session_id]).to_list()
    files = inbox_scan.pending_files(paths).get(session_id, [])
    found = new_turns(files, session_id, stored, max_message_bytes=int(memory.config.ingest.max_message_bytes),
                      pii=pii_from_config(memory.config), now=now)
    rows, errors, redacted = found.frame, found.errors, found.redacted
    if rows.height:
        warehouse.write_frame(paths.resources / session_id / found.part_name, rows)
        crash_point("ingest")
    if errors:
        warehouse.write_json(paths.ingest_errors / f"{session_id}-{warehouse.stamp(now)}.json", errors, indent=1)
        for e in errors[:20]:
            context.log.warning(e)
    for file in files:
        inbox_scan.mark_consumed(paths, session_id, file)
    return dg.MaterializeResult(metadata={
        "new_turns": rows.height,
        "total_turns": len(set(stored)) + rows.height,
        "files_read": len(files),
        "bad_lines": len(errors),
        "credentials_redacted": int(redacted),
        "errors": dg.MetadataValue.md("\n".join(f"- {e}" for e in errors[:20]) or "none"),
    })
