"""Ctrl-C during ``memory materialize``: stop cleanly after the step under way.

A step is one Dagster run of ``runner.materialize_pending``: a batch of sessions ingested
or re-extracted, the items built and published, an erasure, a job an agent requested.
Inside ``deferred`` the first Ctrl-C is noted and the step under way runs to its end: its
run executes on a worker thread (``shielded``), where Dagster installs no signal handler
and so never raises the interrupt inside an op halfway — an import of torch cut in the
middle left the process to crash on exit. The command then stops with exit code 130 and
one line naming the last step done. Every step is write–audit–publish (``recovery.py``,
``tests/test_crash_recovery.py``), so the next ``memory materialize`` carries on with
what is left and publishes the items a run never interrupted publishes.

A second Ctrl-C stops at once, as a kill would: the next ``memory`` command recovers the
run it leaves behind (``recovery.recover``).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import TypeVar

T = TypeVar("T")
EXIT_CODE = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C
_JOIN_SECONDS = 0.2  # how soon the main thread, waiting on a step, runs a Ctrl-C's handler


class Stopped(KeyboardInterrupt):
    """Ctrl-C stopped a command between two steps; ``after`` is the last step done."""

    def __init__(self, command: str, after: str | None):
        super().__init__(command, after)
        self.command, self.after = command, after

    def __str__(self) -> str:
        done = f"after {self.after}" if self.after else "before its first step was done"
        return f"memory {self.command}: stopped (Ctrl-C) {done}; run `memory {self.command}` again to continue"


@dataclass
class _Deferral:
    command: str
    requested: bool = False
    current: str | None = None
    done: list[str] = field(default_factory=list)

    @property
    def last(self) -> str | None:
        return self.done[-1] if self.done else None


# The signal handler is the process's, so the deferral in force is too.
_active: _Deferral | None = None


@contextmanager
def deferred(command: str) -> Iterator[None]:
    """Run ``memory <command>`` so that Ctrl-C stops it between steps (raising ``Stopped``);
    a KeyboardInterrupt raised any other way stops it the same way. A no-op off the main
    thread (only it can set a signal handler) and when SIGINT is ignored."""
    global _active
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        yield
        return
    state = _Deferral(command)

    def on_interrupt(_signo: int, _frame: FrameType | None) -> None:
        if state.requested:
            print(f"memory {command}: stopped at once (second Ctrl-C)"
                  + (f" during {state.current}" if state.current else "")
                  + f"; the next `memory {command}` recovers and carries on", file=sys.stderr, flush=True)
            sys.stdout.flush()
            os._exit(EXIT_CODE)  # a kill, which every step survives: no half-run cleanup to wait for
        state.requested = True
        print(f"memory {command}: stopping after {state.current or 'the step under way'} (Ctrl-C again stops at once)",
              file=sys.stderr, flush=True)

    previous = signal.signal(signal.SIGINT, on_interrupt)
    _active = state
    try:
        yield
    except Stopped:
        raise
    except KeyboardInterrupt:
        raise Stopped(command, state.last) from None
    finally:
        _active = None
        signal.signal(signal.SIGINT, previous)


def check() -> None:
    """Raise ``Stopped`` if Ctrl-C came (inside ``deferred``); for waits between steps."""
    if _active is not None and _active.requested:
        raise Stopped(_active.command, _active.last)


@contextmanager
def step(name: str) -> Iterator[None]:
    """One step of the command, named for the message: not started once Ctrl-C came, and
    the command stops after it if Ctrl-C came meanwhile."""
    state = _active
    if state is None:
        yield
        return
    check()
    state.current = name
    try:
        yield
    finally:
        state.current = None
    state.done.append(name)
    check()


def shielded(run: Callable[[], T]) -> T:
    """``run()`` to its end even if Ctrl-C comes meanwhile (inside ``deferred``): on a worker
    thread, which Dagster leaves its signal handlers off, while the main thread waits in
    short joins so that the handler still runs at once. Outside ``deferred``: ``run()``."""
    if _active is None:
        return run()
    outcome: dict[str, object] = {}

    def target() -> None:
        if hasattr(signal, "pthread_sigmask"):
            # Ctrl-C is the main thread's to handle; and the processes the run starts (Dagster's
            # log tails) inherit this mask, so the terminal's Ctrl-C, sent to the whole process
            # group, does not kill them halfway with a traceback each.
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            outcome["value"] = run()
        except BaseException as error:  # noqa: BLE001  (handed to the caller, as if run() had raised in place)
            outcome["error"] = error

    worker = threading.Thread(target=target, name=f"memory-{_active.command}", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(_JOIN_SECONDS)
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]  # type: ignore[return-value]
