"""Speed benchmarks: synthetic data roots, timed; commands (`memory bench ...`), never tests.

What every bench shares: ``BenchError`` (the bench could not run; the message says why),
the ``Progress`` callback and ``items_arg``, the ``--items 10k,100k`` sizes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

Progress = Callable[[str], None]


class BenchError(RuntimeError):
    """The benchmark could not build or read its data root; the message says which."""


def items_arg(values: Sequence[str]) -> list[int]:
    """``--items`` values as sizes: repeated or comma-separated, ``10000``, ``10_000`` or ``10k``."""
    out = []
    for value in values:
        for part in value.split(","):
            part = part.strip().replace("_", "").lower()
            if part:
                out.append(int(float(part[:-1]) * 1000) if part.endswith("k") else int(part))
    return out
