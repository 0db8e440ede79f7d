"""``memory bench signals``: how long the per-turn signal scan takes (target < 10 ms a turn).

Scans every turn of the LoCoMo conversations (``../shared/datasets/locomo``, or
``MEMORY_LOCOMO_DIR``), and the same turns padded to ``--long-chars`` (a pasted log; default
the most ``append_turn`` scans of a turn), with ``retrieval.agent.signals.scan`` as ``append_turn`` calls it, and reports p50 / p95 / max per turn
and how many turns fired a high signal.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from evals.locomo import default_dir
from retrieval.agent import signals
from retrieval.agent.sessions import SCANNED_CHARS
from retrieval.config import MemoryConfig, load_config
from retrieval.credentials import pii_from_config


def _turns() -> list[str]:
    texts: list[str] = []
    for path in sorted(default_dir().glob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        conversation = doc.get("conversation", doc)
        for key, value in conversation.items():
            if key.startswith("session_") and isinstance(value, list):
                texts += [str(turn.get("text", "")) for turn in value if isinstance(turn, dict)]
    return [t for t in texts if t]


def _time(texts: list[str], pii: tuple[str, ...]) -> tuple[dict[str, float], int]:
    seconds, high = [], 0
    for text in texts:
        start = time.perf_counter()
        found = signals.scan(text, pii=pii)
        seconds.append(time.perf_counter() - start)
        high += bool(signals.HIGH_SIGNALS & found)
    ms = np.asarray(seconds) * 1000.0
    return {"p50": round(float(np.percentile(ms, 50)), 3), "p95": round(float(np.percentile(ms, 95)), 3),
            "max": round(float(ms.max()), 3)}, high


def run(long_chars: int, config: MemoryConfig) -> dict[str, Any]:
    pii = pii_from_config(config)
    texts = _turns()
    short, high = _time(texts, pii)
    padded = [(t + " ") * max(1, long_chars // max(len(t) + 1, 1)) for t in texts[:200]]
    long, _ = _time([p[:long_chars] for p in padded], pii)
    return {"turns": len(texts), "ms_per_turn": short, "high_signal_turns": high,
            "long_turns": len(padded), "long_chars": long_chars, "ms_per_long_turn": long}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="memory bench signals", description=__doc__.split("\n\n")[0])
    parser.add_argument("--long-chars", type=int, default=SCANNED_CHARS,
                        help=f"length of the padded turns (default {SCANNED_CHARS}: what append_turn scans at most)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = run(args.long_chars, load_config())
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        s, lt = report["ms_per_turn"], report["ms_per_long_turn"]
        print(f"signal scan: {report['turns']} LoCoMo turns, p50 {s['p50']} ms, p95 {s['p95']} ms, max {s['max']} ms "
              f"({report['high_signal_turns']} high-signal); {report['long_turns']} turns of "
              f"{report['long_chars']:,} characters: p50 {lt['p50']} ms, p95 {lt['p95']} ms, max {lt['max']} ms")
    return 0
