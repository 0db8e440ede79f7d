"""Forward triggers: the days items point to, so the agent can preload them on the day.

Each active item's ``remind_on`` days (read from what was said when it was extracted:
``lib/extraction/dates.py``) become one row per (item, day); none more than a week past.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl

from retrieval.spans import spanned

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
    active = items.filter(pl.col("status") == "active").select("id", "content", "created_at", "remind_on")
    for item in active.iter_rows(named=True):
        for when in item["remind_on"] or []:
            if when >= oldest:
                rows.append({"trigger_date": when, "message": item["content"], "item_ids": [item["id"]],
                             "source_created_at": item["created_at"]})
    return pl.DataFrame(rows, schema=TRIGGER_SCHEMA).sort(["trigger_date", "source_created_at", "message"])
