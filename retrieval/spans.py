"""Timing spans: ``with timed("consolidate"):`` or ``@spanned("consolidate")``.

A span costs one check when no recorder is installed (production), and records its
label, start, wall and CPU seconds when one is (``memory bench nightly`` installs one
around a Dagster run executed in-process). The pipeline marks its own expensive steps,
so a benchmark times them without reaching into the code it measures.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Recorder:
    """(label, wall start, wall seconds, CPU seconds) per finished span."""

    calls: list[tuple[str, float, float, float]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, label: str, start: float, wall: float, cpu: float) -> None:
        with self._lock:
            self.calls.append((label, start, wall, cpu))

    def clear(self) -> None:
        with self._lock:
            self.calls.clear()


_recorder: Recorder | None = None


@contextlib.contextmanager
def recording(recorder: Recorder) -> Iterator[Recorder]:
    """Record every span in this process for the duration of the block."""
    global _recorder
    previous, _recorder = _recorder, recorder
    try:
        yield recorder
    finally:
        _recorder = previous


@contextlib.contextmanager
def timed(label: str) -> Iterator[None]:
    """Time the block as ``label`` if a recorder is installed; otherwise nothing."""
    recorder = _recorder
    if recorder is None:
        yield
        return
    start, start_cpu = time.time(), time.process_time()
    try:
        yield
    finally:
        recorder.add(label, start, time.time() - start, time.process_time() - start_cpu)


def spanned(label: str) -> Callable[[F], F]:
    """Decorate a function so each call is a ``timed(label)`` span."""
    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if _recorder is None:
                return fn(*args, **kwargs)
            with timed(label):
                return fn(*args, **kwargs)
        return wrapper  # type: ignore[return-value]
    return decorate
