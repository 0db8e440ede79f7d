"""What each page of the memory browser shows, read through the reader's ``MemoryClient``
(so the API's namespace and scope rules hold): the rows of a search or a list, the
filters' choices, one memory's timeline, an entity's profile and neighbours, and the
latest health report.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import polars as pl

from retrieval.agent.retrieve import profile_lines
from retrieval.limits import MEMORY_MAX_CHARS
from retrieval.paths import DataRoot

if TYPE_CHECKING:
    from retrieval.agent.client import MemoryClient
    from retrieval.service.core import Service
    from retrieval.service.keys import ApiKey

STATUSES = ("active", "pending", "archived", "cold", "superseded", "candidate", "purged", "any")
DONE = {"update": "Reworded: the next inject and search show the new words.",
        "forget": "Forgotten: it is not injected or found again.",
        "pin": "Pinned: kept for good, in the permanent tier.",
        "unpin": "Unpinned: back to the tier its kind gives it."}
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_PLOTS = ("items_by_category.png", "growth.png", "stale.png", "rejections.png")  # memory_assets.lib.health.PLOTS


def new_token() -> str:
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Filters:
    q: str = ""
    category: str = ""
    kind: str = ""
    status: str = "active"
    project: str = ""
    page_no: int = 1

    @classmethod
    def read(cls, q: str, category: str, kind: str, status: str, project: str, page_no: int) -> Filters:
        return cls(q.strip()[:MEMORY_MAX_CHARS], category.strip()[:64], kind.strip()[:32],
                   status if status in STATUSES else "active", project.strip()[:128], page_no)

    def query(self) -> dict[str, str]:
        return {k: v for k, v in (("q", self.q), ("category", self.category), ("kind", self.kind),
                                  ("status", self.status), ("project", self.project)) if v}


@dataclass(frozen=True)
class Row:
    id: str
    ref: str
    content: str
    category: str
    kind: str
    status: str
    project: str | None
    created_at: str
    relevance: float | None = None


def _row(raw: dict[str, Any], relevance: float | None = None) -> Row:
    created = raw.get("created_at")
    return Row(str(raw["id"]), str(raw.get("ref") or raw["id"]), str(raw.get("content") or ""),
               str(raw.get("category") or ""), str(raw.get("kind") or "fact"), str(raw.get("status") or ""),
               raw.get("project"), (created.isoformat() if isinstance(created, datetime) else str(created or ""))[:10],
               relevance)


def listed(reader: MemoryClient, filters: Filters, size: int) -> list[Row]:
    rows = reader.list(category=filters.category or None, kind=filters.kind or None,
                       status=None if filters.status == "any" else filters.status, project=filters.project or None,
                       limit=size, offset=(filters.page_no - 1) * size)
    return [_row(r) for r in rows]


def searched(service: Service, key: ApiKey, reader: MemoryClient, filters: Filters, size: int) -> list[Row]:
    """The search's hits, in rank order, narrowed by the other filters."""
    hits = service.search(key, reader.namespace, filters.q, k=size, project=filters.project or None)
    short = reader.stores.rows.short_ids
    out = []
    for hit in hits:
        raw = {**hit.row, "id": hit.id, "content": hit.content, "category": hit.category}
        raw["ref"] = raw.get("ref") or (short.short(hit.id) if not hit.id.startswith("pending") else None)
        row = _row(raw, round(float(hit.relevance), 3))
        if all(not want or want == have for want, have in ((filters.category, row.category), (filters.kind, row.kind))):
            if filters.status in ("any", row.status) or (filters.status == "active" and row.status == "pending"):
                out.append(row)
    return out


def choices(reader: MemoryClient) -> dict[str, list[str]]:
    """The categories, kinds and projects the reader's memories have, for the filters."""
    rows = reader.stores.rows
    rows.refresh()
    frame = rows.frame
    if frame is None or not frame.height:
        return {"category": [], "kind": [], "project": []}
    own = reader.view.own_rows(frame)
    return {c: sorted(v for v in own[c].drop_nulls().unique().to_list() if v) if c in own.columns else []
            for c in ("category", "kind", "project")}


@dataclass
class ItemPage:
    item: dict[str, Any]
    timeline: list[tuple[str, str, str]] = field(default_factory=list)  # (when, what, detail)
    sources: list[dict[str, Any]] = field(default_factory=list)
    related: list[dict[str, Any]] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)


_EVENT_WORDS = {"reinforce": "confirmed by the user", "demote": "marked unhelpful", "update": "reworded",
                "forget": "forgotten", "pin": "pinned", "unpin": "unpinned", "erase": "erasure asked",
                "referenced": "used in a reply", "ignored": "injected, not used"}


def item_page(reader: MemoryClient, item_id: str) -> ItemPage:
    """One memory with its sources, related memories and timeline, newest event last."""
    item = reader.get(item_id)
    history = reader.history(str(item["id"]))
    timeline: list[tuple[str, str, str]] = []
    for when, what in ((item.get("valid_from"), "true from"), (item.get("created_at"), "stored"),
                       (item.get("invalid_at"), "replaced")):
        if when:
            detail = f"by {item['superseded_by']}" if what == "replaced" and item.get("superseded_by") else ""
            timeline.append((_day(when), what, detail))
    for event in history.get("events") or []:
        payload = event.get("payload") or {}
        detail = f"“{payload['content']}”" if event.get("type") == "update" and payload.get("content") else ""
        timeline.append((_day(event.get("ts")), _EVENT_WORDS.get(str(event.get("type")), str(event.get("type"))), detail))
    timeline.sort(key=lambda entry: entry[0])
    return ItemPage(item, timeline, history.get("sources") or [], history.get("related") or [],
                    [str(e) for e in item.get("entities") or []])


def _day(value: Any) -> str:
    text = value.isoformat() if isinstance(value, datetime) else str(value or "")
    return text[:16].replace("T", " ")


@dataclass
class EntityPage:
    name: str
    known: bool
    lines: list[str] = field(default_factory=list)
    neighbours: list[str] = field(default_factory=list)
    items: list[Row] = field(default_factory=list)


def entity_page(reader: MemoryClient, name: str) -> EntityPage:
    """What memory holds about ``name``: its profile lines, the entities it is linked to,
    and the reader's active memories that mention it."""
    stores, view = reader.stores, reader.view
    stores.current()  # the published snapshot and its graph
    graph = stores.graph
    ids = graph.named(name, view.namespace)
    if not ids:
        return EntityPage(name, False)
    hits = profile_lines(stores, view, name, 30) or []
    lines = [h.content for h in hits]
    near: dict[str, float] = {}
    mentioned: dict[str, float] = {}
    for entity in ids:
        for other, weight in graph.neighbours.get(entity, []):
            if other not in ids:
                near[other] = max(near.get(other, 0.0), weight)
        for item_id, weight in graph.mentions.get(entity, []):
            mentioned[item_id] = max(mentioned.get(item_id, 0.0), weight)
    for other, items in graph.mentions.items():  # and the entities named beside it
        if other not in ids and any(item_id in mentioned for item_id, _ in items):
            near.setdefault(other, 0.0)
    names = sorted({graph.entity_names.get(e, e) for e in sorted(near, key=lambda e: (-near[e], e))[:30]})
    found = stores.rows.rows(sorted(mentioned, key=lambda i: -mentioned[i])[:50])
    items = [_row({**r, "ref": stores.rows.short_ids.short(r["id"])}) for r in found.values()
             if view.owns(r) and r.get("status") == "active"]
    return EntityPage(name, True, lines, names, items)


@dataclass
class HealthPage:
    day: str | None
    plots: list[str]
    counts: dict[str, int]


def health_page(reader: MemoryClient) -> HealthPage:
    """The latest health report's plots (the whole store's, as the monthly job drew them)
    and the reader's own memories by status."""
    health = reader.paths.health
    days = sorted(p.name for p in health.iterdir() if _DAY.match(p.name)) if health.exists() else []
    day = days[-1] if days else None
    plots = [p for p in _PLOTS if day and (health / day / p).exists()]
    rows = reader.stores.rows
    rows.refresh()
    frame = rows.frame
    counts: dict[str, int] = {}
    if frame is not None and frame.height:
        own = rows.corrected(reader.view.own_rows(frame))
        counts = dict(own.group_by("status").agg(pl.len()).sort("status").iter_rows())
    return HealthPage(day, plots, counts)


def health_plot(paths: DataRoot, day: str, plot: str) -> bytes | None:
    """One plot's bytes, when ``day`` and ``plot`` name a report's plot (no other file)."""
    if not _DAY.match(day) or plot not in _PLOTS:
        return None
    target = paths.health / day / plot
    return target.read_bytes() if target.exists() else None
