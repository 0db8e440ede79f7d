"""How much the blocking item checks add to a ``memory_items`` run, per 100k items.

A benchmark, not a test. It reuses ``bench_retrieval``'s cached synthetic data root
(N items written through ``publish.write_items``: same Parquet, same LanceDB table
with its full-text and vector indexes; random unit vectors) and times exactly what the
``memory_items`` checks run on a staged version:

* ``schema`` — the Parquet schema against ``ITEM_SCHEMA``;
* ``items`` — read the Parquet file, then the items suite (GX), in the steady state: the
  credential-scan ledger already knows every text but the ``--new-share`` that changed
  since the last version (default 1%);
* ``embeddings`` — read ``id``/``embedding_model``/``vector`` from LanceDB, the vector
  suite and the full-text index check (GX).

``seconds_per_100k`` is their sum scaled to 100k items (target < 1 s). Also reported:
``items_cold`` (an empty ledger: every text scanned for credentials, as on the very first
run or after ``retrieval/credentials.py`` changes) and ``gx_startup`` (importing Great
Expectations and building its context, paid once per process, not per item).

    python -m evals.bench.quality --items 100000 [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from evals import stderr_progress
from evals.bench import BenchError
from evals.bench.synthetic_roots import RANDOM_DIM, cached_root
from evals.bench.timing import machine
from retrieval.config import MemoryConfig, load_config
from retrieval import published
from retrieval.paths import DataRoot

TARGET_SECONDS_PER_100K = 1.0


def _best(call: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """The fastest of ``repeat`` runs — (wall seconds, CPU seconds, result).

    Noise only ever adds time, so the minimum is the measurement. CPU time (this
    process, all threads) is reported too: on a busy machine wall time waits for cores.
    """
    wall, cpu, result = float("inf"), float("inf"), None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = call()
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return wall, cpu, result


def run_bench(n_items: int, *, config: MemoryConfig, new_share: float = 0.01, repeat: int = 3, seed: int = 0,
              cache_dir: Path | None = None, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Time the staged-version checks over ``n_items`` synthetic items; returns the report.

    Args:
        n_items: items in the synthetic staged version.
        config: the memory config the items are built and checked with.
        new_share: share of texts the credential-scan ledger has not seen.
        repeat: timed runs per phase (the fastest counts).
        seed: the generator's seed.
        cache_dir: where ``bench_retrieval`` keeps built data roots (default: its own).
        progress: called with a line of text as the bench goes.
    """
    from memory_assets.lib.quality import ScanLedger, embeddings_report, items_report, schema_report
    from memory_assets.lib.quality.validation import runtime
    from retrieval.schema import ITEM_SCHEMA
    from retrieval.store import ItemStore

    start = time.perf_counter()
    runtime()
    gx_startup = time.perf_counter() - start

    root, reused = cached_root(n_items, config=config, seed=seed, embed="random", cache_dir=cache_dir,
                               progress=progress)
    if progress:
        progress(f"{'reusing' if reused else 'built'} {root}")
    paths = DataRoot.resolve(root)
    table = ItemStore(paths).table()
    parquet = published.items_file(paths)
    if table is None or parquet is None:
        raise BenchError(f"{root}: nothing published")
    items = pl.read_parquet(parquet)
    # The synthetic items cite turns that were never stored as resources: every cited id
    # counts as stored, which costs the same lookup.
    resource_ids = items["source_resource_ids"].explode().drop_nulls().unique()
    # bench_retrieval's random vectors are recorded under their own model id.
    expected = (items["embedding_model"][0], RANDOM_DIM)

    # Steady state: the last version's ledger knows all but the changed share of texts.
    contents = items["content"]
    changed = set(random.Random(seed).sample(range(len(contents)), int(len(contents) * new_share)))
    known = ScanLedger()
    known.kinds(contents.filter(~pl.Series([i in changed for i in range(len(contents))])))
    known.remember()

    def items_warm():
        ledger = ScanLedger(known.known)
        return items_report(pl.read_parquet(parquet), config, resource_ids=resource_ids, ledger=ledger,
                            subject="bench items")

    def items_cold():
        return items_report(pl.read_parquet(parquet), config, resource_ids=resource_ids, ledger=ScanLedger(),
                            subject="bench items")

    def schema():
        return schema_report({parquet.name: dict(pl.read_parquet_schema(parquet))}, ITEM_SCHEMA, subject="bench")

    if progress:
        progress(f"timing the checks on {n_items:,} items (best of {repeat})")
    phases = {
        "schema": (schema, repeat),
        "items": (items_warm, repeat),
        "embeddings": (lambda: embeddings_report(table, config, subject="bench", expected=expected), repeat),
        "items_cold": (items_cold, 1),
    }
    seconds: dict[str, float] = {}
    cpu: dict[str, float] = {}
    reports = {}
    for name, (call, times) in phases.items():
        seconds[name], cpu[name], reports[name] = _best(call, times)
    scale = 100_000 / n_items
    steady = ("schema", "items", "embeddings")
    total = sum(seconds[k] for k in steady)
    per_100k = total * scale
    return {
        "items": n_items,
        "new_share": new_share,
        "seconds": {k: round(v, 3) for k, v in seconds.items()},
        "cpu_seconds": {k: round(v, 3) for k, v in cpu.items()},
        "seconds_total": round(total, 3),
        "seconds_per_100k": round(per_100k, 3),
        "cpu_seconds_per_100k": round(sum(cpu[k] for k in steady) * scale, 3),
        "cold_seconds_per_100k": round((total - seconds["items"] + seconds["items_cold"]) * scale, 3),
        "gx_startup_seconds": round(gx_startup, 2),
        "target_seconds_per_100k": TARGET_SECONDS_PER_100K,
        "meets_target": per_100k < TARGET_SECONDS_PER_100K,
        "checks_passed": {k: r.passed for k, r in reports.items() if k in steady},
        "expectations": sum(len(reports[k].findings) for k in steady),
        "machine": machine(config),
    }


def format_report(report: dict[str, Any]) -> str:
    s = report["seconds"]
    verdict = "meets" if report["meets_target"] else "misses"
    return "\n".join([
        f"item checks on {report['items']:,} items ({report['expectations']} expectations; "
        f"{report['new_share']:.0%} of texts new since the last version)",
        f"  schema {s['schema']:.3f} s   items {s['items']:.3f} s   embeddings {s['embeddings']:.3f} s"
        f"   total {report['seconds_total']:.3f} s",
        f"  {report['seconds_per_100k']:.3f} s per 100k items ({verdict} the {report['target_seconds_per_100k']} s target;"
        f" CPU {report['cpu_seconds_per_100k']:.3f} s; load average {report['machine'].get('load_avg_1m', '?')})",
        f"  cold (every text scanned for credentials): {report['cold_seconds_per_100k']:.3f} s per 100k items",
        f"  once per process: Great Expectations import + context {report['gx_startup_seconds']:.1f} s",
    ])


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memory bench quality", description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000, help="items in the staged version (default 100000)")
    parser.add_argument("--new-share", type=float, default=0.01,
                        help="share of texts not seen by the last version's credential scan (default 0.01)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per phase; the best counts (default 3)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache-dir", type=Path, default=None, help="where built data roots are kept")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    progress = stderr_progress("bench quality")

    if not 0.0 <= args.new_share <= 1.0:
        print(f"BenchError: --new-share {args.new_share}; expected a share between 0 and 1", file=sys.stderr)
        return 2
    try:
        report = run_bench(args.items, config=load_config(), new_share=args.new_share, repeat=max(1, args.repeat),
                           seed=args.seed, cache_dir=args.cache_dir, progress=progress)
    except (BenchError, ValueError) as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else format_report(report), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
