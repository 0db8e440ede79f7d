"""``memory bench retrieval --study``: vector index types, full-text search and table-open cost."""

from __future__ import annotations

import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evals.bench import Progress
from evals.bench.synthetic import query_text, synthetic_queries
from evals.bench.synthetic_roots import cached_root, default_cache_dir
from evals.bench.timing import machine, time_calls
from retrieval.config import MemoryConfig
from retrieval.embeddings import Embedder
from retrieval.paths import DataRoot

ACTIVE = "status = 'active'"
# (index type, query parameter sets) tried by the study; {} is LanceDB's defaults.
INDEX_GRID: tuple[tuple[str, tuple[dict[str, int], ...]], ...] = (
    ("IVF_HNSW_SQ", ({}, {"nprobes": 5}, {"nprobes": 40}, {"ef": 100}, {"nprobes": 40, "ef": 100})),
    ("IVF_PQ", ({}, {"refine_factor": 5}, {"refine_factor": 10}, {"nprobes": 40, "refine_factor": 10})),
    ("IVF_FLAT", ({}, {"nprobes": 5}, {"nprobes": 40})),
)


def _vector_search(table: Any, vector: np.ndarray, *, limit: int = 10, where: str | None = ACTIVE,
                   columns: Sequence[str] = ("id",), bypass: bool = False, **params: int) -> list[dict[str, Any]]:
    q = table.search(vector, vector_column_name="vector").distance_type("cosine").limit(limit)
    if bypass:
        q = q.bypass_vector_index()
    for name, value in params.items():
        q = getattr(q, name)(value)
    if where:
        q = q.where(where, prefilter=True)
    return q.select(list(columns)).to_list()


def _fts_search(table: Any, text: str, *, limit: int = 50, where: str | None = ACTIVE,
                columns: Sequence[str] = ("id",)) -> list[dict[str, Any]]:
    from retrieval.agent.search import fts_query

    q = table.search(fts_query(text), query_type="fts").limit(limit)
    if where:
        q = q.where(where, prefilter=True)
    return q.select(list(columns)).to_list()


def index_study(n_items: int, *, config: MemoryConfig, queries: int = 100, seed: int = 0,
                embed: str = "model", cache_dir: Path | None = None, progress: Progress | None = None) -> dict[str, Any]:
    """Vector index types and parameters, full-text search and table-open cost, measured.

    Runs on a scratch copy of the cached root's published items table (the root itself is
    not touched). Every vector case has the production prefilter ``status = 'active'`` and
    reports recall@10 against exact cosine over the active items (numpy). Query vectors
    come from the real model; on an ``embed="random"`` root recall is meaningless.
    """
    import lancedb

    from retrieval.published import PUBLISHED_TAG
    from retrieval.store import ItemStore

    say = progress or (lambda _m: None)
    root, _ = cached_root(n_items, config=config, seed=seed, embed=embed, cache_dir=cache_dir, progress=progress)
    store = ItemStore(DataRoot.resolve(root))
    published = store.table()
    data = published.to_arrow()
    vectors = data.column("vector").combine_chunks().flatten().to_numpy().reshape(data.num_rows, -1)
    ids = np.asarray(data.column("id").to_pylist())
    active = np.asarray([s == "active" for s in data.column("status").to_pylist()])
    all_columns = [c for c in data.schema.names if c != "vector"]

    texts = [query_text(c) for c in synthetic_queries(queries, seed=seed + 1)]
    qvecs = Embedder(config).embed(texts)
    exact = np.where(active[None, :], qvecs @ vectors.T, -np.inf)
    truth = [set(ids[np.argsort(-row)[:10]]) for row in exact]
    report: dict[str, Any] = {"items": n_items, "queries": queries, "embedding": embed,
                              "vector_ms": {}, "index_build_seconds": {}, "fts_ms": {}, "open_ms": {},
                              "machine": machine(config)}

    def vector_case(table: Any, label: str, **kwargs: Any) -> None:
        stats, results = time_calls([lambda q=q: _vector_search(table, q, **kwargs) for q in qvecs])
        recall = float(np.mean([len(truth[i] & {r["id"] for r in rows[:10]}) / 10 for i, rows in enumerate(results)]))
        report["vector_ms"][label] = {**stats, "recall_at_10": round(recall, 3)}
        say(f"vector {label}: p50 {stats['p50']} ms, p95 {stats['p95']} ms, recall@10 {recall:.3f}")

    def fts_case(table: Any, label: str, **kwargs: Any) -> None:
        stats, _ = time_calls([lambda t=t: _fts_search(table, t, **kwargs) for t in texts])
        report["fts_ms"][label] = stats
        say(f"fts {label}: p50 {stats['p50']} ms, p95 {stats['p95']} ms")

    cache_dir = Path(cache_dir or default_cache_dir())
    with tempfile.TemporaryDirectory(dir=cache_dir, prefix=".study-") as scratch, warnings.catch_warnings():
        # create_index(metric=..., index_type=...) is deprecated in lancedb 0.40 but is
        # what publish.write_items calls; the study builds indexes the same way.
        warnings.simplefilter("ignore", DeprecationWarning)
        table = lancedb.connect(scratch).create_table("items", data=data)
        vector_case(table, "none (brute force)", bypass=True)
        vector_case(table, "none (brute force), all columns", bypass=True, columns=all_columns)
        for index_type, grid in INDEX_GRID:
            start = time.perf_counter()
            table.create_index(metric="cosine", vector_column_name="vector", index_type=index_type, replace=True)
            report["index_build_seconds"][index_type] = round(time.perf_counter() - start, 1)
            for params in grid:
                suffix = " ".join(f"{k}={v}" for k, v in params.items())
                vector_case(table, f"{index_type} {suffix}".strip(), **params)
            if index_type == "IVF_HNSW_SQ":
                # retrieval fetches 50 candidates per list; recall@10 counts the first 10.
                vector_case(table, "IVF_HNSW_SQ limit=50", limit=50)
                vector_case(table, "IVF_HNSW_SQ, no status filter", where=None)
                vector_case(table, "IVF_HNSW_SQ, all columns", columns=all_columns)

        fts_case(published, "published table")
        fts_case(published, "published table, no status filter", where=None)
        fts_case(published, "published table, limit 50, all columns", columns=all_columns)
        # What a scalar index on status buys the prefilter, for both searches.
        table.create_fts_index("content", replace=True, with_position=False)
        table.create_scalar_index("status", index_type="BITMAP")
        fts_case(table, "with BITMAP(status)")
        table.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_HNSW_SQ", replace=True)
        vector_case(table, "IVF_HNSW_SQ with BITMAP(status)")

    opens = [store.table for _ in range(30)]
    report["open_ms"]["ItemStore.table()"] = time_calls(opens, warm=2)[0]
    q0, t0 = qvecs[0], texts[0]

    def hybrid(table: Any) -> None:
        _vector_search(table, q0, limit=50, columns=all_columns)
        _fts_search(table, t0, columns=all_columns)

    session = lancedb.Session()

    def open_shared() -> Any:
        # What ItemStore.table() does, on a connection that shares one lancedb Session:
        # index and metadata caches survive reopening the table.
        table = lancedb.connect(str(store.paths.lancedb), session=session).open_table("items")
        table.checkout(PUBLISHED_TAG)
        return table

    report["open_ms"]["hybrid on a cached table"] = time_calls([lambda: hybrid(published)] * 30, warm=2)[0]
    report["open_ms"]["open + hybrid (no cache)"] = time_calls([lambda: hybrid(store.table())] * 30, warm=2)[0]
    report["open_ms"]["open, shared Session + hybrid"] = time_calls([lambda: hybrid(open_shared())] * 30, warm=2)[0]
    say(f"open: {report['open_ms']}")
    return report


def format_study(study: dict[str, Any]) -> str:
    lines = [f"index study, {study['items']:,} items, {study['queries']} queries (embedding: {study['embedding']})"]
    for section in ("vector_ms", "fts_ms", "open_ms"):
        for label, st in study[section].items():
            recall = f"   recall@10 {st['recall_at_10']:.3f}" if "recall_at_10" in st else ""
            lines.append(f"  {section[:-3]:<6} {label:<42} p50 {st['p50']:>7.2f} ms   p95 {st['p95']:>7.2f} ms{recall}")
    builds = ", ".join(f"{k} {v} s" for k, v in study["index_build_seconds"].items())
    lines.append(f"  index builds: {builds}")
    return "\n".join(lines)
