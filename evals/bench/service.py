"""``memory bench service``: agents over HTTP against a real server and a large store.

Starts ``memory serve`` (its own process, 127.0.0.1) on a copy of the synthetic
``--items`` root (``evals.bench.retrieval``), creates one key per client, and runs
``--clients`` concurrent agents for ``--seconds``: each sends a request, waits for the
answer, pauses ``--think-ms`` and goes on; ``--write-share`` of the requests are writes
(``remember`` and ``append_turn`` in turn), the rest ``inject``. Each agent starts at a
random moment within its first pause, as independent agents would, not all at once. Reports throughput,
p50/p95/p99 per kind and every error. Then runs the pipeline once (``memory
materialize``) and checks that every acknowledged write is there: each remembered
sentence as an item (or merged into one, or refused by the gate with a reason), each
checkpointed turn in ``replay``. ``lost`` counts the ones that are not.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from evals.bench.serving import create_key, service_env, start  # the same server start the tests use
from evals.bench.synthetic import synthetic_queries
from evals.bench.synthetic_roots import cached_root
from evals.bench.timing import machine
from retrieval.config import MemoryConfig, load_config

KINDS = ("inject", "remember", "append_turn")
_THINGS = ("deploy window", "staging database", "on-call rota", "release train", "feature flag", "cache TTL",
           "retry budget", "error budget", "backup schedule", "review rule")


def _memory(root: Path, *args: str, config: Path | None = None, **kwargs: Any) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memory_assets.cli", "--data-root", str(root), *args],
                          env=service_env(config), text=True, capture_output=True, **kwargs)


def _stats(seconds: Sequence[float]) -> dict[str, float]:
    if not seconds:
        return {"n": 0}
    ms = np.asarray(seconds) * 1000.0
    return {"n": len(ms), "p50": round(float(np.percentile(ms, 50)), 1), "p95": round(float(np.percentile(ms, 95)), 1),
            "p99": round(float(np.percentile(ms, 99)), 1), "max": round(float(ms.max()), 1)}


async def _agent(n: int, client: Any, queries: list, args: argparse.Namespace, stop: float,
                 timings: dict[str, list[float]], errors: list[str], written: dict[str, list]) -> None:
    rng = random.Random(args.seed * 1000 + n)
    session, turn, notes = f"bench-{n}", 0, 0
    # Independent agents do not start in the same millisecond: each begins within its first pause.
    await asyncio.sleep(rng.uniform(0, args.think_ms / 1000.0))
    while time.monotonic() < stop:
        if rng.random() < args.write_share:
            kind = "remember" if (notes + turn) % 2 == 0 else "append_turn"
        else:
            kind = "inject"
        started = time.perf_counter()
        try:
            if kind == "inject":
                answer = await client.post("/v1/inject", json={"context": rng.choice(queries)})
                ok = answer.status_code == 200
            elif kind == "remember":
                text = (f"Agent {n}'s {rng.choice(_THINGS)} for project {rng.randrange(10_000)} is "
                        f"{rng.randrange(1, 60)} minutes, set in note {notes}.")
                answer = await client.post("/v1/remember", json={"content": text})
                ok = answer.status_code == 202
                if ok:
                    written["remember"].append(text)
                    notes += 1
            else:
                answer = await client.post(f"/v1/sessions/{session}/turns", json={
                    "turn": turn, "user_input": f"Step {turn} of the bench session for agent {n}.",
                    "llm_output": "Done.", "internal_state": {"step": turn}})
                ok = answer.status_code == 201
                if ok:
                    written["append_turn"].append((n, session, turn))
                    turn += 1
        except Exception as exc:  # a refused connection or a timeout is an error to report, not a crash
            ok, answer = False, exc
        timings[kind].append(time.perf_counter() - started)
        if not ok:
            errors.append(f"{kind}: {getattr(answer, 'status_code', '')} {getattr(answer, 'text', answer)!s:.200}")
        if args.think_ms:
            await asyncio.sleep(rng.uniform(0.5, 1.5) * args.think_ms / 1000.0)


async def _flood(client: Any, queries: list, stop: float, seed: int, timings: list[float]) -> None:
    """One of a flooding key's threads: injects back to back, no pause."""
    rng = random.Random(seed)
    while time.monotonic() < stop:
        started = time.perf_counter()
        try:
            await client.post("/v1/inject", json={"context": rng.choice(queries)})
        except Exception:  # the flood's own failures are not the measured agents' errors
            pass
        timings.append(time.perf_counter() - started)


async def _load(url: str, keys: list[str], queries: list, args: argparse.Namespace,
                flood_key: str | None = None) -> dict[str, Any]:
    import httpx

    timings: dict[str, list[float]] = {k: [] for k in KINDS}
    errors: list[str] = []
    written: dict[str, list] = {"remember": [], "append_turn": []}
    clients = [httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {k}"}, timeout=60) for k in keys]
    flooder = httpx.AsyncClient(base_url=url, headers={"Authorization": f"Bearer {flood_key}"}, timeout=60,
                                limits=httpx.Limits(max_connections=args.flood + 1)) if flood_key else None
    flooded: list[float] = []
    started = time.monotonic()
    try:
        await asyncio.gather(*(_agent(n, c, queries, args, started + args.seconds, timings, errors, written)
                               for n, c in enumerate(clients)),
                             *(_flood(flooder, queries, started + args.seconds, args.seed + 7919 * t, flooded)
                               for t in range(args.flood if flooder else 0)))
    finally:
        for c in [*clients, *([flooder] if flooder else [])]:
            await c.aclose()
    elapsed = time.monotonic() - started
    total = sum(len(v) for v in timings.values())
    return {"elapsed_s": round(elapsed, 1), "requests": total, "throughput_rps": round(total / elapsed, 1),
            "latency_ms": {k: _stats(v) for k, v in timings.items()}, "errors": len(errors),
            "error_examples": errors[:5], "written": written,
            **({"flood_inject_ms": _stats(flooded)} if flood_key else {})}


def _lost(root: Path, written: dict[str, list], keys: list[str], url: str) -> dict[str, Any]:
    """Acknowledged writes the store does not hold after one pipeline run."""
    import httpx
    import polars as pl

    from retrieval.paths import DataRoot
    from retrieval.store import ItemStore

    paths = DataRoot.resolve(root)
    items = ItemStore(paths).items()
    contents = set(items["content"].to_list())
    merged = {c for ids in items["merged_from"].to_list() if ids for c in ids}
    facts = pl.concat([pl.read_parquet(p) for p in sorted(paths.extracted_facts.glob("remember-*.parquet"))],
                      how="diagonal_relaxed") if any(paths.extracted_facts.glob("remember-*.parquet")) else None
    fact_ids = dict(zip(facts["content"].to_list(), facts["id"].to_list())) if facts is not None else {}
    rejected = set()
    for part in paths.rejections.glob("remember-*.parquet"):
        rejected.update(pl.read_parquet(part)["preview"].to_list())
    missing_notes = [t for t in written["remember"]
                     if t not in contents and fact_ids.get(t) not in merged and t not in rejected]
    turns: dict[tuple[int, str], set[int]] = {}
    for n, session, turn in written["append_turn"]:
        turns.setdefault((n, session), set()).add(turn)
    missing_turns = 0
    for (n, session), wanted in turns.items():
        got = httpx.get(f"{url}/v1/sessions/{session}/turns", headers={"Authorization": f"Bearer {keys[n]}"},
                        timeout=60).json()
        missing_turns += len(wanted - {t["turn"] for t in got})
    return {"remembered": len(written["remember"]), "turns": len(written["append_turn"]),
            "lost_remembered": len(missing_notes), "lost_turns": missing_turns, "lost": len(missing_notes) + missing_turns,
            "lost_examples": missing_notes[:3]}


def run(args: argparse.Namespace, memory_config: MemoryConfig) -> dict[str, Any]:
    cached, _ = cached_root(args.items, config=memory_config, seed=args.seed, embed=args.embed)
    work = Path(tempfile.mkdtemp(prefix="memory-bench-service-"))
    root = work / "data"
    try:
        shutil.copytree(cached, root)
        config = work / "bench.toml"
        config.write_text(f"[service]\nwrites_per_minute = {args.writes_per_minute}\n"
                          f"concurrent_searches = {args.concurrent_searches}\n")
        # Every agent reads and writes the store's namespace: the heaviest read path.
        keys = [create_key(root, f"agent-{n}", "--namespace", memory_config.default_namespace, env=service_env(config))
                for n in range(args.clients)]
        started = time.perf_counter()
        server = start(root, keys[0], config=config, timeout=300, workers=args.workers)
        setup = {"bench": "service", "items": args.items, "clients": args.clients, "seconds": args.seconds,
                 "workers": args.workers, "concurrent_searches": args.concurrent_searches,
                 "write_share": args.write_share, "think_ms": args.think_ms,
                 "server_ready_s": round(time.perf_counter() - started, 1)}
        try:
            # A pool far larger than the requests: a repeated query would skip its embedding.
            queries = synthetic_queries(20_000, seed=args.seed)
            if args.flood:
                # Fair reads: the agents alone, then beside one key injecting from --flood threads.
                flood_key = create_key(root, "flooder", "--namespace", memory_config.default_namespace,
                                       env=service_env(config))
                idle = asyncio.run(_load(server.url, keys, queries, args))
                load = asyncio.run(_load(server.url, keys, queries, args, flood_key))
                before, during = idle["latency_ms"]["inject"]["p50"], load["latency_ms"]["inject"]["p50"]
                load["fairness"] = {"flood_threads": args.flood, "others_inject_p50_idle_ms": before,
                                    "others_inject_p50_flooded_ms": during, "ratio": round(during / before, 2),
                                    "flood_requests": load["flood_inject_ms"].get("n", 0)}
                load["written"] = {k: idle["written"][k] + load["written"][k] for k in load["written"]}
                load["errors"] += idle["errors"]
            else:
                load = asyncio.run(_load(server.url, keys, queries, args))
            written = load.pop("written")
            if args.no_check:
                return {**setup, **load, "machine": machine(memory_config)}
            started = time.perf_counter()
            done = _memory(root, "materialize", "--quiet", config=config, timeout=3600)
            materialize_s = time.perf_counter() - started
            if done.returncode != 0:
                load["materialize_error"] = (done.stderr or done.stdout)[-2000:]
            check = _lost(root, written, keys, server.url)
        finally:
            server.stop()
        return {**setup, **load, "materialize_s": round(materialize_s, 1), **check, "machine": machine(memory_config)}
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def format_report(r: dict[str, Any]) -> str:
    lines = [f"service bench: {r['clients']} clients for {r['elapsed_s']} s against {r['items']:,} items "
             f"({int(r['write_share'] * 100)} % writes, think {r['think_ms']} ms)",
             f"  throughput {r['throughput_rps']} requests/s, {r['requests']} requests, errors {r['errors']}"]
    for kind, s in r["latency_ms"].items():
        if s.get("n"):
            lines.append(f"  {kind:<12} n={s['n']:<6} p50 {s['p50']} ms  p95 {s['p95']} ms  p99 {s['p99']} ms  max {s['max']} ms")
    if "fairness" in r:
        f = r["fairness"]
        lines.append(f"  fair reads: the agents' inject p50 {f['others_inject_p50_idle_ms']} ms alone, "
                     f"{f['others_inject_p50_flooded_ms']} ms beside one key's {f['flood_threads']}-thread flood "
                     f"(×{f['ratio']}; {f['flood_requests']} flood requests)")
    if "lost" in r:  # not with --no-check
        lines.append(f"  after one `memory materialize` ({r['materialize_s']} s): {r['remembered']} remembered, "
                     f"{r['turns']} turns checkpointed, lost {r['lost']}")
    for e in r.get("error_examples", []):
        lines.append(f"  error: {e}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memory bench service", description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000, help="items in the store (default 100000)")
    parser.add_argument("--clients", type=int, default=20, help="concurrent agents (default 20)")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the load runs (default 60)")
    parser.add_argument("--write-share", type=float, default=0.2, help="share of writes (default 0.2)")
    parser.add_argument("--think-ms", type=float, default=0.0,
                        help="mean pause between an agent's requests (default 0: back to back)")
    parser.add_argument("--writes-per-minute", type=int, default=100_000, help="the keys' write limit in this run")
    parser.add_argument("--workers", type=int, default=None, help="the server's worker processes (default [service] workers)")
    parser.add_argument("--concurrent-searches", type=int, default=0,
                        help="the server's [service] concurrent_searches (default 0: one per core)")
    parser.add_argument("--flood", type=int, default=0,
                        help="fair reads: run the load alone, then beside one more key injecting back to back "
                             "from this many threads, and compare the agents' inject p50")
    parser.add_argument("--embed", choices=["model", "random"], default="model")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-check", action="store_true",
                        help="latency only: skip the pipeline run and the lost-writes check")
    parser.add_argument("--keep", action="store_true", help="keep the working copy of the store")
    parser.add_argument("--json", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    report = run(args, load_config())
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0 if report["errors"] == 0 and report.get("lost", 0) == 0 else 1
