"""What the nightly run publishes beside the items, over a data root: the lessons, the
forward triggers, MEMORY.md and the archive of retired items.

The ``lifecycle`` asset and the evals' in-process builds call ``publish_housekeeping``.
Lessons and triggers are audited before they replace the previous ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import polars as pl

from memory_assets.lib import warehouse
from memory_assets.lib.lifecycle.lessons import lessons as lessons_of
from memory_assets.lib.lifecycle.promotion import memory_md
from memory_assets.lib.lifecycle.triggers import forward_triggers
from memory_assets.lib.quality.citation_suite import lifecycle_report
from memory_assets.lib.quality.suite_report import QualityReport
from retrieval.config import MemoryConfig
from retrieval.paths import DataRoot
from retrieval.spans import spanned
from retrieval.store import ItemStore


class HousekeepingRefused(RuntimeError):
    """The lessons or triggers failed their checks; the previous ones stay published."""

    def __init__(self, report: QualityReport):
        super().__init__(f"lessons/triggers failed their checks; the previous ones stay published: {report.summary()}")
        self.report = report


@dataclass
class Housekeeping:
    lessons: list[str]
    triggers: pl.DataFrame
    promoted: int
    archive_items: int


@spanned("archive table")
def _upsert_archive(paths: DataRoot, retired: pl.DataFrame) -> int:
    """Purged, archived and cold items are copied into the archive table and kept forever."""
    target = paths.archive / "items.parquet"
    kept = warehouse.read_frame(target)
    if kept is not None:
        retired = pl.concat([kept.filter(~pl.col("id").is_in(retired["id"].implode())), retired],
                            how="vertical_relaxed")
    warehouse.write_frame(target, retired)
    return retired.height


def publish_housekeeping(paths: DataRoot, config: MemoryConfig, now: datetime) -> Housekeeping:
    """Lessons and triggers from the published items (audited first), MEMORY.md of the
    promoted ones, and the retired ones added to the archive."""
    items = ItemStore(paths).items()
    active = items.filter(pl.col("status") == "active")
    lessons = lessons_of(active, config)
    triggers = forward_triggers(active, now)
    audit = lifecycle_report(lessons, triggers, items["id"])
    if not audit.passed:
        raise HousekeepingRefused(audit)
    warehouse.write_json(paths.lessons, lessons, indent=1)
    warehouse.write_frame(paths.triggers, triggers)
    warehouse.write_text(paths.memory_md, memory_md(items.filter(pl.col("promoted"))))
    archived = _upsert_archive(paths, items.filter(pl.col("status").is_in(["purged", "archived", "cold"])))
    return Housekeeping(lessons, triggers, int(items["promoted"].sum()) if items.height else 0, archived)
