"""The benches' data roots: N synthetic items written through the pipeline's own write path.

``facts_to_items`` → ``Embedder`` → ``publish.write_items`` → ``publish.publish``: the same
full-text index, vector index and ``published`` tag as production, with the graph the
pipeline would publish. Each built root is cached by ``build_key`` (items, seed, embed,
generator version, the write path's code, the config that shapes the rows), so re-running
a bench reuses it; model vectors are kept apart and outlive the roots built from them.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import shutil
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from evals.bench import BenchError, Progress
from evals.bench.synthetic import BENCH_NOW, synthetic_items
from retrieval.config import MemoryConfig
from retrieval.embeddings import Embedder
from retrieval.paths import DataRoot

# Bump when the generator or the build changes, so cached roots are rebuilt.
GENERATOR_VERSION = "1"
EMBED_MODES = ("model", "random")
MANIFEST = "bench_build.json"
RANDOM_DIM = 384  # all-MiniLM-L6-v2's dimension


def default_cache_dir() -> Path:
    return Path(tempfile.gettempdir()) / "agent-memory-bench"


def build_key(n_items: int, *, config: MemoryConfig, seed: int = 0, embed: str = "model") -> dict[str, Any]:
    """Everything a built root depends on; a change to any part builds a new root.

    The write path's code is part of the key, so a change to ``publish.py`` (say, another
    vector index) is measured on a root built the new way, never on a stale one.
    """
    from memory_assets.lib.items import consolidation as items_lib
    from memory_assets.lib.items import graph as graph_lib
    from memory_assets.lib.items import publish
    from retrieval.schema import ITEM_SCHEMA

    # Only what shapes the stored rows; ranking and injection settings are read per query.
    shaping = {name: getattr(config, name, None) for name in
               ("categories", "importance", "confidence", "tiers", "pipeline", "embedding", "graph")}
    code = (inspect.getsource(publish) + inspect.getsource(items_lib.facts_to_items) + inspect.getsource(graph_lib)
            + repr(ITEM_SCHEMA))
    return {
        "items": n_items, "seed": seed, "embed": embed, "generator": GENERATOR_VERSION,
        "code_sha256": hashlib.sha256(code.encode()).hexdigest()[:16],
        "config_sha256": hashlib.sha256(json.dumps(shaping, sort_keys=True, default=repr).encode()).hexdigest()[:16],
    }


def root_dir(cache_dir: Path, key: dict[str, Any]) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:10]
    return Path(cache_dir) / f"items{key['items']}-seed{key['seed']}-{key['embed']}-{digest}"


def _random_vectors(n: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, RANDOM_DIM), dtype=np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _embed_texts(texts: list[str], embedder: Embedder, vectors_dir: Path | None,
                 progress: Progress | None) -> tuple[np.ndarray, str, float, bool]:
    """Vectors for ``texts`` from ``embedder``, the model id, the seconds
    embedding took and whether kept vectors were reused.

    With ``vectors_dir``, vectors are kept by a hash of the model id and the texts, so a
    rebuild after a code change to the write path does not embed 100k sentences again
    (the seconds returned are then those of the original embedding).
    """
    digest = hashlib.sha256("\n".join([embedder.model_id, *texts]).encode()).hexdigest()[:20]
    kept = Path(vectors_dir) / f"{digest}.npy" if vectors_dir else None
    if kept is not None and kept.exists():
        seconds = json.loads(kept.with_suffix(".json").read_text()).get("embed_seconds", 0.0) \
            if kept.with_suffix(".json").exists() else 0.0
        return np.load(kept), embedder.model_id, float(seconds), True
    chunk = 5_000
    parts = []
    started = time.perf_counter()
    for start in range(0, len(texts), chunk):
        parts.append(embedder.embed(texts[start:start + chunk]))
        if progress and len(texts) > chunk:
            done = min(start + chunk, len(texts))
            rate = done / (time.perf_counter() - started)
            progress(f"embedded {done:,}/{len(texts):,} items ({rate:.0f}/s)")
    vectors = np.concatenate(parts).astype(np.float32)
    seconds = round(time.perf_counter() - started, 1)
    if kept is not None:
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.with_suffix(".json").write_text(json.dumps({
            "model": embedder.model_id, "texts": len(texts), "embed_seconds": seconds,
            "load_avg_1m": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        }))
        tmp = kept.with_name(f".{kept.name}.{os.getpid()}.tmp.npy")
        np.save(tmp, vectors)
        os.replace(tmp, kept)
    return vectors, embedder.model_id, seconds, False


def build_synthetic_root(root: Path, n_items: int, *, config: MemoryConfig, seed: int = 0, embed: str = "model",
                         vectors_dir: Path | None = None, progress: Progress | None = None) -> Path:
    """Write a data root at ``root`` holding ``n_items`` synthetic items, published.

    Args:
        root: the data root to create (must not exist yet).
        n_items: how many items.
        config: the memory config the items are built, embedded and indexed with.
        seed: the generator's seed; the same seed gives the same items.
        embed: ``model`` (the configured embedder) or ``random`` (random unit vectors).
        vectors_dir: where model vectors are kept between builds (none: always embed).
        progress: called with a line of text as the build goes.
    Returns:
        ``root``, with ``bench_build.json`` describing the build.
    """
    from memory_assets.lib.items import publish
    from memory_assets.lib.items.graph import build_graph

    if embed not in EMBED_MODES:
        raise BenchError(f"embed={embed!r}; expected one of {', '.join(EMBED_MODES)}")
    if n_items < 1:
        raise BenchError(f"items={n_items}; need at least 1")
    root = Path(root)
    paths = DataRoot.resolve(root)
    started = time.perf_counter()
    items = synthetic_items(n_items, config=config, seed=seed)
    generated = time.perf_counter()
    if progress:
        progress(f"generated {n_items:,} items; embedding ({embed})")
    if embed == "model":
        vectors, model_id, embed_seconds, reused = _embed_texts(items["content"].to_list(), Embedder(config),
                                                                vectors_dir, progress)
    else:
        vectors, model_id, embed_seconds, reused = _random_vectors(n_items, seed), f"random:unit-{RANDOM_DIM}", 0.0, False
    items = items.with_columns(embedding_model=pl.lit(model_id))
    embedded = time.perf_counter()
    if progress:
        progress("writing and indexing (publish.write_items)")
    written = publish.write_items(paths, items, vectors, BENCH_NOW)
    # The graph, as the pipeline builds it with every version: dual search walks it.
    graph = build_graph(items, vectors, None, config, BENCH_NOW)
    entities, edges = publish.write_graph(paths, graph.entities, graph.edges, BENCH_NOW)
    written = publish.ItemsVersion(**{**written.__dict__, "entities": entities, "edges": edges})
    publish.publish(paths, written)
    done = time.perf_counter()
    manifest = {
        **build_key(n_items, config=config, seed=seed, embed=embed),
        "embedding_model": model_id, "active": int((items["status"] == "active").sum()),
        "untrusted": int((items["source_trust"] == "untrusted").sum()),
        "build_seconds": round(done - started, 1), "generate_seconds": round(generated - started, 1),
        # Kept vectors: embed_seconds is the original embedding's, not part of build_seconds.
        "embed_seconds": round(embed_seconds, 1), "vectors_reused": reused,
        "write_and_index_seconds": round(done - embedded, 1),
        "index": describe_indexes(root), "built_at": datetime.now(timezone.utc).isoformat(),
        "graph": graph.counts(),
    }
    (root / MANIFEST).write_text(json.dumps(manifest, indent=2))
    return root


def cached_root(n_items: int, *, config: MemoryConfig, seed: int = 0, embed: str = "model",
                cache_dir: Path | None = None, progress: Progress | None = None) -> tuple[Path, bool]:
    """The cached root for ``build_key(...)``, built on first use. Returns (root, reused).

    Built under a temporary name and renamed into place, so an interrupted build never
    leaves a half-built root that looks cached. Model vectors are kept in
    ``<cache_dir>/vectors`` and outlive the roots built from them.
    """
    cache_dir = Path(cache_dir or default_cache_dir())
    final = root_dir(cache_dir, build_key(n_items, config=config, seed=seed, embed=embed))
    if (final / MANIFEST).exists():
        return final, True
    cache_dir.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{final.name}-", dir=cache_dir))
    try:
        build_synthetic_root(building / "root", n_items, config=config, seed=seed, embed=embed,
                             vectors_dir=cache_dir / "vectors", progress=progress)
        if final.exists():
            shutil.rmtree(final)
        os.replace(building / "root", final)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return final, False


def describe_indexes(root: Path) -> str:
    """The published items table's indexes, e.g. ``IVF_HNSW_SQ(vector) + FTS(content)``."""
    from retrieval.store import ItemStore

    table = ItemStore(DataRoot.resolve(root)).table()
    if table is None:
        raise BenchError(f"{root}: nothing published")
    found = [f"{'FTS' if 'FTS' in str(i.index_type).upper() else i.index_type}({', '.join(i.columns)})"
             for i in table.list_indices()]
    if not any("vector" in f for f in found):
        found.insert(0, "brute force(vector)")
    return " + ".join(sorted(found, key=lambda f: "FTS" in f))

def upload_root(root: Path, bucket: str) -> str:
    """Copy a built data root into ``bucket`` (the environment names the store); its URI."""
    from memory_assets.lib import warehouse

    fs, target = warehouse.filesystem(f"s3://{bucket}/{root.name}")
    fs.put(str(root), target, recursive=True)
    return f"s3://{target}"
