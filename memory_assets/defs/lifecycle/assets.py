"""What the nightly "sleep" publishes beside the items: lessons, triggers, MEMORY.md, the archive."""

import dagster as dg
import polars as pl

from memory_assets.defs import freshness
from memory_assets.defs.resources import MemoryRoot
from memory_assets.lib import lifecycle as rules
from memory_assets.lib.items import publish
from memory_assets.defs.clock import Clock
from memory_assets.lib.quality.citation_suite import lifecycle_report
from memory_assets.lib import warehouse
from retrieval.store import ItemStore
from retrieval.spans import spanned


@spanned("archive table")
def _upsert_archive(paths, retired: pl.DataFrame) -> int:
    """Purged, archived and cold items are copied into the archive table and kept forever."""
    target = paths.archive / "items.parquet"
    kept = warehouse.read_frame(target)
    if kept is not None:
        retired = pl.concat([kept.filter(~pl.col("id").is_in(retired["id"].implode())), retired],
                            how="vertical_relaxed")
    warehouse.write_frame(target, retired)
    return retired.height


@dg.asset(
    deps=["published_items"],
    group_name="lifecycle",
    kinds={"python", "parquet", "markdown"},
    code_version="lifecycle-v1",
    freshness_policy=freshness.NIGHTLY,
)
def lifecycle(context: dg.AssetExecutionContext, config: Clock, memory: MemoryRoot) -> dg.MaterializeResult:
    """The memory's nightly housekeeping, as the agent sees it: the lessons learned from
    corrections (``MemoryClient.lessons()``), forward triggers due on a date
    (``MemoryClient.due_triggers()``), ``MEMORY.md`` with the promoted memories, and the
    archive of purged, archived and cold items (kept forever, never deleted). The decay,
    boosts, TTLs, purges and promotions themselves are applied to ``memory_items`` as of
    the run's clock; their counts are reported here.
    """
    paths, settings = memory.paths, memory.config
    now = config.resolve(context)
    items = ItemStore(paths).items()
    active = items.filter(pl.col("status") == "active")
    lessons = rules.lessons(active, settings)
    triggers = rules.forward_triggers(active, now)
    # Audit before publishing: a failed suite leaves the previous lessons and triggers.
    audit = lifecycle_report(lessons, triggers, items["id"])
    if not audit.passed:
        raise dg.Failure(description=f"lessons/triggers failed their checks; the previous ones stay published: "
                                     f"{audit.summary()}")
    warehouse.write_json(paths.lessons, lessons, indent=1)
    warehouse.write_frame(paths.triggers, triggers)
    warehouse.write_text(paths.memory_md, rules.memory_md(items.filter(pl.col("promoted"))))
    archived = _upsert_archive(paths, items.filter(pl.col("status").is_in(["purged", "archived", "cold"])))
    report = publish.read_report(paths)
    due_today = triggers.filter(pl.col("trigger_date") == now.date()).height
    return dg.MaterializeResult(metadata={
        "clock": now.isoformat(),
        "lessons": len(lessons),
        "triggers": triggers.height,
        "triggers_due_today": due_today,
        "promoted": int(items["promoted"].sum()) if items.height else 0,
        "archive_items": archived,
        "actions": report.get("counts", report),
        "lessons_text": dg.MetadataValue.md("\n".join(f"- {x}" for x in lessons) or "none"),
    })
