"""What the nightly "sleep" publishes beside the items: lessons, triggers, MEMORY.md, the archive."""

import dagster as dg
import polars as pl

from memory_assets.defs import freshness
from memory_assets.defs.clock import Clock
from memory_assets.defs.partitions import nights
from memory_assets.defs.runtime import MemoryRoot
from memory_assets.lib.items import publish
from memory_assets.lib.lifecycle.housekeeping import HousekeepingRefused, publish_housekeeping


@dg.asset(
    deps=["published_items"],
    # One partition per night: the scheduled jobs run it for the day they fire on, and the
    # partition key is their clock (defs/clock.py).
    partitions_def=nights,
    group_name="lifecycle",
    kinds={"python", "parquet", "markdown"},
    code_version="lifecycle-v1",
    freshness_policy=freshness.NIGHTLY,
)
def lessons_and_triggers(context: dg.AssetExecutionContext, config: Clock, memory: MemoryRoot) -> dg.MaterializeResult:
    """What the nightly "sleep" leaves the agent besides its items: the lessons learned
    from corrections (``MemoryClient.lessons()``), forward triggers due on a date
    (``MemoryClient.due_triggers()``), ``MEMORY.md`` with the promoted memories, and the
    archive of purged, archived and cold items (kept forever, never deleted), as of the
    night its partition names (each night replaces the last). The lifecycle itself
    (decay, boosts, TTLs, purges, promotions) is applied to ``memory_items`` as of the
    run's clock; its counts are reported here.
    """
    now = config.resolve(context)
    try:
        done = publish_housekeeping(memory.paths, memory.config, now)
    except HousekeepingRefused as refused:
        raise dg.Failure(description=str(refused)) from None
    report = publish.read_report(memory.paths)
    return dg.MaterializeResult(metadata={
        "clock": now.isoformat(),
        "lessons": len(done.lessons),
        "triggers": done.triggers.height,
        "triggers_due_today": done.triggers.filter(pl.col("trigger_date") == now.date()).height,
        "promoted": done.promoted,
        "archive_items": done.archive_items,
        "actions": report.get("counts", report),
    })
