"""What the nightly run leaves the agent besides its items: lessons, forward triggers,
MEMORY.md and the archive of retired items (the ``lessons_and_triggers`` asset and the
evals' in-process builds call ``publish_housekeeping``; lessons and triggers are audited
before they replace the previous ones).

- **Lessons**: short, imperative rules the agent should follow, from what users
  corrected, forbade, prescribed or decided. Each active correction, negative, procedure
  or decision carries its ``directive``, the imperative written at extraction ("Always run
  make lint before committing"; ``lib/extraction/fields.py``); duplicates are dropped,
  most important first, at most 20 (``[lifecycle] max_lessons``). Untrusted items never
  become lessons (a tool's output telling the agent what to do is exactly the injection
  the trust pass guards against), nor do uncertain ones (below ``injection.uncertain_below``).
- **Forward triggers**: the days items point to, so the agent can preload them on the
  day. Each active item's ``remind_on`` days (read from what was said when it was
  extracted: ``retrieval.dates.future_dates``) become one row per (item, day); none more
  than a week past.
- **MEMORY.md**: what the agent has learned for good, the items the lifecycle promoted
  (``policy.should_promote``). Promotion is a ratchet: an item leaves MEMORY.md only by
  leaving ``active`` (superseded, archived, purged, forgotten).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import polars as pl

from memory_assets.lib import warehouse
from memory_assets.lib.quality.citation_suite import lifecycle_report
from memory_assets.lib.quality.suite_report import QualityReport
from retrieval.config import MemoryConfig
from retrieval.lessons import lessons
from retrieval.paths import DataRoot
from retrieval.spans import spanned
from retrieval.store import ItemStore


# --- lessons ------------------------------------------------------------------------------

# --- forward triggers ---------------------------------------------------------------------

TRIGGER_SCHEMA: dict[str, pl.DataType] = {
    "trigger_date": pl.Date(),
    "message": pl.String(),
    "item_ids": pl.List(pl.String()),
    "source_created_at": pl.Datetime("us", "UTC"),
}

# A trigger stays in the table this many days after its date, for an agent that missed
# the day (MemoryClient.due_triggers returns overdue ones too).
OVERDUE_DAYS = 7


@spanned("forward triggers")
def forward_triggers(items: pl.DataFrame, now: datetime, *, overdue_days: int = OVERDUE_DAYS) -> pl.DataFrame:
    """One row per (active item, date it points to) (TRIGGER_SCHEMA), by date.

    Dates more than ``overdue_days`` before ``now``'s day are dropped; the more recent
    past ones stay, so an agent that did not ask on the day still gets them as overdue.
    """
    rows = []
    oldest = now.date() - timedelta(days=overdue_days)
    active = items.filter((pl.col("status") == "active") & (pl.col("remind_on").list.len() > 0)).select(
        "id", "content", "created_at", "remind_on")
    for item in active.iter_rows(named=True):
        for when in item["remind_on"] or []:
            if when >= oldest:
                rows.append({"trigger_date": when, "message": item["content"], "item_ids": [item["id"]],
                             "source_created_at": item["created_at"]})
    return pl.DataFrame(rows, schema=TRIGGER_SCHEMA).sort(["trigger_date", "source_created_at", "message"])


# --- MEMORY.md ----------------------------------------------------------------------------

HEADER = "# MEMORY"
INTRO = ("What this agent has learned for good: important memories users confirmed again and again, "
         "promoted by the nightly lifecycle. Generated; edits here are overwritten.")


@spanned("MEMORY.md")
def memory_md(items: pl.DataFrame) -> str:
    """MEMORY.md: active promoted items, one section per category (alphabetical), most
    important first. No timestamps, so an unchanged memory gives a byte-identical file."""
    lines = [HEADER, "", INTRO]
    promoted = items.filter((pl.col("status") == "active") & pl.col("promoted").fill_null(False))
    if promoted.is_empty():
        return "\n".join([*lines, "", "_Nothing promoted yet._", ""])
    promoted = promoted.sort(["category", "importance", "content", "id"], descending=[False, True, False, False])
    for (category,), group in promoted.group_by("category", maintain_order=True):
        lines += ["", f"## {str(category).capitalize()}", ""]
        for row in group.iter_rows(named=True):
            mark = " [untrusted]" if row.get("source_trust") == "untrusted" else ""
            lines.append(f"- {row['content'].strip()}{mark}")
    return "\n".join(lines) + "\n"


# --- publishing them -----------------------------------------------------------------------


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
                            how="diagonal_relaxed")
    warehouse.write_frame(target, retired)
    return retired.height


def publish_housekeeping(paths: DataRoot, config: MemoryConfig, now: datetime) -> Housekeeping:
    """Lessons and triggers from the published items (audited first), MEMORY.md of the
    promoted ones, and the retired ones added to the archive."""
    items = ItemStore(paths).items()
    active = items.filter(pl.col("status") == "active")
    found = lessons(active, config)
    triggers = forward_triggers(active, now)
    audit = lifecycle_report(found, triggers, items["id"])
    if not audit.passed:
        raise HousekeepingRefused(audit)
    warehouse.write_json(paths.lessons, found, indent=1)
    warehouse.write_frame(paths.triggers, triggers)
    warehouse.write_text(paths.memory_md, memory_md(items.filter(pl.col("promoted"))))
    archived = _upsert_archive(paths, items.filter(pl.col("status").is_in(["purged", "archived", "cold"])))
    return Housekeeping(found, triggers, int(items["promoted"].sum()) if items.height else 0, archived)
