"""What redaction takes from conversations that hold no secret: ``memory bench redaction``.

Every turn of the LoCoMo files (default: the shared ones) is redacted as a message is
where it first enters (credentials, and the ``[privacy] redact`` kinds); LoCoMo holds no
credential, so each turn changed is a false positive. The report gives the turns changed
(the facts read from them can change no more often), the share, what each was taken for,
and the µs a turn took. The target is at most 0.5 % of turns changed.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Sequence

TARGET = 0.005


def run(paths: Sequence[str], pii: Sequence[str]) -> dict:
    from evals.locomo import expand_datasets, load_conversation
    from retrieval.credentials import find_credentials

    turns = [text for path in expand_datasets(paths) for text in load_conversation(path).turns.values()]
    started = time.perf_counter()
    found = [find_credentials(text, pii=pii) for text in turns]
    elapsed = time.perf_counter() - started
    changed = [(text, matches) for text, matches in zip(turns, found) if matches]
    kinds = Counter(m.kind for _, matches in changed for m in matches)
    return {"turns": len(turns), "changed": len(changed), "share": round(len(changed) / max(len(turns), 1), 5),
            "target": TARGET, "met": len(changed) / max(len(turns), 1) <= TARGET, "kinds": dict(kinds),
            "us_per_turn": round(elapsed / max(len(turns), 1) * 1e6, 1), "pii": list(pii),
            "examples": [text[max(m.start - 30, 0):m.end + 10] for text, matches in changed[:10] for m in matches[:1]]}


def main(argv: Sequence[str] | None = None) -> int:
    from evals.locomo import default_dir
    from retrieval.config import load_config
    from retrieval.credentials import pii_from_config

    parser = argparse.ArgumentParser(prog="memory bench redaction", description=__doc__)
    parser.add_argument("--dataset", nargs="+", default=None, help="LoCoMo files (default: the shared ones)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    report = run(args.dataset or [str(default_dir())], pii_from_config(load_config()))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{report['changed']} of {report['turns']} turns changed ({report['share']:.2%}; target ≤ "
              f"{TARGET:.1%}: {'met' if report['met'] else 'NOT met'}), {report['us_per_turn']} µs a turn")
        for kind, n in sorted(report["kinds"].items(), key=lambda kv: -kv[1]):
            print(f"  {kind}: {n}")
        for example in report["examples"]:
            print(f"  … {example!r}")
    return 0 if report["met"] else 1
