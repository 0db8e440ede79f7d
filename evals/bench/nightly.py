"""How long the nightly job takes on N memory items: ``memory bench nightly --items N``.

A benchmark, not a test. It builds a data root the way production does — N extracted
facts spread over sessions of 20 (``warehouse/extracted_facts/<session>.parquet``, FACT_SCHEMA
rows that read like real ones, from ``bench_retrieval``'s generator) with the turns they
cite (``warehouse/resources/<session>/part-*.parquet``), about 2% of them a fact restated in
a later session and 1% carrying a ``supersedes`` hint — then times two real Dagster runs
of the nightly selection (``memory_items → checks → published_items → lessons_and_triggers →
category_summaries``):

* **first build** — every fact consolidated, embedded, checked and published from scratch
  (``dg.materialize`` of ``jobs.SELECTIONS["nightly"]``, as of ``BENCH_NOW``);
* **nightly** — the next night: ~1% new facts in new sessions (some restating or
  replacing older ones) and a few hundred feedback events in ``events/`` (injected,
  referenced, ignored, reinforce, demote, update, forget), then
  ``runner.run_job(paths, "nightly", now=…)`` exactly as ``memory run nightly`` calls it.
  This is the figure the issue's target is about (< 5 minutes at 100k on 2 cores).

Each run is reported per Dagster step (from the run's event log: step start → success)
and, inside the steps, per pipeline function (``consolidate`` and its exact dedup, event
fold, embedding, semantic dedup, supersession; ``lifecycle.apply`` and its contradiction
neighbours; ``write_items`` and its LanceDB write, full-text and vector index; the quality
suites; publish; lessons and triggers; summaries), timed by the spans the pipeline marks
itself (``retrieval.spans``: ``@spanned``/``timed``, no-ops unless a recorder is
installed; ``dg.materialize`` runs in-process, so this process's recorder sees them).
Wall and CPU seconds both: on a busy machine wall time waits for cores.

Embeddings for the first build (``--embed``):

* ``random`` — random unit vectors returned *as if* the configured model made them (same
  model id, same dimension), so the nightly run reuses them by content hash exactly as
  it reuses real ones. Seconds instead of minutes, but vector neighbours are
  meaningless: no semantic merge, supersession or contradiction fires among old items.
* ``model`` — the configured model; texts that ``memory bench retrieval --embed model``
  already embedded (its cached roots hold the same generator's sentences) are looked up
  by content hash instead of embedded again.

The nightly run always embeds its new texts with the real model (loading it is part of
the figure: a scheduled run is a fresh process).

    memory bench nightly --items 100000 [--embed random|model] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import resource
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from evals import stderr_progress
from evals.bench.retrieval import (
    BENCH_NOW, MANIFEST, BenchError, items_arg, default_cache_dir, machine, synthetic_items,
)
from retrieval.config import MemoryConfig, load_config
from retrieval.paths import DataRoot
from retrieval.spans import Recorder, recording, timed

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")

EMBED_MODES = ("random", "model")
# The first build runs as of BENCH_NOW; the nightly run at 02:00 the next night.
NIGHT = (BENCH_NOW + timedelta(days=1)).replace(hour=2, minute=0)
HISTORY_DAYS = 365          # first-build sessions are spread over the year before BENCH_NOW
FACTS_PER_SESSION = 20
REPEAT_SHARE = 0.02         # a fact restated in a later session (exact duplicate, confirms it)
HINT_SHARE = 0.01           # a fact that says it replaces an older one (supersedes hint)
NEW_REPEAT_SHARE = 0.05     # of tonight's new facts: restating an older fact
NEW_HINT_SHARE = 0.03       # of tonight's new facts: replacing an older one
TARGET_SECONDS = 300.0      # the issue: the nightly job on 100k items in under 5 minutes
EVENT_MIX = (("injected", 0.6), ("referenced", 0.14), ("ignored", 0.14), ("reinforce", 0.07),
             ("demote", 0.03), ("update", 0.01), ("forget", 0.01))
_HINT_WORD = re.compile(r"^[a-z][a-z'-]{3,}$")

Progress = Callable[[str], None]


# --- the data ---------------------------------------------------------------------------

@dataclass
class Batch:
    """Facts and the turns they cite, ready to be written one file per session."""

    facts: pl.DataFrame
    resources: pl.DataFrame
    repeats: int = 0
    hints: int = 0

    @property
    def sessions(self) -> int:
        return self.facts["source_session"].n_unique() if self.facts.height else 0


def _hint(content: str, rng: random.Random) -> str | None:
    """A word the older fact states as a common word (what a "no longer X" would name)."""
    from memory_assets.lib.items.supersession import hint_words

    tokens = content.split()
    words = [t.strip(".,'") for i, t in enumerate(tokens) if i > 0 and _HINT_WORD.match(t.strip(".,"))]
    words = [w for w in words if hint_words(w)]
    return rng.choice(words) if words else None


def _sessions(rows: list[dict[str, Any]], first: int, start: datetime, end: datetime, prefix: str,
              config: MemoryConfig) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Give ``rows`` (fact attributes) sessions, turns, timestamps, ids and resources."""
    from memory_assets.lib.ingest.turns import resource_id
    from memory_assets.lib.extraction.facts import fact_id

    namespace = config.pipeline.namespace
    n_sessions = max(1, -(-len(rows) // FACTS_PER_SESSION))
    span = (end - start) / n_sessions
    facts, resources = [], []
    ingested = end
    for index, row in enumerate(rows):
        s, position = divmod(index, FACTS_PER_SESSION)
        session = f"{prefix}{first + s:06d}"
        started = start + span * s
        user_at = started + timedelta(minutes=2 * position)
        untrusted = row["source_trust"] == "untrusted"
        user = {"session_id": session, "turn": 2 * position + 1, "role": "tool" if untrusted else "user",
                "speaker": "tool" if untrusted else "Dana", "ts": user_at.isoformat(),
                "content": f"[UNTRUSTED DATA]{row['content']}[/UNTRUSTED DATA]" if untrusted
                else f"Just so you know: {row['content']}."}
        reply = {"session_id": session, "turn": 2 * position + 2, "role": "assistant", "speaker": "assistant",
                 "ts": (user_at + timedelta(minutes=1)).isoformat(), "content": "Noted, I'll remember that."}
        for message in (user, reply):
            resources.append({
                "resource_id": resource_id(message), "session_id": session, "turn": message["turn"],
                "external_id": None, "role": message["role"], "speaker": message["speaker"],
                "content": message["content"], "content_at": datetime.fromisoformat(message["ts"]),
                "trust": "untrusted" if message["role"] == "tool" else "trusted", "source_format": "jsonl",
                "source_file": f"{session}.jsonl", "ingested_at": ingested,
            })
        facts.append({**row, "id": fact_id(namespace, session, row["content_hash"]), "source_session": session,
                      "source_resource_ids": [resources[-2]["resource_id"]],
                      "source_turn_ids": [f"{session}:{user['turn']}"], "created_at": user_at})
    return facts, resources


def _frames(facts: list[dict[str, Any]], resources: list[dict[str, Any]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    from memory_assets.lib.extraction.fields import with_fields
    from retrieval.schema import FACT_SCHEMA, RESOURCE_SCHEMA

    # The typed fields as extraction writes them (directive, remind_on), so the run never
    # takes the facts for ones written before the fields existed.
    return with_fields(pl.DataFrame(facts, schema=FACT_SCHEMA)), pl.DataFrame(resources, schema=RESOURCE_SCHEMA)


def synthetic_batches(n_facts: int, *, new_share: float = 0.01, seed: int = 0,
                      config: MemoryConfig | None = None) -> tuple[Batch, Batch]:
    """(the first build's facts, tonight's new facts), FACT_SCHEMA rows with their resources.

    The sentences come from ``bench_retrieval.synthetic_items`` (same seed, same texts, so
    its cached model vectors apply). First build: ``n_facts`` facts in sessions spread
    over the year before ``BENCH_NOW``, ``REPEAT_SHARE`` of them restating a fact of an
    earlier session and ``HINT_SHARE`` with a supersedes hint naming a word of an older
    fact in their category. Tonight: ``new_share × n_facts`` facts in new sessions dated
    between ``BENCH_NOW`` and ``NIGHT``, some restating or replacing older facts.
    """
    config = config or load_config()
    rng = random.Random(f"nightly-{seed}")
    n_new = max(1, round(n_facts * new_share)) if new_share > 0 else 0
    first_repeats = int(n_facts * REPEAT_SHARE) if n_facts >= 2 * FACTS_PER_SESSION else 0
    new_repeats = int(n_new * NEW_REPEAT_SHARE)
    n_distinct = n_facts + n_new  # enough even when no restatement fits
    keep = [c for c in ("content", "category", "kind", "memory_kind", "tags", "entities", "importance",
                        "confidence", "strength", "sentiment", "tier", "scope", "project", "namespace", "source_trust",
                        "provenance", "content_hash")]
    distinct = synthetic_items(n_distinct, seed=seed, config=config).select(keep).to_dicts()
    for row in distinct:
        row.update(supersedes_hint=None, prompt_version="bench", extractor="synthetic")
    pool = iter(distinct)

    def assemble(total: int, repeats: int, hint_share: float,
                 earlier: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int, int]:
        """``total`` rows in session order; a restated fact comes from an earlier session
        (``earlier``, or this batch's previous sessions), never twice in one session."""
        repeat_at = set(rng.sample(range(total), repeats)) if repeats else set()
        rows: list[dict[str, Any]] = []
        hints = restated = 0
        by_category: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in earlier:
            by_category[row["category"]].append(row)
        in_session: set[str] = set()
        for i in range(total):
            if i % FACTS_PER_SESSION == 0:
                in_session = set()
                if not earlier and i:  # the batch's previous session is now "earlier"
                    for r in rows[i - FACTS_PER_SESSION:i]:
                        by_category[r["category"]].append(r)
            source, limit = (earlier, len(earlier)) if earlier else (rows, i - i % FACTS_PER_SESSION)
            if i in repeat_at and limit:
                row = dict(source[rng.randrange(limit)])
                if row["content_hash"] not in in_session:
                    row["supersedes_hint"] = None
                    rows.append(row)
                    in_session.add(row["content_hash"])
                    restated += 1
                    continue
            row = dict(next(pool))
            older = by_category.get(row["category"])
            if older and rng.random() < hint_share and (word := _hint(rng.choice(older)["content"], rng)):
                row["supersedes_hint"] = word
                hints += 1
            rows.append(row)
            in_session.add(row["content_hash"])
        return rows, restated, hints

    first_rows, first_rep, first_hints = assemble(n_facts, first_repeats, HINT_SHARE, [])
    first_facts, first_res = _sessions(first_rows, 0, BENCH_NOW - timedelta(days=HISTORY_DAYS),
                                       BENCH_NOW - timedelta(hours=1), "bench-s", config)
    new_rows, new_rep, new_hints = assemble(n_new, new_repeats, NEW_HINT_SHARE, first_rows) if n_new else ([], 0, 0)
    new_facts, new_res = _sessions(new_rows, 0, BENCH_NOW + timedelta(hours=1), NIGHT - timedelta(hours=1),
                                   "bench-night-s", config) if new_rows else ([], [])
    return (Batch(*_frames(first_facts, first_res), repeats=first_rep, hints=first_hints),
            Batch(*_frames(new_facts, new_res), repeats=new_rep, hints=new_hints))


def write_batch(paths: DataRoot, batch: Batch) -> int:
    """One extracted-facts file and one resources part per session, as the pipeline writes them."""
    from memory_assets.lib import warehouse

    resources = batch.resources.partition_by("session_id", as_dict=True)
    for (session,), facts in batch.facts.partition_by("source_session", as_dict=True).items():
        warehouse.write_frame(paths.extracted_facts / f"{session}.parquet", facts)
        turns = resources[(session,)]
        digest = hashlib.sha256("".join(turns["resource_id"].to_list()).encode()).hexdigest()[:16]
        warehouse.write_frame(paths.resources / session / f"part-{digest}.parquet", turns)
    return len(resources)


def write_events(paths: DataRoot, n_events: int, *, seed: int, start: datetime, end: datetime) -> dict[str, int]:
    """``n_events`` feedback events on published items, as ``MemoryClient`` appends them."""
    from retrieval import events
    from retrieval.store import ItemStore

    items = ItemStore(paths).items().filter(pl.col("status") == "active").select("id", "content", "tags")
    if items.is_empty() or n_events <= 0:
        return {}
    rng = random.Random(f"events-{seed}")
    ids = items["id"].to_list()
    contents = dict(zip(ids, items["content"].to_list()))
    kinds, weights = zip(*EVENT_MIX)
    counts: dict[str, int] = defaultdict(int)
    for n in range(n_events):
        kind = rng.choices(kinds, weights)[0]
        ts = start + (end - start) * (n + 1) / (n_events + 1)
        session = f"agent-{n // 10:04d}"
        if kind == "injected":
            chosen = rng.sample(ids, min(len(ids), rng.randint(3, 10)))
        elif kind in ("referenced", "ignored"):
            chosen = rng.sample(ids, min(len(ids), rng.randint(1, 3)))
        else:
            chosen = [rng.choice(ids)]
        payload = None
        if kind == "update":
            payload = {"content": f"{contents[chosen[0]]} (corrected by the user)", "tags": None}
        events.record(paths.events, kind, chosen, ts, session_id=None if kind in ("reinforce", "demote", "update", "forget")
                      else session, payload=payload)
        counts[kind] += 1
    return dict(sorted(counts.items()))


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
def first_build_vectors(embed: str, seed: int, cache_dir: Path | None, progress: Progress) -> Iterator[dict[str, int]]:
    """During the first build, ``Embedder.embed`` returns random unit vectors (``random``) or
    looks texts up in ``bench_retrieval``'s cached model vectors before embedding (``model``)."""
    from memory_assets.lib.items.dedup import content_hash
    from retrieval.embeddings import Embedder

    stats = {"embedded": 0, "precomputed": 0, "random": 0}
    original = Embedder.embed
    rng = np.random.default_rng(seed)
    known = precomputed_vectors(cache_dir, progress) if embed == "model" else {}

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


def precomputed_vectors(cache_dir: Path | None, progress: Progress) -> dict[str, np.ndarray]:
    """content hash → vector from the largest ``bench_retrieval`` root embedded with the configured model."""
    from retrieval.embeddings import Embedder
    from retrieval.store import ItemStore

    model_id = Embedder(load_config()).model_id
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


# --- the bench --------------------------------------------------------------------------

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


def run_bench(n_items: int, *, embed: str = "random", seed: int = 0, new_share: float = 0.01,
              n_events: int | None = None, root: Path | str | None = None, keep: bool = False,
              cache_dir: Path | None = None, first_build: Path | None = None,
              progress: Progress | None = None) -> dict[str, Any]:
    """Build a root of ``n_items`` facts, publish it (first build), add a night's worth of
    facts and events, and time the nightly job.

    Each phase (generating the facts, the first build, the night) runs as a process of its
    own, as a scheduled run does, so its peak RSS is its own: generating a million facts
    holds far more than the nightly job does, and one process would report the largest.

    Args:
        n_items: extracted facts in the first build (items ≈ 98% of it after dedup).
        embed: first-build vectors, ``random`` or ``model`` (module docstring).
        seed: the generator's seed.
        new_share: tonight's new facts as a share of ``n_items``.
        n_events: feedback events before the nightly run (default: 300, fewer for tiny runs).
        root: the data root to build (must not exist, or be empty; a path or an object-store
            URI); default a temp dir.
        keep: keep the data root afterwards (always kept when ``root`` is given).
        cache_dir: where ``bench_retrieval`` keeps its roots (for ``embed="model"`` lookups).
        first_build: a local folder keeping the first build (the data root, the Dagster
            storage and tonight's facts); when it holds one made with the same arguments, the
            setup and first build are copied from it instead of run again (an hour at 1M).
            The nightly is then measured on a first build made by the code of that day.
        progress: called with a line of text as the bench goes.
    Returns:
        a JSON-able report.
    """
    say = progress or (lambda _m: None)
    if embed not in EMBED_MODES:
        raise BenchError(f"embed={embed!r}; expected one of {', '.join(EMBED_MODES)}")
    if n_items < 2:
        raise BenchError(f"items={n_items}; need at least 2")
    n_events = min(300, max(10, n_items // 10)) if n_events is None else n_events
    made_root = root is None
    paths = DataRoot.resolve(root or Path(tempfile.mkdtemp(prefix=f"bench-nightly-{n_items}-")) / "data")
    root = paths.root
    if root.exists() and any(root.iterdir()):
        raise BenchError(f"{root} is not empty; the bench builds its own data root")
    if first_build and not paths.is_local:
        raise BenchError("--first-build keeps a local data root; it cannot be used with an object store")
    target_seconds, target_rss = targets(n_items)
    report: dict[str, Any] = {"items": n_items, "embedding": embed, "seed": seed, "root": str(root),
                              "target_seconds": target_seconds, "target_rss_mib": target_rss}
    work = Path(tempfile.mkdtemp(prefix="bench-nightly-work-"))
    common = {"items": n_items, "embed": embed, "seed": seed, "new_share": new_share, "events": n_events,
              "root": paths.uri if not paths.is_local else str(root), "work": str(work),
              "cache_dir": str(cache_dir) if cache_dir else None}
    kept = _kept_first_build(first_build, common) if first_build else None
    try:
        if kept is not None:
            say(f"first build: copied from {first_build} (made {kept['made']})")
            shutil.copytree(Path(first_build) / "data", root, dirs_exist_ok=True)
            shutil.copytree(Path(first_build) / "work", work, dirs_exist_ok=True)
            report.update(kept["report"])
            report["first_build_reused"] = kept["made"]
        else:
            say(f"generating {n_items:,} facts (+{new_share:.0%} for tonight)")
            report.update(_phase("setup", common))
            say(f"first build: {report['first_facts']['facts']:,} facts in {report['first_facts']['sessions']:,} "
                f"sessions (embed: {embed})")
            report["first_build"] = _phase("first", common)
            say(f"first build: {report['first_build']['seconds']:.1f} s ({'ok' if report['first_build']['success'] else 'FAILED'})")
            if not report["first_build"]["success"]:
                raise BenchError(f"the first build failed (run {report['first_build']['run_id']}); "
                                 f"steps: {report['first_build']['steps']}")
            if first_build:
                _keep_first_build(Path(first_build), root, work, common, report)
        say(f"nightly: +{report['nightly_input']['new_facts']:,} facts; run_job(nightly)")
        night = _phase("nightly", common)
        report["nightly_input"]["events"] = night.pop("events")
        report["nightly"] = night
        say(f"nightly: {night['seconds']:.1f} s ({'ok' if night['success'] else 'FAILED'})")
        report["peak_rss_mib"] = night["peak_rss_mib"]
        report["meets_target"] = bool(night["success"] and night["seconds"] < target_seconds
                                      and (target_rss is None or night["peak_rss_mib"] <= target_rss))
        report["data_root"] = "local disk" if paths.is_local else "s3 (moto, 127.0.0.1)"
        report["machine"] = machine()
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if made_root and not keep:
            shutil.rmtree(root.parent, ignore_errors=True)
            report["root"] = None
    return report


def _first_build_key(common: dict[str, Any]) -> dict[str, Any]:
    """The arguments a first build depends on."""
    return {name: common[name] for name in ("items", "embed", "seed", "new_share", "events")}


def _kept_first_build(folder: Path, common: dict[str, Any]) -> dict[str, Any] | None:
    """The kept first build's record when ``folder`` holds one made with ``common``'s
    arguments, else None."""
    done = Path(folder) / "first-build.json"
    if not done.exists():
        return None
    kept = json.loads(done.read_text())
    return kept if kept.get("key") == _first_build_key(common) else None


def _keep_first_build(folder: Path, root: Path, work: Path, common: dict[str, Any],
                      report: dict[str, Any]) -> None:
    """Copy the first build (data root, Dagster storage, tonight's facts) into ``folder``;
    the record is written last, so a copy cut short is never reused."""
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(root, folder / "data", dirs_exist_ok=True)
    shutil.copytree(work, folder / "work", dirs_exist_ok=True)
    (folder / "first-build.json").write_text(json.dumps({
        "key": _first_build_key(common),
        "made": datetime.now().astimezone().isoformat(timespec="seconds"),
        "report": {name: report[name] for name in
                   ("setup_seconds", "setup_peak_rss_mib", "first_facts", "nightly_input", "first_build")},
    }, default=str))


def targets(n_items: int) -> tuple[float, float | None]:
    """The nightly job's targets at this size: (seconds, peak RSS in MiB or None). Issue 16:
    at a million items 10 minutes and 8 GiB; up to 100k the earlier 5 minutes."""
    return (TARGET_SECONDS, None) if n_items <= 100_000 else (600.0, 8192.0)


def _phase(name: str, common: dict[str, Any]) -> dict[str, Any]:
    """Run one phase as ``python -m evals.bench.nightly --phase NAME`` (the environment, and
    so an S3 endpoint, is inherited); its JSON report."""
    import subprocess

    argv = [sys.executable, "-m", "evals.bench.nightly", "--phase", name, "--phase-args", json.dumps(common)]
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=None, text=True)
    if done.returncode != 0:
        raise BenchError(f"the {name} phase exited {done.returncode}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _instance(work: Path):
    """The phases' one Dagster instance (its storage under ``work``)."""
    import dagster as dg

    (work / "dagster").mkdir(parents=True, exist_ok=True)
    return dg.instance_for_test(temp_dir=str(work / "dagster"))


def _peak_rss_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def run_phase(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """One phase of ``run_bench``, in this process: ``setup`` generates the facts and
    writes the first build's (tonight's wait under the work folder), ``first`` runs the
    first build, ``nightly`` writes tonight's facts and events and runs the nightly job."""
    from memory_assets.lib.items import publish
    from memory_assets.cli.runner import run_job

    paths, work = DataRoot.resolve(args["root"]), Path(args["work"])
    if name == "setup":
        started = time.perf_counter()
        first, tonight = synthetic_batches(args["items"], new_share=args["new_share"], seed=args["seed"])
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
            with first_build_vectors(args["embed"], args["seed"], cache_dir, lambda m: None) as vectors, \
                    recording(timings):
                start, start_cpu = time.perf_counter(), time.process_time()
                ok, run_id = _first_build(paths, instance)
                wall, cpu = time.perf_counter() - start, time.process_time() - start_cpu
            return {"success": ok, **summarize_run(instance, run_id, timings, wall, cpu), "vectors": vectors,
                    "published_version": _published_version(paths), "peak_rss_mib": _peak_rss_mib()}
        tonight = Batch(pl.read_parquet(work / "tonight-facts.parquet"), pl.read_parquet(work / "tonight-resources.parquet"))
        write_batch(paths, tonight)
        events = write_events(paths, args["events"], seed=args["seed"], start=BENCH_NOW + timedelta(minutes=30),
                              end=NIGHT - timedelta(minutes=30))
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


STEP_ORDER = ("memory_items", "memory_items_checks", "published_items", "published_items_checks",
              "lessons_and_triggers", "category_summaries", "category_summaries_summaries_cite_existing_items")


def format_report(report: dict[str, Any]) -> str:
    m = report["machine"]
    lines = [f"{report['items']:,} facts · first-build vectors: {report['embedding']} · "
             f"{m['cpus']} CPUs · load {m.get('load_avg_1m', '?')} · setup {report['setup_seconds']} s · "
             + (f"first build reused from {report['first_build_reused']} · " if report.get("first_build_reused") else "")
             + f"data root: {report.get('data_root', 'local disk')} · peak RSS: setup {report.get('setup_peak_rss_mib', '?')}, "
             f"first build {report['first_build'].get('peak_rss_mib', '?')}, nightly {report.get('peak_rss_mib', '?')} MiB "
             + "(a process each)"]
    for name in ("first_build", "nightly"):
        run = report[name]
        status = "ok" if run["success"] else "FAILED"
        head = (f"{name.replace('_', ' ')}: {run['seconds']:.1f} s wall, {run['cpu_seconds']:.1f} s CPU ({status}) · "
                f"{run['items'] or 0:,} items · embedded {run['embedded'] or 0:,}, reused {run['vectors_reused'] or 0:,} · "
                f"published v{run['published_version']}")
        lines.append(head)
        for step in sorted(run["steps"], key=lambda s: STEP_ORDER.index(s) if s in STEP_ORDER else 99):
            lines.append(f"  {step:<50} {run['steps'][step]:>8.2f} s")
            for label, t in sorted(run["parts"].get(step, {}).items(), key=lambda kv: -kv[1]["seconds"]):
                if t["seconds"] >= 0.05:
                    lines.append(f"    {label:<48} {t['seconds']:>8.2f} s  (CPU {t['cpu_seconds']:.2f} s, {t['calls']}×)")
        lines.append(f"  {'outside steps (run start, definitions, pending scan)':<50} {run['outside_steps_seconds']:>8.2f} s")
    night, rss = report["nightly"], report.get("target_rss_mib")
    verdicts = [f"{night['seconds']:.1f} s {'meets' if night['seconds'] < report['target_seconds'] else 'misses'} "
                f"the {report['target_seconds']:.0f} s target"]
    if rss:
        peak = report.get("peak_rss_mib") or 0.0
        verdicts.append(f"{peak:.0f} MiB {'meets' if peak <= rss else 'misses'} the {rss:.0f} MiB target")
    lines.append("nightly: " + "; ".join(verdicts))
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memory bench nightly", description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", action="append", metavar="N",
                        help="extracted facts in the first build; repeat or comma-separate (10k,100k)")
    parser.add_argument("--embed", choices=EMBED_MODES, default="random",
                        help="first-build vectors: random unit vectors (default) or the model "
                             "(looked up in `memory bench retrieval`'s cache when it has them)")
    parser.add_argument("--new-share", type=float, default=0.01, help="tonight's new facts, share of N (default 0.01)")
    parser.add_argument("--events", type=int, default=None, help="feedback events before the nightly run (default 300)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--root", default=None, help="build the data root here and keep it (must be empty)")
    parser.add_argument("--phase", choices=("setup", "first", "nightly"), help=argparse.SUPPRESS)
    parser.add_argument("--phase-args", default="{}", help=argparse.SUPPRESS)
    parser.add_argument("--keep", action="store_true", help="keep the temporary data root")
    parser.add_argument("--first-build", type=Path, default=None, metavar="DIR",
                        help="keep the first build in DIR, and reuse it when it was made with the same "
                             "--items, --embed, --seed, --new-share and --events (local roots only)")
    parser.add_argument("--s3", action="store_true",
                        help="build the data root on an S3-compatible server (moto) started on 127.0.0.1")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help=f"bench_retrieval's cache, for --embed model (default {default_cache_dir()})")
    parser.add_argument("--json", action="store_true", help="print a JSON list of reports")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.phase:  # one phase of run_bench, in a process of its own
        print(json.dumps(run_phase(args.phase, json.loads(args.phase_args)), default=str), flush=True)
        return 0
    if not args.items:
        build_parser().error("--items is required")
    progress = stderr_progress("bench nightly")

    reports = []
    try:
        sizes = items_arg(args.items)
        if args.root and len(sizes) > 1:
            raise BenchError("--root takes one --items size")
        with contextlib.ExitStack() as stack:
            server = None
            if args.s3:
                from evals.bench.s3 import local_s3, s3_env

                server = stack.enter_context(local_s3())
                state = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-nightly-state-")))
                stack.enter_context(s3_env(server, state))
            for n in sizes:
                root = f"s3://{server.bucket(f'nightly-{n}')}/data" if server is not None else args.root
                report = run_bench(n, embed=args.embed, seed=args.seed, new_share=args.new_share,
                                   n_events=args.events, root=root, keep=args.keep, cache_dir=args.cache_dir,
                                   first_build=args.first_build, progress=progress)
                reports.append(report)
                if not args.json:
                    print(format_report(report), flush=True)
    except (BenchError, ValueError) as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(reports, indent=2, ensure_ascii=False, default=str))
    return 0 if all(r["nightly"]["success"] for r in reports) else 1


if __name__ == "__main__":
    raise SystemExit(main())
