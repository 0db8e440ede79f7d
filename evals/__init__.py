"""Evals and benchmarks: the gold set, LoCoMo, and the speed benchmarks behind ``memory eval`` / ``memory bench``."""

from __future__ import annotations

import sys
from collections.abc import Callable


def stderr_progress(label: str) -> Callable[[str], None]:
    """A progress callback for a CLI: ``[label] message`` lines on stderr."""
    def progress(message: str) -> None:
        print(f"[{label}] {message}", file=sys.stderr, flush=True)
    return progress
