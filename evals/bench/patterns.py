"""Whether every credential pattern runs in linear time: ``memory bench patterns``.

Python's ``re`` backtracks, so a pattern can take time growing with the square of its
input (or worse) on text made for it. For each pattern that runs on user text
(``retrieval.credentials``: the shapes, the context rules, the personal data, the
everyday phrasings; ``retrieval.secret_phrases``: the decoders), a worst case is
generated from the pattern's own material: each unit (a letter, a digit run, a
separator, a space, each anchor of its kind, an anchor followed by a separator) repeated
to two lengths, and the pattern run over both. A pattern is linear when its µs per
character does not grow from the short text to the long one; the report gives each
pattern's worst unit and its growth (1.0 is linear; the target is ≤ 2.0 from 4,000 to
32,000 characters, where quadratic work would read 8.0), then ``find_credentials`` end
to end on the same units.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable, Sequence

BASE_UNITS = ("a", "aA1", "1", " ", "\t", "\n", "-", "_", "=", ":", ".", "/", "@", "%41", "a ", "a.", "a-", "a=",
              "a:", "a/", "1-", "1 ", "Ab1.", "'", '"', "+", "~")
TARGET = 2.0


def _text(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def _seconds(run: Callable[[str], object], text: str, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run(text)
        best = min(best, time.perf_counter() - started)
    return best


def patterns() -> list[tuple[str, re.Pattern[str], tuple[str, ...]]]:
    """(name, pattern, anchors) of every pattern the redaction runs on user text."""
    from retrieval import credentials, secret_phrases

    out = [(f"{rule.kind}#{i}", rule.pattern, credentials.ANCHORS.get(rule.kind, ()))
           for i, (_, rule) in enumerate(credentials._ALL_RULES)]
    out += [("discord_token#unnamed", secret_phrases._DISCORD, ()), ("encoded#base64", secret_phrases._BASE64, ()),
            ("encoded#url_run", secret_phrases._URL_RUN, ()), ("encoded#escape", secret_phrases._ESCAPE, ())]
    return out


def growth(run: Callable[[str], object], units: Sequence[str], sizes: tuple[int, int],
           repeats: int) -> tuple[float, str, float]:
    """(the worst growth of µs per character from the short text to the long one, its
    unit, µs per character of the long text) over ``units``."""
    worst = (0.0, "", 0.0)
    short, long = sizes
    for unit in units:
        a = _seconds(run, _text(unit, short), repeats) / short
        b = _seconds(run, _text(unit, long), repeats) / long
        ratio = b / a if a > 0 else 1.0
        if ratio > worst[0]:
            worst = (ratio, unit, b * 1e6)
    return worst


def run(sizes: tuple[int, int] = (4000, 32000), repeats: int = 5) -> dict:
    from retrieval.credentials import PII_KINDS, find_credentials

    rows = []
    all_anchors: set[str] = set()
    for name, pattern, anchors in patterns():
        units = [*BASE_UNITS, *anchors, *(a + " " for a in anchors), *(a + "=" for a in anchors),
                 *(a + ": " for a in anchors), *(a + " is " for a in anchors), *(a + "1" for a in anchors)]
        all_anchors.update(anchors)
        ratio, unit, us = growth(lambda t, p=pattern: list(p.finditer(t)), units, sizes, repeats)
        rows.append({"pattern": name, "growth": round(ratio, 2), "worst_unit": unit, "us_per_char": round(us, 3)})
    end_units = [*BASE_UNITS, *sorted(all_anchors), *(a + " " for a in sorted(all_anchors))]
    ratio, unit, us = growth(lambda t: find_credentials(t, pii=PII_KINDS), end_units, sizes, 3)
    worst = max(rows, key=lambda r: r["growth"])
    return {"sizes": list(sizes), "target": TARGET, "patterns": len(rows),
            "met": worst["growth"] <= TARGET and ratio <= TARGET, "worst": worst,
            "end_to_end": {"growth": round(ratio, 2), "worst_unit": unit, "us_per_char": round(us, 3)},
            "rows": sorted(rows, key=lambda r: -r["growth"])}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="memory bench patterns", description=__doc__)
    parser.add_argument("--sizes", default="4000,32000", help="the short and the long length")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    short, long = (int(s) for s in args.sizes.split(","))
    report = run((short, long))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        w, e = report["worst"], report["end_to_end"]
        print(f"{report['patterns']} patterns; worst growth ×{w['growth']} ({w['pattern']} on {w['worst_unit']!r}); "
              f"find_credentials ×{e['growth']} on {e['worst_unit']!r}, {e['us_per_char']} µs/char: "
              f"{'met' if report['met'] else 'NOT met'} (target ≤ ×{TARGET})")
        for row in report["rows"][:10]:
            print(f"  ×{row['growth']:<6} {row['pattern']:<28} {row['worst_unit']!r} {row['us_per_char']} µs/char")
    return 0 if report["met"] else 1
