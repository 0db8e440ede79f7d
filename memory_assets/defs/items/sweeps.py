"""The weekly and monthly sweeps: what time alone retires, as their own steps in the graph."""

import dagster as dg

from memory_assets.defs import freshness
from memory_assets.defs.clock import Clock
from memory_assets.defs.runtime import MemoryRoot
from memory_assets.lib.lifecycle import sweeps
from retrieval.store import ItemStore


def _sweep(context: dg.AssetExecutionContext, config: Clock, memory: MemoryRoot, kind: str) -> dg.MaterializeResult:
    paths = memory.paths
    now = config.resolve(context)
    items = ItemStore(paths).items()
    ids = sweeps.decide(kind, items, memory.config, now)
    sweep = sweeps.write(paths, kind, ids, now)
    return dg.MaterializeResult(metadata={
        "clock": now.isoformat(),
        "decided": len(ids),
        "considered": items.height,
        "refresh": sweep.refresh,
        "file": sweep.file,
        "sample": dg.MetadataValue.md("\n".join(f"- `{i}`" for i in ids[:10]) or "none"),  # ids: `memory show ID`
    })


@dg.asset(
    group_name="items",
    kinds={"python", "json"},
    code_version="archive-sweep-v1",
    freshness_policy=freshness.WEEKLY,
)
def archive_sweep(context: dg.AssetExecutionContext, config: Clock, memory: MemoryRoot) -> dg.MaterializeResult:
    """Weekly: the published items nobody has used for ``[lifecycle] archive_after_days``
    (90), as of the run's clock. ``memory_items`` archives them in the same run (each
    checked again: an item used since stays active); the permanent tier and promoted
    memories are never archived by time. Archived items are still searched, last."""
    return _sweep(context, config, memory, "archive")


@dg.asset(
    group_name="items",
    kinds={"python", "json"},
    code_version="cold-sweep-v1",
    freshness_policy=freshness.MONTHLY,
)
def cold_sweep(context: dg.AssetExecutionContext, config: Clock, memory: MemoryRoot) -> dg.MaterializeResult:
    """Monthly: the published items (active or archived) unused for ``[lifecycle]
    cold_after_days`` (180), which ``memory_items`` moves to cold storage in the same run.
    It also asks ``memory_items`` for the monthly refresh: every item embedded again with
    the configured model (a model change shows) and checked for contradictions against
    every other item, not only the night's new ones."""
    return _sweep(context, config, memory, "cold")
