"""Raw turns, one row each, exactly as the agent handed them over (minus credentials)."""


import dagster as dg

from memory_assets.defs.clock import run_now
from memory_assets.defs.partitions import session_backfills, sessions
from memory_assets.defs.runtime import MemoryRoot
from memory_assets.lib.ingest.intake import store_session


@dg.asset(
    partitions_def=sessions,
    group_name="ingest",
    kinds={"python", "parquet"},
    code_version="resources-v1",
    backfill_policy=session_backfills,
)
def resources(context: dg.AssetExecutionContext, memory: MemoryRoot) -> dg.MaterializeResult:
    """Every turn of every session the agents handed over: who said what, when, with what trust.

    Append-only: a turn is stored once under its content hash and never updated, and
    every memory item points back to the turns it came from. Credentials are redacted
    before anything is stored.
    """
    now = run_now(context)  # one clock per run (defs/clock.py)
    # One session, or a batch of them (a range run: `[pipeline] sessions_per_run`).
    stored = [store_session(memory.paths, session_id, memory.config, now) for session_id in context.partition_keys]
    errors = [e for one in stored for e in one.errors]
    for e in errors[:20]:
        context.log.warning(e)
    return dg.MaterializeResult(metadata={
        "sessions": len(stored),
        "new_turns": sum(one.new_turns for one in stored),
        "total_turns": sum(one.total_turns for one in stored),
        "files_read": sum(one.files_read for one in stored),
        "bad_lines": len(errors),
        "credentials_redacted": sum(one.credentials_redacted for one in stored),
        "errors": dg.MetadataValue.md("\n".join(f"- {e}" for e in errors[:20]) or "none"),
    })
