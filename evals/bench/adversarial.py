"""How the offline extractor's time grows on text made to be slow: ``memory bench adversarial``.

Each input repeats one unit (a run of tabs, of line breaks, of ", so ", of "a-", of
"what is it, ", …) to each length asked, in one user turn, and times
``OfflineExtractor.extract`` on it. A rule whose time grows with the square of its input
shows as microseconds per character rising with the length; linear work holds it level.
The units are the worst cases a scan of every pattern the extractor applies to user text
found (a pattern times a generated string of each unit at two lengths): runs of
whitespace, a word run with no end, a clause list, a question tail. The report is one row
per unit: seconds and µs per character at each length, and the growth of µs per
character from the shortest to the longest (1.0 is linear).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from datetime import datetime, timezone

from retrieval.config import MemoryConfig

UNITS = {
    "tabs": "\t", "line breaks": "\n", "spaces and breaks": " \n", "clause list": ", so ", "hyphen run": "a-",
    "comma list": "a, ", "capitalised words": "Aa ", "possessives": "my ", "questions": "what is it, ",
    "change words": "I moved to Denver and ", "full stops": "a. ",
}


def run(sizes: Sequence[int], config: MemoryConfig, units: dict[str, str] | None = None) -> list[dict]:
    """One row per unit: ``seconds`` and ``us_per_char`` at each size, and ``growth``."""
    from memory_assets.lib.extraction.offline import OfflineExtractor
    from retrieval.schema import Turn

    extractor = OfflineExtractor(config)
    now = datetime(2026, 3, 1, tzinfo=timezone.utc)
    rows = []
    for name, unit in (units or UNITS).items():
        seconds = []
        for size in (min(sizes), *sizes):  # the first, untimed, loads what the unit's text needs
            text = "I think " + (unit * (size // len(unit) + 1))[:size] + " ok?"
            started = time.perf_counter()
            extractor.extract([Turn("adversarial", 1, "user", text, now, "Ann")])
            seconds.append(time.perf_counter() - started)
        seconds = seconds[1:]
        per_char = [s / n * 1e6 for s, n in zip(seconds, sizes)]
        rows.append({"unit": name, "sizes": list(sizes), "seconds": [round(s, 3) for s in seconds],
                     "us_per_char": [round(u, 1) for u in per_char],
                     "growth": round(per_char[-1] / max(per_char[0], 0.05), 2)})
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="memory bench adversarial", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="4000,16000,64000", help="characters per input (default 4000,16000,64000)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    from retrieval.config import load_config

    sizes = [int(s) for s in args.sizes.split(",")]
    rows = run(sizes, load_config())
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for row in rows:
            cells = "  ".join(f"{n:>7,}: {s:6.2f} s {u:6.1f} µs/char"
                              for n, s, u in zip(row["sizes"], row["seconds"], row["us_per_char"]))
            print(f"{row['unit']:18s} {cells}  growth ×{row['growth']}")
    return 0
