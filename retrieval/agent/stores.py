"""The published memory as retrieval reads it, opened once and kept warm (``Stores``), and
the context it is asked about (``Messages``, ``context_text``).

``retrieve`` and the candidate lists read through it; ``MemoryClient``, the service and
the evals each hold one per data root.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from retrieval.agent.dual_search import GraphIndex
from retrieval.agent.options import RetrievalOptions
from retrieval.agent.rewrite import CONTEXT_MESSAGES, LLMRewriter, SearchQuery, rewrite
from retrieval.agent.search import RowIds, async_table, run
from retrieval.agent.triggers import NegativeRules
from retrieval.config import MemoryConfig
from retrieval.embeddings import Embedder
from retrieval.llm import llm_configured
from retrieval.paths import DataRoot
from retrieval.published import PUBLISHED_TAG, Pointer, side_file
from retrieval.read_index import IndexUnusable, ReadIndex, local_copy
from retrieval.store import ItemStore, PublishedRows, SideTable

log = logging.getLogger(__name__)

Messages = Sequence[Mapping[str, Any]]
_REOPEN_SECONDS = 5.0  # how stale the cached table may get before a new publish is picked up


def context_text(context: str | Messages, last: int = CONTEXT_MESSAGES) -> str:
    """The text of the last ``last`` messages (or the plain text)."""
    if isinstance(context, str):
        return context
    return "\n".join(str(m.get("content", "")) for m in list(context)[-last:])


def _published_version(table: Any) -> int | None:
    """The version a side table's published tag points at now (it moves when a run
    publishes), as the storage says, not as this open table remembers; None when it
    cannot be read."""
    try:
        return int(table.tags.list()[PUBLISHED_TAG]["version"])
    except Exception:  # the table was replaced or its tags are unreadable: open it anew
        return None


class Stores:
    """The published memory under a data root, opened once and kept warm: the publish
    pointer (read again after ``_REOPEN_SECONDS``, so a new publish shows), the Parquet
    snapshot, the graph, the version's in-process read indexes, the LanceDB tables (opened
    only when asked: the fallback and the filtered path), the embedding model and the
    last queries' vectors. Reading only."""

    def __init__(self, paths: DataRoot, config: MemoryConfig):
        self.paths, self.config = paths, config
        self.store = ItemStore(paths)
        self.rows = PublishedRows(paths, config.tier_for)
        self.graph = GraphIndex()
        self.negatives = NegativeRules()
        self.rewriter: LLMRewriter | None = None
        self._embedder: Embedder | None = None
        self._tables: dict[str, tuple[float, Any]] = {}
        # Called after a new published snapshot was loaded (the service freezes the garbage
        # collector's view of it: a full collection over 600k objects stalls for 0.3–1 s).
        self.after_reload: Callable[[], None] | None = None
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()  # query → vector, least recent first
        self._vectors_lock = threading.Lock()
        self._row_ids: tuple[Any, RowIds] | None = None  # (the items table it maps, the map)
        self._row_ids_lock = threading.Lock()
        self._pointer: Pointer | None = None
        self._checked_at = -_REOPEN_SECONDS - 1.0
        self._index: tuple[Any, ReadIndex | None] | None = None  # (the version it is of, its indexes)
        self._index_lock = threading.Lock()
        self._sides: dict[str, tuple[float, Any, SideTable | None]] = {}  # name → (read at, version, table)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = Embedder(self.config)
        return self._embedder

    def current(self) -> Pointer | None:
        """The published version (None before the first publish), its snapshot and graph
        loaded: the pointer is read again every ``_REOPEN_SECONDS``, and on a disk whenever
        it changed (one stat a call: a run's publish is searched from the next call)."""
        stale = time.monotonic() - self._checked_at > _REOPEN_SECONDS
        if not stale and self.paths.is_local:
            stale = self.rows.pointer.get() is not self._pointer
        if stale:
            before = self.rows.key
            pointer = self.rows.refresh()  # the publish pointer, read first
            self.graph.refresh(pointer.graph_paths(self.paths) if pointer else None)
            self._pointer, self._checked_at = pointer, time.monotonic()
            if self.after_reload is not None and self.rows.key != before:
                self.after_reload()
        return self._pointer

    def searchable(self) -> bool:
        """A version with rows is published (a version with none, every fact refused, has
        nothing to search)."""
        if self.current() is None:
            return False
        return self.read_index() is not None or self.table() is not None

    def read_index(self) -> ReadIndex | None:
        """The published version's in-process indexes (``retrieval.read_index``), opened once
        per version (fetched into this machine's cache from an object store); None when the
        version has none (written before them, or rewritten by an erasure) or they do not
        answer for its snapshot and the configured model: LanceDB answers then."""
        pointer = self.current()
        key = None if pointer is None else (pointer.generation, pointer.index, self.rows.key)
        held = self._index
        if held is not None and held[0] == key:
            return held[1]
        with self._index_lock:
            held = self._index
            if held is None or held[0] != key:
                held = self._index = (key, self._open_index(pointer))
        return held[1]

    def _open_index(self, pointer: Pointer | None) -> ReadIndex | None:
        folder = pointer.index_path(self.paths) if pointer is not None else None
        frame = self.rows.frame
        if folder is None or frame is None or not frame.height:
            return None
        try:
            local = local_copy(folder, self.paths.local / "read-indexes")
            return ReadIndex.open(local, ids=self.rows.ids, model=self.embedder.model_id)
        except (IndexUnusable, OSError) as err:
            log.warning("searching through LanceDB: the read index of version %s is unusable: %s",
                        pointer.version, err)  # type: ignore[union-attr]
            return None

    def side(self, name: str) -> SideTable | None:
        """A side table (``summaries``, ``insights``) as last published, held in memory: from
        its Parquet copy (no LanceDB), else its LanceDB table; None when it has never been
        published. Looked up again every ``_REOPEN_SECONDS``, reloaded when it changed."""
        read_at, key, held = self._sides.get(name, (-_REOPEN_SECONDS - 1.0, None, None))
        if time.monotonic() - read_at <= _REOPEN_SECONDS:
            return held
        file = side_file(self.paths, name)
        fresh: SideTable | None = None
        try:
            if file is not None:
                fresh = held if key == str(file) else SideTable.of(pl.read_parquet(str(file)))
                key = str(file)
        except FileNotFoundError:  # dropped since the pointer was read
            file = None
        if file is None:
            # Published before the copies existed, or never: only a table on the store asks LanceDB.
            table = self.table(name) if (self.paths.lancedb / f"{name}.lance").exists() else None
            version = None if table is None else ("lancedb", table.version)
            fresh = held if version is not None and key == version else (
                None if table is None else SideTable.of(pl.from_arrow(table.to_arrow())))
            key = version
        self._sides[name] = (time.monotonic(), key, fresh)
        return fresh

    def table(self, name: str = "items") -> Any | None:
        """A LanceDB table as published (``items`` at the pointer's version, a side table at
        its tag), or None: opened when first asked and again when a publish moved it. A
        freshly opened table's first vector query loads its index again (85 ms at 100k
        items), so an unchanged one is kept."""
        opened_at, table = self._tables.get(name, (-_REOPEN_SECONDS - 1.0, None))
        if name == "items":
            pointer = self.current()
            if pointer is None:
                table = None
            elif table is None or pointer.version != table.version:
                table = self.store.table(pointer=pointer)
                if table is not None and table.count_rows() == 0:
                    table = None  # a version with no rows (every fact refused) has no index to search
            self._tables[name] = (time.monotonic(), table)
        elif time.monotonic() - opened_at > _REOPEN_SECONDS:
            # A missing table (no summaries yet) is remembered too, so each call does not look
            # for it again; its published tag is read again every _REOPEN_SECONDS.
            if table is None or _published_version(table) != table.version:
                table = self.store.summaries_table()
            self._tables[name] = (time.monotonic(), table)
        return table

    def row_ids(self, table: Any) -> RowIds:
        """The row id → item id map of ``table`` (the open items table), read once per
        table version (0.1 s at 100k items), under a lock: one thread reads it."""
        held = self._row_ids
        if held is not None and held[0] is table:
            return held[1]
        with self._row_ids_lock:
            held = self._row_ids
            if held is None or held[0] is not table:
                held = self._row_ids = (table, run(RowIds.read(async_table(table))))
        return held[1]

    def embed(self, text: str) -> np.ndarray:
        """The query's vector; tier 1 and tier 2 share one embedding of the same query, and
        a query asked again (an agent retrying, or re-injecting the same context) is not
        embedded again while it is among the last ``[embedding] query_cache``."""
        with self._vectors_lock:
            vector = self._vectors.get(text)
            if vector is not None:
                self._vectors.move_to_end(text)
                return vector
        vector = self.embedder.embed_one(text)  # outside the lock: other threads go on meanwhile
        with self._vectors_lock:
            self._vectors[text] = vector
            while len(self._vectors) > int(self.config.embedding.query_cache):
                self._vectors.popitem(last=False)
        return vector

    def forget_queries(self) -> None:
        """Drop the cached query vectors (a benchmark times a query as asked the first time)."""
        with self._vectors_lock:
            self._vectors.clear()

    def query(self, context: str | Messages, options: RetrievalOptions, budget_aware: bool) -> SearchQuery:
        """The search query for ``context`` (the LLM rewrite when configured and affordable)."""
        if not options.rewrite:
            raw = context_text(context)
            return SearchQuery(raw, raw)
        if self.config.llm_enabled and llm_configured() and not budget_aware and self.rewriter is None:
            self.rewriter = LLMRewriter(self.config)
        return rewrite(context, header=self.config.injection.header, llm=None if budget_aware else self.rewriter)
