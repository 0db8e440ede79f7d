"""Tier 2's candidate lists: the vector, full-text and graph rows for a query, each with
its item's attributes, only rows the reader may see (``candidates``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import numpy as np

from retrieval.agent.options import RetrievalOptions
from retrieval.agent.search import RowIds, async_table, fts_list, fts_query, matching, nearest, run, vector_list
from retrieval.agent.stores import Stores
from retrieval.agent.view import View, recallable_for
from retrieval.read_index import ReadIndex
from retrieval.schema import ITEM_SCHEMA
from retrieval.spans import spanned, timed

# What an item row holds, as in the Parquet snapshot: read from LanceDB for ids the snapshot lacks.
_ATTRIBUTES = list(ITEM_SCHEMA)


@spanned("candidates")
def candidates(stores: Stores, view: View, options: RetrievalOptions, query: str, limit: int,
               terms: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """The vector and full-text candidate lists (at most ``limit`` each), every row
    with all its item attributes, only rows ``view`` may see. ``query`` is embedded;
    ``terms`` (default: ``query``) is the full-text query.

    Both queries fetch ids only and run unfiltered for twice ``limit`` rows: the
    attributes come from the in-memory published snapshot (from LanceDB for an id it
    does not hold yet), and so does the filter (recallable status, namespace, scopes),
    applied before anything is ranked. A list that loses so many rows to the filter that
    it falls short is asked again with the filter inside LanceDB (exact, slower). The
    lists are read through LanceDB's async API on this thread's own event loop, row ids
    and scores only (``retrieval.agent.search``: 4–5 ms less an inject at 100k items than its
    sync API and the ``id`` column); the query is embedded first, then the vector and
    full-text queries run together.
    """
    fetch = 2 * limit
    terms = query if terms is None else terms
    recallable = recallable_for(f"{query} {terms}")  # the rewrite may drop "before" from the terms
    wanted = _Wanted(vector=options.fusion in ("hybrid", "vector"),
                     graph=options.graph and options.fusion in ("hybrid", "graph") and stores.config.graph.weight > 0,
                     fts=options.fusion in ("hybrid", "fts") and bool(fts_query(terms)))
    index = stores.read_index()
    table = None if index is not None else stores.table()
    if index is not None:
        lists = _indexed(stores, index, view, query, terms, fetch, wanted)
    else:
        lists = run(_lists(stores, view, async_table(table), stores.row_ids(table), query, terms, fetch, wanted))
    # A list's rows leave the snapshot only until it has ``limit`` visible ones: first its
    # ``limit`` best, then as many more as the filter dropped, each round one conversion
    # for every list (converting a row to a dict is most of this step: 10–30 µs a row).
    visible_rows: dict[str, list[dict[str, Any]]] = {name: [] for name in lists}
    taken = dict.fromkeys(lists, 0)
    attributes: dict[str, dict[str, Any]] = {}
    while pages := {name: rows[taken[name]:taken[name] + limit - len(visible_rows[name])]
                    for name, rows in lists.items() if len(visible_rows[name]) < limit and taken[name] < len(rows)}:
        new = {name: [r for r in page if r["id"] not in attributes] for name, page in pages.items()}
        if any(new.values()):
            attributes.update(_attributes(stores, table, new))
        for name, page in pages.items():
            taken[name] += len(page)
            visible_rows[name] += [{**attributes[r["id"]], **r} for r in page
                                   if r["id"] in attributes and view.visible(attributes[r["id"]], recallable)]
    out: dict[str, list[dict[str, Any]]] = {}
    for name, rows in lists.items():
        visible = visible_rows[name]
        if len(visible) < limit and len(rows) == fetch and name != "graph":
            # The filter dropped too many: filter before ranking (the same predicate, in
            # process on the snapshot, or inside LanceDB).
            where = view.where(recallable)
            if index is not None:
                again = _indexed(stores, index, view, query, terms, limit,
                                 _Wanted(vector=name == "vector", graph=False, fts=name == "fts"),
                                 stores.rows.mask(where))[name]
            else:
                again = (vector_list(table, stores.embed(query), limit=limit, where=where)
                         if name == "vector" else fts_list(table, terms, limit=limit, where=where))
            attributes.update(_attributes(stores, table, {name: again}))
            visible = [{**attributes[r["id"]], **r} for r in again
                       if r["id"] in attributes and view.held(attributes[r["id"]])]
        out[name] = visible[:limit]
    return out


@dataclass(frozen=True)
class _Wanted:
    """Which candidate lists a search asks for."""

    vector: bool
    graph: bool
    fts: bool


async def _lists(stores: Stores, view: View, table: Any, row_ids: RowIds, query: str, terms: str,
                 fetch: int, wanted: _Wanted) -> dict[str, list[dict[str, Any]]]:
    """The unfiltered candidate lists through LanceDB's async API on this thread's loop:
    the query is embedded first (on both cores when it is alone), then the vector and the
    full-text queries run at once on LanceDB's threads. Measured at 100k items: starting
    the full-text query before the embedding saves nothing on 2 cores, since both need
    the CPU (the embedding took 6.0 ms beside it instead of 3.6–4.7)."""
    vector = None
    if wanted.vector:
        with timed("embed"):
            vector = stores.embed(query)
    with timed("vector"):  # the wall time of both LanceDB queries, which run together
        found = await asyncio.gather(
            nearest(table, vector, limit=fetch, row_ids=row_ids) if vector is not None else _none(),
            _spanned_matching(table, terms, limit=fetch, row_ids=row_ids) if wanted.fts else _none())
    lists: dict[str, list[dict[str, Any]]] = {}
    if wanted.vector:
        lists["vector"] = found[0]
    if wanted.graph:
        with timed("graph"):
            lists["graph"] = stores.graph.search(terms, view.namespace, stores.config, fetch)
    if wanted.fts:
        lists["fts"] = found[1]
    return lists


def _indexed(stores: Stores, index: ReadIndex, view: View, query: str, terms: str, fetch: int, wanted: _Wanted,
             mask: np.ndarray | None = None) -> dict[str, list[dict[str, Any]]]:
    """The candidate lists from the version's in-process indexes (``retrieval.read_index``):
    rows of the snapshot (``_row``) with their scores; only rows ``mask`` holds, when given."""
    ids, lists = stores.rows.ids, {}
    if wanted.vector:
        with timed("embed"):
            vector = stores.embed(query)
        with timed("vector"):
            rows, distances = index.nearest(vector, fetch, mask)
        lists["vector"] = [{"id": ids[r], "_row": r, "_distance": d} for r, d in zip(rows.tolist(), distances.tolist())]
    if wanted.graph:
        with timed("graph"):
            lists["graph"] = stores.graph.search(terms, view.namespace, stores.config, fetch)
    if wanted.fts:
        with timed("full-text"):
            rows, scores = index.matching(terms, fetch, mask)
        lists["fts"] = [{"id": ids[r], "_row": r, "_score": v} for r, v in zip(rows.tolist(), scores.tolist())]
    return lists


async def _none() -> list[dict[str, Any]]:
    return []


async def _spanned_matching(table: Any, terms: str, *, limit: int, row_ids: RowIds) -> list[dict[str, Any]]:
    with timed("full-text"):
        return await matching(table, terms, limit=limit, row_ids=row_ids)


def _attributes(stores: Stores, table: Any, lists: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """id → item row for every id in ``lists``: the snapshot, else LanceDB (``table``; None
    when the lists came from the read index, which holds the snapshot's rows only)."""
    ids = list(dict.fromkeys(r["id"] for rows in lists.values() for r in rows))
    attributes = stores.rows.rows(ids)
    missing = [r["_rowid"] for rows in lists.values() for r in rows if r["id"] not in attributes and "_rowid" in r]
    if missing and table is not None:
        fetched = table.take_row_ids(list(dict.fromkeys(missing))).select(_ATTRIBUTES).to_list()
        attributes.update({row["id"]: row for row in stores.rows.corrections.apply_all(fetched)})
    return attributes
