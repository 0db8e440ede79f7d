"""The nightly bench's phases, each run in a process of its own, and what a Dagster run took.

``run_phase`` is one phase (``setup``, ``first``, ``nightly``); ``summarize_run`` reads a
run's steps from its event log and the pipeline's own spans inside each step.
"""

from __future__ import annotations

import contextlib
import json
import resource
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from evals.bench import BenchError, Progress
from evals.bench.nightly_facts import NIGHT, Batch, synthetic_batches, write_batch, write_events
from evals.bench.synthetic import BENCH_NOW
from evals.bench.synthetic_roots import MANIFEST, default_cache_dir
from retrieval.config import MemoryConfig
from retrieval.paths import DataRoot
from retrieval.spans import Recorder, recording, timed


# --- instrumentation --------------------------------------------------------------------

@contextlib.contextmanager
def patched(owner: Any, name: str, replacement: Any) -> Iterator[None]:
    """Set ``owner.name`` for the block (the first build's stand-in vectors); a method
    inherited by a class is deleted again after."""
    missing = object()
    original = owner.__dict__.get(name, missing) if isinstance(owner, type) else getattr(owner, name)
    setattr(owner, name, replacement)
    try:
        yield
    finally:
        if original is missing:
            delattr(owner, name)
        else:
            setattr(owner, name, original)


@contextlib.contextmanager
def first_build_vectors(embed: str, seed: int, cache_dir: Path | None, progress: Progress,
                        config: MemoryConfig) -> Iterator[dict[str, int]]:
    """During the first build, ``Embedder.embed`` returns random unit vectors (``random``) or
    looks texts up in the retrieval bench's cached model vectors before embedding (``model``)."""
    from retrieval.ids import content_hash
    from retrieval.embeddings import Embedder

    stats = {"embedded": 0, "precomputed": 0, "random": 0}
    original = Embedder.embed
    rng = np.random.default_rng(seed)
    known = precomputed_vectors(cache_dir, progress, config) if embed == "model" else {}

    def embed_random(self: Embedder, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        with timed("embed"):  # stands in for the spanned Embedder.embed
            dim = 384 if self.provider == "local" else 1536
            vectors = rng.standard_normal((len(texts), dim), dtype=np.float32)
            stats["random"] += len(texts)
            return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def embed_model(self: Embedder, texts: list[str]) -> np.ndarray:
        if not texts:
            return original(self, texts)
        hashes = [content_hash(t) for t in texts]
        missing = [t for t, h in zip(texts, hashes) if h not in known]
        fresh = iter(original(self, missing)) if missing else iter(())
        stats["embedded"] += len(missing)
        stats["precomputed"] += len(texts) - len(missing)
        return np.stack([known[h] if h in known else next(fresh) for h in hashes]).astype(np.float32)

    if embed != "random":
        with patched(Embedder, "embed", embed_model):
            yield stats
        return
    # Random unit vectors in 384 dimensions are never near duplicates (their cosine has a
    # standard deviation of 0.05; the merge threshold is 0.9), so the first build skips the
    # all-pairs comparison, which can find nothing and is quadratic (a million rows: hours).
    # Tonight's new rows are still compared with every row, as in the product.
    from memory_assets.lib.items import dedup

    compare_all = dedup.semantic_dedup

    def compare_none(items, vectors, **kwargs):
        if kwargs.get("candidates") is None:
            kwargs["candidates"] = np.zeros(0, dtype=int)
        return compare_all(items, vectors, **kwargs)

    with patched(Embedder, "embed", embed_random), patched(dedup, "semantic_dedup", compare_none):
        yield stats


def precomputed_vectors(cache_dir: Path | None, progress: Progress, config: MemoryConfig) -> dict[str, np.ndarray]:
    """content hash → vector from the largest retrieval bench root embedded with ``config``'s model."""
    from retrieval.embeddings import Embedder
    from retrieval.store import ItemStore

    model_id = Embedder(config).model_id
    folder = Path(cache_dir or default_cache_dir())
    best: tuple[int, Path] | None = None
    for manifest in folder.glob(f"*/{MANIFEST}") if folder.exists() else []:
        try:
            built = json.loads(manifest.read_text())
        except (OSError, ValueError):
            continue
        if built.get("embed") == "model" and built.get("embedding_model") == model_id:
            if best is None or built.get("items", 0) > best[0]:
                best = (int(built.get("items", 0)), manifest.parent)
    if best is None:
        return {}
    progress(f"looking up model vectors in {best[1]} ({best[0]:,} texts)")
    return ItemStore(DataRoot.resolve(best[1])).vectors_by_hash()


# --- reading a run ----------------------------------------------------------------------

def _step_windows(instance: Any, run_id: str) -> dict[str, tuple[float, float, bool]]:
    """step key → (start, end, succeeded), from the run's event log."""
    import dagster as dg

    types = {dg.DagsterEventType.STEP_START, dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE}
    windows: dict[str, list[Any]] = {}
    for entry in instance.all_logs(run_id, of_type=types):
        event = entry.dagster_event
        if event is None or not entry.step_key:
            continue
        window = windows.setdefault(entry.step_key, [entry.timestamp, entry.timestamp, False])
        if event.event_type == dg.DagsterEventType.STEP_START:
            window[0] = entry.timestamp
        else:
            window[1] = entry.timestamp
            window[2] = event.event_type == dg.DagsterEventType.STEP_SUCCESS
    return {k: (v[0], v[1], v[2]) for k, v in sorted(windows.items(), key=lambda kv: kv[1][0])}


def _materializations(instance: Any, run_id: str) -> dict[str, dict[str, Any]]:
    """asset key → its materialization metadata (plain values) in the run."""
    import dagster as dg

    out: dict[str, dict[str, Any]] = {}
    for entry in instance.all_logs(run_id, of_type={dg.DagsterEventType.ASSET_MATERIALIZATION}):
        mat = entry.dagster_event.event_specific_data.materialization
        out[mat.asset_key.to_user_string()] = {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
    return out


def _round(value: float) -> float:
    return round(value, 2)


def summarize_run(instance: Any, run_id: str, timings: Recorder, wall: float, cpu: float) -> dict[str, Any]:
    """Steps (from the event log) and the timed functions inside each one."""
    windows = _step_windows(instance, run_id)
    steps = {key: _round(end - start) for key, (start, end, _ok) in windows.items()}
    parts: dict[str, dict[str, dict[str, float]]] = {}
    for label, start, seconds, cpu_seconds in timings.calls:
        step = next((k for k, (s, e, _ok) in windows.items() if s <= start <= e), "outside steps")
        entry = parts.setdefault(step, {}).setdefault(label, {"seconds": 0.0, "cpu_seconds": 0.0, "calls": 0})
        entry["seconds"] += seconds
        entry["cpu_seconds"] += cpu_seconds
        entry["calls"] += 1
    for labels in parts.values():
        for entry in labels.values():
            entry["seconds"], entry["cpu_seconds"] = _round(entry["seconds"]), _round(entry["cpu_seconds"])
    metadata = _materializations(instance, run_id)
    items_meta = metadata.get("memory_items", {})
    return {
        "seconds": _round(wall), "cpu_seconds": _round(cpu),
        "steps": steps, "steps_failed": [k for k, (_s, _e, ok) in windows.items() if not ok],
        "outside_steps_seconds": _round(wall - sum(steps.values())),
        "parts": parts,
        "items": items_meta.get("items"), "active_items": items_meta.get("active_items"),
        "facts_in": items_meta.get("facts_in"), "merged": items_meta.get("merged"),
        "superseded": items_meta.get("superseded"), "embedded": items_meta.get("embedded"),
        "vectors_reused": items_meta.get("vectors_reused"), "events_folded": items_meta.get("events_folded"),
        "lifecycle": items_meta.get("lifecycle"),
        "summaries_updated": metadata.get("category_summaries", {}).get("updated"),
        "run_id": run_id,
    }


# --- the phases -------------------------------------------------------------------------

def _first_build(paths: DataRoot, instance: Any) -> tuple[bool, str]:
    """The nightly selection, from nothing, as of BENCH_NOW (everything is new)."""
    import dagster as dg

    from memory_assets.defs.scheduled_jobs import SELECTIONS, run_config
    from memory_assets.cli.runner import QUIET, bound_definitions

    assets, resources = bound_definitions(str(paths.root), "offline")
    config = run_config("nightly", BENCH_NOW)
    result = dg.materialize(assets, selection=SELECTIONS["nightly"], instance=instance, resources=resources,
                            partition_key=BENCH_NOW.date().isoformat(),
                            raise_on_error=False, run_config={**QUIET, **config},
                            tags={"memory/trigger": "bench", "memory/job": "first-build"})
    return result.success, result.run_id


def _last_run_id(instance: Any, job: str) -> str:
    import dagster as dg

    runs = instance.get_runs(filters=dg.RunsFilter(tags={"memory/job": job}), limit=1)
    if not runs:
        raise BenchError(f"no {job} run recorded")
    return runs[0].run_id


def _published_version(paths: DataRoot) -> int | None:
    from retrieval.store import ItemStore

    return ItemStore(paths).published_version()


def _instance(work: Path):
    """The phases' one Dagster instance (its storage under ``work``)."""
    import dagster as dg

    (work / "dagster").mkdir(parents=True, exist_ok=True)
    return dg.instance_for_test(temp_dir=str(work / "dagster"))


def _peak_rss_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def run_phase(name: str, args: dict[str, Any], config: MemoryConfig) -> dict[str, Any]:
    """One phase of ``nightly.run_bench``, in this process: ``setup`` generates the facts and
    writes the first build's (tonight's wait under the work folder), ``first`` runs the
    first build, ``nightly`` writes tonight's facts and events and runs the nightly job."""
    from memory_assets.lib.items import publish
    from memory_assets.cli.runner import run_job

    paths, work = DataRoot.resolve(args["root"]), Path(args["work"])
    if name == "setup":
        started = time.perf_counter()
        first, tonight = synthetic_batches(args["items"], config=config, new_share=args["new_share"],
                                           seed=args["seed"])
        sessions = write_batch(paths, first)
        tonight.facts.write_parquet(work / "tonight-facts.parquet")
        tonight.resources.write_parquet(work / "tonight-resources.parquet")
        return {"setup_seconds": _round(time.perf_counter() - started), "setup_peak_rss_mib": _peak_rss_mib(),
                "first_facts": {"facts": first.facts.height, "sessions": sessions, "restated": first.repeats,
                                "supersedes_hints": first.hints},
                "nightly_input": {"new_facts": tonight.facts.height, "new_sessions": tonight.sessions,
                                  "restated": tonight.repeats, "supersedes_hints": tonight.hints}}
    timings = Recorder()
    with _instance(work) as instance:
        if name == "first":
            cache_dir = Path(args["cache_dir"]) if args.get("cache_dir") else None
            with first_build_vectors(args["embed"], args["seed"], cache_dir, lambda m: None, config) as vectors, \
                    recording(timings):
                start, start_cpu = time.perf_counter(), time.process_time()
                ok, run_id = _first_build(paths, instance)
                wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
            return {"success": ok, **summarize_run(instance, run_id, timings, wall, cpu), "vectors": vectors,
                    "published_version": _published_version(paths), "peak_rss_mib": _peak_rss_mib()}
        tonight = Batch(pl.read_parquet(work / "tonight-facts.parquet"), pl.read_parquet(work / "tonight-resources.parquet"))
        write_batch(paths, tonight)
        events = write_events(paths, args["events"], seed=args["seed"], start=BENCH_NOW + timedelta(minutes=30),
                              end=NIGHT - timedelta(minutes=30), config=config)
        previous = publish.current(paths)
        with recording(timings):
            start, start_cpu = time.perf_counter(), time.process_time()
            ok = run_job(paths, "nightly", now=NIGHT, extractor="offline", instance=instance)
            wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
        run_id = _last_run_id(instance, "nightly")
        current = publish.current(paths)
        return {"success": ok, **summarize_run(instance, run_id, timings, wall, cpu), "events": events,
                "previous_version": previous.version if previous else None,
                "published_version": current.version if current else None,
                "published_new_version": bool(current and previous and current.version != previous.version),
                # The whole process: tonight's files and events are written before the run, and
                # are small beside it.
                "peak_rss_mib": _peak_rss_mib()}
