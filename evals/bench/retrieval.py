"""How fast is retrieval: ``inject`` and ``search`` latency over N synthetic memory items.

A benchmark, not a test. It builds a data root with N items that read like real ones
(people, vehicles, work decisions, preferences, health, hobbies…) through the pipeline's
own write path (``facts_to_items`` → ``Embedder`` → ``publish.write_items`` →
``publish.publish``: same full-text index, same vector index, same ``published`` tag),
then times what an agent pays per prompt with the model already loaded:

* ``inject_ms`` — ``MemoryClient.inject(context)``: rewrite, tiers, query embedding,
  vector + full-text search, scoring, trust pass, the block and its ``injected`` event;
* ``search_ms`` — ``MemoryClient.search(query, k=10)``;
* ``embed_ms`` — the query embedding alone (``client.embedder.embed_one``);
* ``first_inject_ms`` — the first ``inject`` of a new client: the table is opened and
  its index caches are cold (the model is already loaded).

Model load and the first ``warmup`` calls are excluded. Item vectors come from the real
model (``--embed model``, ≈ 200 sentences/s on 2 cores, so 100k items take ~8 minutes
once) or are random unit vectors (``--embed random``, seconds; the same index and search
path, but vector neighbours are meaningless). Each built root is cached by
(items, seed, embed, generator version), so re-running reuses it.

The synthetic memory is ``evals.bench.synthetic``, its data roots
``evals.bench.synthetic_roots``, the timing ``evals.bench.timing`` and ``--study``
``evals.bench.index_study``; this module is the timed inject and search, the report and
the command.

    memory bench retrieval --items 10000,100000 [--embed model|random] [--json]
    memory bench retrieval --items 100000 --study   # + index types, FTS, table-open cost
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evals import stderr_progress
from evals.bench import BenchError, Progress, items_arg
from evals.bench.index_study import format_study, index_study
from evals.bench.synthetic import BENCH_NOW, query_text, synthetic_queries
from evals.bench.synthetic_roots import EMBED_MODES, MANIFEST, cached_root, default_cache_dir, upload_root
from evals.bench.timing import latency_stats, machine, time_call
from retrieval.config import MemoryConfig, load_config

FIRST_INJECT_SAMPLES = 10  # at most; one per 10 timed queries


# --- timing inject and search -----------------------------------------------------------

def _search_call(client: Any) -> Callable[[str], Any]:
    if "now" in inspect.signature(client.search).parameters:
        return lambda q: client.search(q, k=10, now=BENCH_NOW)
    return lambda q: client.search(q, k=10)


# What an inject spends its time on, from the read path's own spans (``retrieval.spans``):
# the query embedding, the vector query ("vector": the vector and full-text queries run
# together after the embedding, and this is both; "full-text" is the full-text query's own
# time inside it), the graph walk, the candidates' rows from the in-memory
# snapshot and the visibility filter ("rows"), ranking (tier 2 less its candidate lists)
# and the rest: tier 1, the pending overlay, the trust pass and the block ("block"). The
# stages but "full-text" add up to the inject.
STAGES = ("embed", "vector", "full-text", "graph", "rows", "rank", "block")


def _stages(calls: list[tuple[str, float, float, float]]) -> dict[str, float]:
    """One inject's seconds by stage, from its spans."""
    # The search stages count only inside the candidate lists: the trust pass may embed
    # too (a disagreeing pair's contents, on an object-store root), and that is "block".
    lists = [(start, start + seconds) for label, start, seconds, _cpu in calls if label == "candidates"]
    searching = {"embed", "vector", "full-text", "graph"}
    wall: dict[str, float] = {}
    for label, start, seconds, _cpu in calls:
        if label not in searching or any(a <= start <= b for a, b in lists):
            wall[label] = wall.get(label, 0.0) + seconds
    parts = {name: wall.get(name, 0.0) for name in ("embed", "vector", "full-text", "graph")}
    parts["rows"] = wall.get("candidates", 0.0) - sum(v for k, v in parts.items() if k != "full-text")
    parts["rank"] = wall.get("tier 2", 0.0) - wall.get("candidates", 0.0)
    parts["block"] = wall.get("inject", 0.0) - wall.get("tier 2", 0.0)
    return parts


def run_bench(n_items: int, *, config: MemoryConfig, queries: int = 200, warmup: int = 20, seed: int = 0,
              embed: str = "model", cache_dir: Path | None = None, torch_threads: int | None = None,
              progress: Progress | None = None, s3: Any = None) -> dict[str, Any]:
    """Time ``inject``, ``search`` and the query embedding over ``n_items`` synthetic items.

    Args:
        n_items: items in the data root (built once, then reused from ``cache_dir``).
        config: the memory config the data root is built with (and the machine's query threads).
        queries: timed calls of each kind.
        warmup: untimed calls first (model load, table open, index caches).
        seed: the generator's seed for items and questions.
        embed: how item vectors were made: ``model`` or ``random``.
        cache_dir: where built roots are kept (default: a folder in the system temp dir).
        torch_threads: torch threads for the query embedding (default: the config's
            ``embedding.query_threads``).
        progress: called with a line of text as the run goes.
        s3: an ``evals.bench.s3.S3Server``: the built root is copied into a bucket on it and
            read from there (this process's environment must point at it).
    Returns:
        a JSON-able report; ``inject_ms`` is None (and ``inject_error`` set) when inject fails.
    """
    from retrieval import MemoryClient
    from retrieval.spans import Recorder, recording

    root, reused = cached_root(n_items, config=config, seed=seed, embed=embed, cache_dir=cache_dir,
                               progress=progress)
    built = json.loads((root / MANIFEST).read_text())
    local_root = root
    if s3 is not None:
        if progress:
            progress(f"copying {root} to the S3-compatible server")
        root = upload_root(root, s3.bucket(f"bench-{n_items}-{int(time.time())}"))
    client = MemoryClient(root)
    if torch_threads:  # exactly this many threads, alone or not
        client.embedder.query_threads, client.embedder.idle_query_threads = torch_threads, 0
    client.embedder.embed_one("load the model")  # excluded: a long-lived agent loads it once
    search = _search_call(client)
    contexts = synthetic_queries(warmup + queries, seed=seed)
    warm, timed = contexts[:warmup], contexts[warmup:]
    if progress:
        progress(f"{n_items:,} items ({'cached' if reused else 'built'}: {root}); timing {queries} queries")

    inject_error = None
    for context in warm:
        client.embedder.embed_one(query_text(context))
        search(query_text(context))
        if inject_error is None:
            try:
                client.inject(context, now=BENCH_NOW)
            except Exception as exc:  # the client is being rewritten: measure search, report why
                inject_error = f"{type(exc).__name__}: {exc}"
    embed_s, search_s, inject_s, injected, tokens = [], [], [], 0, []
    stages: dict[str, list[float]] = {stage: [] for stage in STAGES}
    recorder = Recorder()
    # Every timed call embeds its query: the cached query vectors (an agent asking the
    # same thing again) are dropped before each, so no call reuses another's embedding.
    for context in timed:
        text = query_text(context)
        embed_s.append(time_call(lambda: client.embedder.embed_one(text)))
        client.stores.forget_queries()
        search_s.append(time_call(lambda: search(text)))
        if inject_error is None:
            # Timed with the spans off, then again with them on for the breakdown.
            client.stores.forget_queries()
            start = time.perf_counter()
            injection = client.inject(context, now=BENCH_NOW)
            inject_s.append(time.perf_counter() - start)
            injected += len(injection.items)
            tokens.append(injection.tokens)
            client.stores.forget_queries()
            recorder.clear()
            with recording(recorder):
                client.inject(context, now=BENCH_NOW)
            for stage, seconds in _stages(recorder.calls).items():
                stages[stage].append(seconds)
    # A new client opens the table with cold index caches (the model stays loaded): what an
    # inject pays right after the client (re)opens the published table.
    first_s = []
    if inject_error is None:
        for context in timed[:min(FIRST_INJECT_SAMPLES, max(1, queries // 10))]:
            fresh = MemoryClient(root)
            first_s.append(time_call(lambda: fresh.inject(context, now=BENCH_NOW)))
    # How often dual search had something to walk: queries naming an entity of the graph,
    # and the items its walk reached (the third list fused into inject's ranking).
    graph_index = client.stores.graph
    walked = [graph_index.search(query_text(c), None, client.config, 100) for c in timed] if inject_s else []
    # inject appends an ``injected`` event per call; the bench's root is not a real memory.
    shutil.rmtree(client.paths.events, ignore_errors=True)
    report: dict[str, Any] = {
        "items": n_items, "queries": queries, "warmup": warmup,
        "inject_ms": latency_stats(inject_s) if inject_s else None,
        "search_ms": latency_stats(search_s), "embed_ms": latency_stats(embed_s),
        "first_inject_ms": latency_stats(first_s) if first_s else None,
        "stages_p50_ms": {stage: round(float(np.median(values)) * 1000, 2) for stage, values in stages.items() if values},
        "data_root": "s3 (moto, 127.0.0.1)" if s3 is not None else "local disk",
        "build_seconds": built["build_seconds"], "embed_seconds": built.get("embed_seconds"),
        "index_seconds": built.get("write_and_index_seconds"), "cache": "reused" if reused else "built",
        "index": built["index"], "embedding": embed, "embedding_model": built["embedding_model"],
        "items_per_inject": round(injected / len(inject_s), 2) if inject_s else None,
        "tokens_per_inject": round(float(np.mean(tokens)), 1) if tokens else None,
        "root": str(root), "built_at": str(local_root), "machine": machine(config),
        "graph": {**built.get("graph", {}), "graph_on": bool(client.config.graph.weight > 0),
                  "queries_walked": sum(1 for w in walked if w),
                  "items_reached_mean": round(float(np.mean([len(w) for w in walked])), 1) if walked else 0.0},
    }
    if inject_error:
        report["inject_error"] = inject_error
    return report


# --- the shell --------------------------------------------------------------------------

def format_report(report: dict[str, Any]) -> str:
    def row(name: str, stats: dict[str, float] | None) -> str:
        if not stats:
            return f"  {name:<8} —"
        return f"  {name:<8} p50 {stats['p50']:>7.2f} ms   p95 {stats['p95']:>7.2f} ms   mean {stats['mean']:>7.2f}   max {stats['max']:>7.2f}"

    m = report["machine"]
    lines = [f"{report['items']:,} items · {report['queries']} queries · embedding: {report['embedding']} "
             f"({report['embedding_model']}) · index: {report['index']}",
             row("inject", report["inject_ms"]), row("search", report["search_ms"]), row("embed", report["embed_ms"]),
             row("1st inj", report.get("first_inject_ms")),
             "  inject by stage, p50 ms: " + (" · ".join(f"{k} {v}" for k, v in report["stages_p50_ms"].items())
                                              if report.get("stages_p50_ms") else "—") + f" · data root: {report['data_root']}",
             f"  build {report['build_seconds']} s ({report['cache']}; embedding {report['embed_seconds']} s, "
             f"index {report['index_seconds']} s) · {m['cpus']} CPUs · torch threads "
             f"{m.get('torch_threads', '?')} · load {m.get('load_avg_1m', '?')}"]
    if report.get("inject_error"):
        lines.append(f"  inject failed: {report['inject_error']}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memory bench retrieval", description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", action="append", required=True, metavar="N",
                        help="items in the store; repeat or comma-separate (10000,100000 or 10k,100k)")
    parser.add_argument("--queries", type=int, default=200, help="timed queries (default 200)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed queries first (default 20)")
    parser.add_argument("--embed", choices=EMBED_MODES, default="model",
                        help="item vectors: the real model (default; 100k ≈ 8 min once) or random unit vectors")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--torch-threads", type=int, default=None, metavar="N",
                        help="torch threads for the query embedding (default: embedding.query_threads in the config)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help=f"where built data roots are kept (default {default_cache_dir()})")
    parser.add_argument("--study", action="store_true",
                        help="also compare vector index types, full-text search and table-open cost")
    parser.add_argument("--s3", action="store_true",
                        help="read the built root from an S3-compatible server (moto) started on 127.0.0.1")
    parser.add_argument("--json", action="store_true", help="print a JSON list of reports")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    progress = stderr_progress("bench retrieval")

    try:
        config = load_config()
        sizes = items_arg(args.items)
        reports = []
        with contextlib.ExitStack() as stack:
            server = None
            if args.s3:
                from evals.bench.s3 import local_s3, s3_env

                server = stack.enter_context(local_s3())
                stack.enter_context(s3_env(server))
            for n in sizes:
                reports.append(_one(args, n, server, progress, config))
    except (BenchError, ValueError) as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(reports, indent=2, ensure_ascii=False))
    return 0


def _one(args: argparse.Namespace, n: int, server: Any, progress: Progress,
         config: MemoryConfig) -> dict[str, Any]:
    report = run_bench(n, config=config, queries=args.queries, warmup=args.warmup, seed=args.seed,
                       embed=args.embed, cache_dir=args.cache_dir, torch_threads=args.torch_threads,
                       progress=progress, s3=server)
    if args.study:
        report["study"] = index_study(n, config=config, seed=args.seed, embed=args.embed,
                                      cache_dir=args.cache_dir, progress=progress)
    if not args.json:
        print(format_report(report), flush=True)
        if args.study:
            print(format_study(report["study"]), flush=True)
    return report


if __name__ == "__main__":
    raise SystemExit(main())
