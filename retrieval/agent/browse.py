"""One reader's published memories one at a time: an item by id or short id (``resolve``,
``get``), a filtered list (``listing``), where an item came from (``history``), what the
archive says in aggregate (``insights``), and the reader's word about one item: a
feedback event naming it (``about``) or an erase request (``erase``).

Another namespace's item is not there for the reader: the same answer as an unknown id,
so a caller learns nothing about what others hold (``View.owns``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import polars as pl

from retrieval import events, limits
from retrieval.agent.injection import Injection
from retrieval.agent.lineage import events_about, related_items, sources_of
from retrieval.agent.pending import PENDING, Overlay, is_pending, pending_ref
from retrieval.agent.search import to_hit
from retrieval.agent.stores import Stores
from retrieval.agent.view import View
from retrieval.ids import REMEMBER_PREFIX
from retrieval.published import INSIGHTS_TABLE
from retrieval.store import ItemStore


def public(row: dict[str, Any], short_id: str | None = None) -> dict[str, Any]:
    """An item row as a reader gets it: no vector, times as ISO strings, its short id."""
    out = {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in row.items() if k != "vector"}
    if short_id:
        out["ref"] = short_id
    return out


def resolve(stores: Stores, view: View, item_id: str) -> str:
    """The item ``item_id`` names: a full id or a short one from the block (``m:4821``),
    or the reader's own write not published yet (``pending:…``, ``p:482193``: a correction
    of it is read at once and folded into the item the pipeline makes of it). Raises
    ``ItemStore.DoesNotExist`` (with the data root) or ``retrieval.ids.AmbiguousId``."""
    if is_pending(item_id):
        found = _pending(stores).resolve(item_id, view)
        if found is not None:
            return found.id
        made = _made_of(stores, view, item_id)
        if made is None:
            raise ItemStore.DoesNotExist(f"no pending memory {item_id!r} of yours under {stores.paths.root} (once "
                                         "stored, it has an m: id: search for it)")
        return made
    rows = stores.rows
    rows.refresh()
    found = rows.short_ids.resolve(item_id)
    row = rows.rows([found]).get(found) if found is not None else None
    if row is None or not view.owns(row):
        raise ItemStore.DoesNotExist(f"no published item with id {item_id!r} under {stores.paths.root}")
    return found


def _made_of(stores: Stores, view: View, ref: str) -> str | None:
    """The published item the pipeline made of the reader's write ``ref`` (``pending:…``
    or ``p:…``), which has left the overlay: the item read from its session (as the
    pipeline folds a correction of the pending line into it). None: none of the reader's."""
    rows = stores.rows
    rows.refresh()
    frame = rows.frame
    if frame is None or not frame.height or "session_id" not in frame.columns:
        return None
    ref = ref.strip().strip("[]").strip()
    made = view.own_rows(frame.filter(pl.col("session_id").str.starts_with(REMEMBER_PREFIX)))
    return next((item_id for item_id, session in made.select("id", "session_id").iter_rows()
                 if ref in (f"{PENDING}:{session}", pending_ref(f"{PENDING}:{session}"))), None)


def about(stores: Stores, view: View, type: str, item_id: str, now: datetime, *, pii: Iterable[str],
          payload: dict[str, Any] | None = None) -> str:
    """Record a feedback event of ``type`` (reinforce, demote, update…) about the item
    ``item_id`` names (``resolve``); its full id."""
    if type == "update":
        limits.memory(str((payload or {}).get("content") or ""), "update: the new wording")
    found = resolve(stores, view, item_id)
    written_by = {"written_by": view.author} if view.author else {}  # who said so: an agent's word is its claim
    _record(stores, type, [found], now, payload={**(payload or {}), **written_by}, pii=pii)
    return found


def _record(stores: Stores, type: str, item_ids: list[str], now: datetime, *, payload: dict[str, Any],
            pii: Iterable[str]) -> events.Event:
    """A feedback event; a correction (forget, update, pin, erase…) also takes effect for
    this process's next read at once, and for any other's once it sees the folder change."""
    event = events.record(stores.paths.events, type, item_ids, now, payload=payload, pii=pii,
                          corrections=stores.paths.corrections)
    stores.rows.corrections.invalidate()
    return event


def erase(stores: Stores, view: View, namespace: str | None, item_id: str | None, now: datetime, *,
          pii: Iterable[str], reason: str | None, by: str | None) -> str:
    """An ``erase`` request for every memory of ``namespace`` (default the one ``view``
    writes to) or for the one item ``item_id`` names; the request's id."""
    payload = {k: v for k, v in (("reason", reason), ("by", by)) if v}
    # The request is the operator's audit record, not a message: who asked ("dpo@acme.org")
    # stays readable; a credential in it is still redacted.
    del pii
    if item_id is not None:
        return _record(stores, "erase", [resolve(stores, view, item_id)], now, payload=payload, pii=()).id
    target = namespace or view.writer("erase")
    return _record(stores, "erase", [], now, payload={"namespace": target, **payload}, pii=()).id


def injection_of(stores: Stores, view: View, item_ids: Sequence[str]) -> Injection:
    """An injection of the items ``item_ids`` name (published, or the reader's pending
    writes), for a caller holding only the block's ids."""
    full = [resolve(stores, view, i) for i in item_ids]
    rows = stores.rows.rows([i for i in full if not is_pending(i)])
    overlay = _pending(stores)
    pending = [p.hit(1.0) for i in full if is_pending(i) and (p := overlay.get(i)) is not None]
    return Injection(text="", items=[*pending, *(to_hit(row, 1.0, 1.0) for row in rows.values())])


def _pending(stores: Stores) -> Overlay:
    """The writes not published yet, read from the inbox (nothing is embedded)."""
    def no_vectors(texts: list[str]) -> Any:
        raise AssertionError("a pending write is found by its id here, never by its words")
    return Overlay(stores.paths, no_vectors, stores.config.default_namespace, stores.current)


def get(stores: Stores, overlay: Overlay, view: View, item_id: str) -> dict[str, Any]:
    """One memory by id, short id or pending id, every status."""
    found = overlay.resolve(item_id, view) if is_pending(item_id) else None
    if found is not None and view.owns(found.as_row()):
        return stores.rows.corrections.apply(found.as_row())
    full = resolve(stores, view, item_id)  # a pending id once published: the item made of it
    return public(stores.rows.rows([full])[full], stores.rows.short_ids.short(full))


def listing(stores: Stores, overlay: Overlay, view: View, *, scope: str | None, project: str | None,
            category: str | None, kind: str | None, status: str | None, tag: str | None, text: str | None,
            limit: int, offset: int) -> list[dict[str, Any]]:
    """The memories matching every filter given, newest first (``MemoryClient.list``)."""
    rows: list[dict[str, Any]] = []
    if status in (None, PENDING):
        mine = stores.rows.corrections.apply_all(p.as_row() for p in overlay.pending(view))  # forgotten, reworded
        rows += [r for r in mine if r["status"] == PENDING and project in (None, r["project"])
                 and (not text or text.lower() in r["content"].lower())]
    stores.rows.refresh()
    frame = stores.rows.frame
    if status != PENDING and frame is not None and frame.height:
        frame = stores.rows.corrected(view.own_rows(frame))
        wanted = [pl.lit(True)]
        for column, value in (("status", status), ("scope", scope), ("category", category), ("kind", kind),
                              ("project", project)):
            if value is not None and column in frame.columns:
                wanted.append(pl.col(column) == value)
        if tag:
            wanted.append(pl.col("tags").list.contains(tag.lower()))
        if text:
            wanted.append(pl.col("content").str.to_lowercase().str.contains(text.lower(), literal=True))
        chosen = frame.filter(pl.all_horizontal(wanted)).sort("created_at", descending=True,
                                                                              nulls_last=True)
        short = stores.rows.short_ids
        rows += [public(r, short.short(r["id"])) for r in chosen.slice(0, offset + limit).to_dicts()]
    return rows[offset:offset + limit]


def history(stores: Stores, item: dict[str, Any]) -> dict[str, Any]:
    """Where ``item`` (as ``get`` returns it) came from and what happened to it."""
    if item["status"] == PENDING:
        return {"item": item, "sources": [], "events": [], "related": []}
    return {"item": item, "sources": sources_of(stores.paths, item.get("source_resource_ids") or []),
            "events": events_about(stores.paths, item["id"]),
            "related": [public(r) for r in related_items(stores.rows.frame, item)]}


def insights(stores: Stores, query: str | None, k: int) -> list[dict[str, Any]]:
    """One sentence per cluster of archived memories, with its size and member ids: the
    ``k`` closest to ``query`` (with their ``similarity``), or the largest."""
    side = stores.side(INSIGHTS_TABLE)
    if side is None:
        return []
    if not query:
        return sorted(side.frame.to_dicts(), key=lambda r: -int(r["size"]))[:k]
    return [{**{c: v for c, v in r.items() if c != "_distance"}, "similarity": 1.0 - float(r["_distance"])}
            for r in side.nearest(stores.embed(query), k)]
