"""``memory bench coldstart``: how long a fresh process takes to answer, as a hook pays it
on every prompt (targets: ``memory inject`` in process ≤ 2 s; with ``MEMORY_URL`` ≤ 200 ms).

On a copy of a published data root (``--data-root``, default: the samples ingested and
materialized into a temporary root), each measured command is a new process, run
``--runs`` times after one unmeasured run (the OS file cache warm, as on a working
machine): ``memory inject`` in process; ``memory inject`` with ``MEMORY_URL`` against a
running ``memory serve``; and the Claude Code hook (``memory hooks run claude-code``) on
a ``UserPromptSubmit`` event, both ways. Reports the median and the slowest, in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evals.bench.serving import create_key, service_env, start
from retrieval.config import load_config

QUESTION = "When is my WRX oil change due?"
SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"


def _memory(*args: str) -> list[str]:
    return [sys.executable, "-m", "memory_assets.cli", *args]


def _timed(argv: list[str], env: dict[str, str], runs: int, stdin: bytes | None = None) -> dict[str, Any]:
    seconds = []
    for n in range(runs + 1):
        start = time.perf_counter()
        done = subprocess.run(argv, env=env, input=stdin, capture_output=True, timeout=300)
        took = time.perf_counter() - start
        if done.returncode != 0 or b"11,799" not in done.stdout:
            raise RuntimeError(f"{' '.join(argv[2:])} failed ({done.returncode}): "
                               f"{done.stdout[-500:]!r} {done.stderr[-1500:]!r}")
        if n:  # the first run warms the file cache
            seconds.append(took)
    return {"median_s": round(statistics.median(seconds), 3), "max_s": round(max(seconds), 3), "runs": runs}


def _built(folder: Path) -> Path:
    root = folder / "data"
    env = service_env()
    for step in (["ingest", *map(str, sorted(SAMPLES.iterdir()))], ["materialize", "--quiet"]):
        subprocess.run(_memory("--data-root", str(root), *step), env=env, check=True, capture_output=True)
    return root


def run(data_root: Path | None, runs: int, namespace: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="coldstart-") as tmp:
        folder = Path(tmp)
        if data_root is None:
            root = _built(folder)
        else:
            root = folder / "data"
            shutil.copytree(data_root, root)
        event = json.dumps({"session_id": "bench", "hook_event_name": "UserPromptSubmit", "cwd": str(folder),
                            "transcript_path": str(folder / "none.jsonl"), "prompt": QUESTION}).encode()
        local = {**service_env(), "MEMORY_DATA_ROOT": str(root)}
        out: dict[str, Any] = {
            "inject_in_process": _timed(_memory("inject", "--context", QUESTION), local, runs),
            "hook_in_process": _timed(_memory("hooks", "run", "claude-code"), local, runs, stdin=event),
        }
        key = create_key(root, namespace)  # the samples' namespace
        server = start(root, key, workers=1)
        try:
            remote = {**service_env(), "MEMORY_URL": f"http://127.0.0.1:{server.port}", "MEMORY_API_KEY": key}
            remote.pop("MEMORY_DATA_ROOT", None)
            out["inject_memory_url"] = _timed(_memory("inject", "--context", QUESTION), remote, runs)
            out["hook_memory_url"] = _timed(_memory("hooks", "run", "claude-code"), remote, runs, stdin=event)
        finally:
            server.stop()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="memory bench coldstart", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", type=Path, default=None,
                        help="a published data root to copy (default: the samples, built in a temporary root)")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result = run(args.data_root, max(1, args.runs), load_config().default_namespace)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for name, figures in result.items():
            print(f"{name:20s} median {figures['median_s']:.3f} s, slowest {figures['max_s']:.3f} s "
                  f"({figures['runs']} runs)")
    return 0
