"""The published memory as retrieval reads it, opened once and kept warm (``Stores``), and
the context it is asked about (``Messages``, ``context_text``).

``retrieve`` and the candidate lists read through it; ``MemoryClient``, the service and
the evals each hold one per data root.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from retrieval.agent.dual_search import GraphIndex
from retrieval.agent.options import RetrievalOptions
from retrieval.agent.rewrite import CONTEXT_MESSAGES, LLMRewriter, SearchQuery, rewrite
from retrieval.agent.search import RowIds, async_table, run
from retrieval.agent.triggers import NegativeRules
from retrieval.config import MemoryConfig
from retrieval.embeddings import Embedder
from retrieval.llm import llm_configured
from retrieval.paths import DataRoot
from retrieval.published import PUBLISHED_TAG
from retrieval.store import ItemStore, PublishedRows

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
    """The published memory under a data root, opened once and kept warm: the LanceDB
    tables (looked up again after ``_REOPEN_SECONDS``, so a new publish shows), the
    Parquet snapshot, its row id → item id map, the embedding model and the last queries'
    vectors. Reading only."""

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

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = Embedder(self.config)
        return self._embedder

    def table(self, name: str = "items") -> Any | None:
        # A missing table (no summaries yet) is remembered too, so each call does not
        # look for it again. Every _REOPEN_SECONDS the published tag is read again, and
        # the table is opened anew only when it moved: a freshly opened table's first
        # vector query loads the index again (85 ms more at 100k items).
        opened_at, table = self._tables.get(name, (-_REOPEN_SECONDS - 1.0, None))
        if time.monotonic() - opened_at > _REOPEN_SECONDS:
            if name == "items":
                before = self.rows.key
                pointer = self.rows.refresh()  # the publish pointer, read first
                if pointer is None:
                    table = None
                elif table is None or pointer.version != table.version:
                    table = self.store.table(pointer=pointer)
                    if table is not None and table.count_rows() == 0:
                        table = None  # a version with no rows (every fact refused) has no index to search
                self.graph.refresh(pointer.graph_paths(self.paths) if pointer else None)
                if self.after_reload is not None and self.rows.key != before:
                    self.after_reload()
            elif table is None or _published_version(table) != table.version:
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
