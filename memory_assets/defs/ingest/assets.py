"""Raw turns, one row each, exactly as the agent handed them over (minus credentials)."""


import dagster as dg

from memory_assets.defs.clock import run_now
from memory_assets.defs.partitions import sessions
from memory_assets.defs.runtime import MemoryRoot
from memory_assets.lib.ingest.intake import store_session


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
    now = run_now(context)  # one clock per run (defs/clock.py)
    stored = store_session(memory.paths, context.partition_key, memory.config, now)
    for e in stored.errors[:20]:
        context.log.warning(e)
    return dg.MaterializeResult(metadata={
        "new_turns": stored.new_turns,
        "total_turns": stored.total_turns,
        "files_read": stored.files_read,
        "bad_lines": len(stored.errors),
        "credentials_redacted": stored.credentials_redacted,
        "errors": dg.MetadataValue.md("\n".join(f"- {e}" for e in stored.errors[:20]) or "none"),
    })
