"""Hybrid search over the published items: vector + BM25 full-text, fused.

Relative score fusion: each list's scores (cosine similarity, BM25) are min-max
normalized within the list and summed with weights, so "how much better" survives the
fusion. Reciprocal rank fusion (k=60) is kept for comparison: it only sees ranks, which
makes every top-50 row look almost equally relevant and lets other factors swamp it.
"""

from __future__ import annotations

import asyncio
import re
import threading
from dataclasses import dataclass, field
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

import numpy as np

RRF_K = 60
# Lance's full-text parser treats these as syntax; a query is plain words.
_FTS_UNSAFE = re.compile(r"[^\w\s'-]+", re.UNICODE)


@dataclass
class Hit:
    """One item found, with how it was found."""

    id: str
    content: str
    category: str
    importance: float
    confidence: float
    source_trust: str
    session_id: str
    source_resource_ids: list[str]
    source_turn_ids: list[str]
    relevance: float
    score: float
    row: dict[str, Any] = field(repr=False, default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "content": self.content, "category": self.category,
            "importance": self.importance, "confidence": self.confidence,
            "source_trust": self.source_trust, "session_id": self.session_id,
            "source_resource_ids": self.source_resource_ids, "source_turn_ids": self.source_turn_ids,
            "relevance": round(self.relevance, 6), "score": round(self.score, 6),
        }


def fts_query(text: str) -> str:
    return " ".join(_FTS_UNSAFE.sub(" ", text).split())


def lance_query(table: Any, what: np.ndarray | str | None = None) -> Any:
    """A LanceDB query on ``table``: nearest to a vector (the ``vector`` column), full-text
    for a string, a plain scan for None. What ``table.search`` builds, less its schema
    lookup (a round trip to LanceDB's event loop, 1.5–2 ms of an inject): the columns are
    known here."""
    from lancedb.query import LanceQueryBuilder

    if what is None:
        return LanceQueryBuilder.create(table, None, "auto", vector_column_name="vector")
    kind = "fts" if isinstance(what, str) else "vector"
    return LanceQueryBuilder.create(table, what, kind, vector_column_name="vector")


def vector_list(table: Any, vector: np.ndarray, *, limit: int, where: str | None) -> list[dict[str, Any]]:
    """The ``limit`` nearest rows by cosine: ``id``, ``_rowid``, ``_distance``; ``where``
    filters inside LanceDB before ranking (None: unfiltered)."""
    q = lance_query(table, vector).distance_type("cosine").limit(limit)
    q = q.select(["id", "_distance"]).with_row_id(True)
    if where:
        q = q.where(where, prefilter=True)
    return q.to_list()


def fts_list(table: Any, query: str, *, limit: int, where: str | None) -> list[dict[str, Any]]:
    """The ``limit`` best BM25 rows for ``query``'s words: ``id``, ``_rowid``, ``_score``;
    [] without words. ``where`` as for ``vector_list``."""
    text = fts_query(query)
    if not text:
        return []
    q = lance_query(table, text).limit(limit).select(["id", "_score"]).with_row_id(True)
    if where:
        q = q.where(where, prefilter=True)
    return q.to_list()


def vectors_for(table: Any, row_ids: Sequence[int | None], ids: Sequence[str]) -> np.ndarray:
    """The stored vectors of rows ``row_ids`` (whose ids are ``ids``), in that order. A row
    without a row id (the graph list names items by id only) is read by its id."""
    found: dict[str, Any] = {}
    known = [r for r in row_ids if r is not None]
    if known:
        by_row = run(taken_vectors(async_table(table), known))
        found.update((i, by_row[r]) for r, i in zip(row_ids, ids) if r is not None and r in by_row)
    unknown = [i for r, i in zip(row_ids, ids) if r is None and i not in found]
    if unknown:
        quoted = ", ".join("'" + i.replace("'", "''") + "'" for i in dict.fromkeys(unknown))
        arrow = (lance_query(table).where(f"id IN ({quoted})", prefilter=True).select(["id", "vector"])
                 .limit(len(unknown)).to_arrow())
        found.update(zip(arrow.column("id").to_pylist(), arrow.column("vector").to_pylist()))
    return np.asarray([found[i] for i in ids], dtype=np.float32)


# --- reading through LanceDB's async API -----------------------------------------------
#
# LanceDB's synchronous API runs each query on its own background event loop and waits
# for it from the calling thread: on this 2-core machine that hand-off costs 2–2.5 ms a
# query, as much as the HNSW search. The read path instead runs LanceDB's coroutines on
# an event loop of the calling thread (one per thread, kept), and asks for row ids and
# scores only: reading the ``id`` column of 100 rows back from the Lance files is
# another 2.4 ms, so ids come from a row id → id map read once per table version.

T = TypeVar("T")
_LOOPS = threading.local()


def run(coro: Awaitable[T]) -> T:
    """Run ``coro`` to its end on this thread's own event loop; from inside a running loop
    (which cannot be re-entered), on LanceDB's background loop as its sync API does."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        loop = getattr(_LOOPS, "loop", None)
        if loop is None or loop.is_closed():
            loop = _LOOPS.loop = asyncio.new_event_loop()
        return loop.run_until_complete(coro)
    from lancedb.background_loop import LOOP

    return LOOP.run(coro)


def async_table(table: Any) -> Any:
    """The ``AsyncTable`` a sync LanceDB table wraps: the same open table at the same
    version, so one index cache (LanceDB 0.40, as pinned, keeps it as ``_table``)."""
    from lancedb.table import AsyncTable

    inner = getattr(table, "_table", None)
    if not isinstance(inner, AsyncTable):
        raise TypeError(f"{type(table).__name__} wraps no lancedb AsyncTable: another LanceDB than the pinned one?")
    return inner


class RowIds:
    """The ``id`` of every row id of one table version, sorted by row id (numpy and Arrow
    arrays: 12 bytes and the id's own bytes a row, no Python object per row)."""

    def __init__(self, row_ids: np.ndarray, ids: Any):
        self.row_ids, self.ids = row_ids, ids

    @classmethod
    async def read(cls, table: Any) -> RowIds:
        import pyarrow as pa
        import pyarrow.compute as pc

        arrow = await table.query().select(["id"]).with_row_id().to_arrow()
        order = pc.sort_indices(arrow.column("_rowid"))
        row_ids = np.asarray(arrow.column("_rowid").take(order).to_numpy(), dtype=np.uint64)
        ids = pa.concat_arrays(arrow.column("id").take(order).chunks) if arrow.num_rows else pa.array([], pa.string())
        return cls(row_ids, ids)

    def lookup(self, row_ids: Sequence[int]) -> list[str | None]:
        """The id of each of ``row_ids`` (None for a row id this version does not hold)."""
        if not len(row_ids):
            return []
        wanted = np.asarray(row_ids, dtype=np.uint64)
        at = np.searchsorted(self.row_ids, wanted)
        at_clipped = np.minimum(at, max(len(self.row_ids) - 1, 0))
        hit = (at < len(self.row_ids)) & (self.row_ids[at_clipped] == wanted) if len(self.row_ids) else \
            np.zeros(len(wanted), dtype=bool)
        ids = self.ids.take(at_clipped[hit]).to_pylist() if hit.any() else []
        out: list[str | None] = [None] * len(wanted)
        for position, item_id in zip(np.flatnonzero(hit), ids):
            out[position] = item_id
        return out


async def _named(table: Any, rows: Any, score: str, row_ids: RowIds) -> list[dict[str, Any]]:
    """``rows`` (``_rowid`` and ``score`` columns, best first) as the sync lists are:
    ``id``, ``_rowid`` and the score; an id the map lacks is read from the table."""
    rowid = rows.column("_rowid").to_pylist()
    values = rows.column(score).to_pylist()
    ids = row_ids.lookup(rowid)
    missing = [r for r, i in zip(rowid, ids) if i is None]
    if missing:  # not expected for the version the map was read from; read, never guess
        fetched = await table.take_row_ids(missing).select(["id"]).with_row_id().to_arrow()
        found = dict(zip(fetched.column("_rowid").to_pylist(), fetched.column("id").to_pylist()))
        ids = [found.get(r) if i is None else i for r, i in zip(rowid, ids)]
    return [{"id": i, "_rowid": r, score: v} for i, r, v in zip(ids, rowid, values) if i is not None]


async def nearest(table: Any, vector: np.ndarray, *, limit: int, row_ids: RowIds) -> list[dict[str, Any]]:
    """``vector_list`` unfiltered, through the async ``table``."""
    rows = await (table.query().nearest_to(np.asarray(vector, dtype=np.float32)).distance_type("cosine")
                  .limit(limit).select(["_distance"]).with_row_id().to_arrow())
    return await _named(table, rows, "_distance", row_ids)


async def matching(table: Any, query: str, *, limit: int, row_ids: RowIds) -> list[dict[str, Any]]:
    """``fts_list`` unfiltered, through the async ``table``."""
    text = fts_query(query)
    if not text:
        return []
    rows = await table.query().nearest_to_text(text).limit(limit).select(["_score"]).with_row_id().to_arrow()
    return await _named(table, rows, "_score", row_ids)


async def taken_vectors(table: Any, row_ids: Sequence[int]) -> dict[int, np.ndarray]:
    """row id → stored vector, through the async ``table``."""
    if not row_ids:
        return {}
    arrow = await table.take_row_ids(list(dict.fromkeys(row_ids))).select(["vector"]).with_row_id().to_arrow()
    return dict(zip(arrow.column("_rowid").to_pylist(),
                    np.asarray(arrow.column("vector").to_pylist(), dtype=np.float32)))


def _raw_score(name: str, row: dict[str, Any]) -> float:
    if name == "vector":
        return 1.0 - float(row.get("_distance", 1.0))  # cosine distance -> similarity
    if name == "graph":
        return float(row.get("_graph", 0.0))  # the walk's score (retrieval.agent.dual_search)
    return float(row.get("_score", 0.0))


def fuse(lists: dict[str, list[dict[str, Any]]], weights: dict[str, float] | None = None) -> list[tuple[dict[str, Any], float]]:
    """Relative score fusion: Σ weight × (score − min) / (max − min) per list, best first.

    A row missing from a list gets 0 from it. A single list's best row scores its weight.
    """
    scores: dict[str, float] = {}
    rows: dict[str, dict[str, Any]] = {}
    for name, hits in lists.items():
        if not hits:
            continue
        w = (weights or {}).get(name, 1.0)
        raw = [_raw_score(name, row) for row in hits]
        low, high = min(raw), max(raw)
        span = high - low
        for row, value in zip(hits, raw):
            norm = (value - low) / span if span > 0 else 1.0
            scores[row["id"]] = scores.get(row["id"], 0.0) + w * norm
            rows.setdefault(row["id"], row)
    order = sorted(scores, key=lambda i: -scores[i])
    return [(rows[i], scores[i]) for i in order]


def fuse_rrf(lists: dict[str, list[dict[str, Any]]], weights: dict[str, float] | None = None) -> list[tuple[dict[str, Any], float]]:
    """Reciprocal rank fusion: each list adds weight / (60 + rank) to every row it holds."""
    scores: dict[str, float] = {}
    rows: dict[str, dict[str, Any]] = {}
    for name, hits in lists.items():
        w = (weights or {}).get(name, 1.0)
        for rank, row in enumerate(hits, start=1):
            scores[row["id"]] = scores.get(row["id"], 0.0) + w / (RRF_K + rank)
            rows.setdefault(row["id"], row)
    order = sorted(scores, key=lambda i: -scores[i])
    return [(rows[i], scores[i]) for i in order]


def to_hit(row: dict[str, Any], relevance: float, score: float) -> Hit:
    return Hit(
        id=row["id"], content=row["content"], category=row["category"],
        importance=float(row["importance"]), confidence=float(row["confidence"]),
        source_trust=row["source_trust"], session_id=row["session_id"],
        source_resource_ids=list(row.get("source_resource_ids") or []),
        source_turn_ids=list(row.get("source_turn_ids") or []),
        relevance=relevance, score=score, row=row,
    )
