"""What an agent is reminded of: the lessons it should follow (``lessons_for``,
``MemoryClient.lessons``) and the forward triggers due on a day, or overdue, that have not
fired yet (``due``; ``fire`` delivers them once, ``MemoryClient.due_triggers``); each its
item's reader's only."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import polars as pl

from retrieval import events
from retrieval.agent.stores import Stores
from retrieval.agent.view import View
from retrieval.config import MemoryConfig
from retrieval.lessons import lessons


def due(stores: Stores, view: View, now: datetime) -> list[dict[str, Any]]:
    """The triggers due on ``now``'s day or before, not fired yet, each with its ``key``;
    for a reader of a namespace or a project, only those of an item ``view`` owns in its
    project (another project's wait for their own project's reader)."""
    paths = stores.paths
    if not paths.triggers.exists():
        return []
    rows = pl.read_parquet(str(paths.triggers)).filter(pl.col("trigger_date") <= now.date()).to_dicts()
    fired = events.fired_triggers(paths)
    if view.namespace or view.project is not None:
        stores.rows.refresh()
        items = stores.rows.rows(sorted({i for r in rows for i in r["item_ids"] or []}))
        rows = [r for r in rows if any(i in items and view.owns(items[i]) and view.in_project(items[i])
                                       for i in r["item_ids"] or [])]
    out = [{**row, "key": events.trigger_key(row)} for row in rows]
    return [row for row in out if row["key"] not in fired]


def fire(stores: Stores, view: View, now: datetime, *, mark_fired: bool, pii: Iterable[str]) -> list[dict[str, Any]]:
    """The triggers ``due`` by ``now``, each delivered once: ``mark_fired`` records a
    ``fired`` event naming them and their items, so they do not come back."""
    found = due(stores, view, now)
    if found and mark_fired:
        events.record(stores.paths.events, "fired", sorted({i for r in found for i in r["item_ids"] or []}),
                      now, payload={"triggers": [r["key"] for r in found]}, pii=pii)
    return found


def lessons_for(stores: Stores, view: View, config: MemoryConfig) -> list[str]:
    """The lessons (``retrieval.lessons``) of the published items ``view`` owns in its project."""
    stores.rows.refresh()
    frame = stores.rows.frame
    return [] if frame is None else lessons(view.own_rows(frame), config)
