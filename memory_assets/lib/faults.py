"""Crash points for the recovery tests: ``MEMORY_CRASH_AT=<name>`` kills the process there.

The pipeline's crash safety (nothing lost or duplicated, the agent keeps reading the
last published version, the next run completes) is specified by killing a real
``memory materialize`` with SIGKILL at each stage (``tests/test_crash_recovery.py``).
Unset, ``crash_point`` does nothing.
"""

from __future__ import annotations

import os
import signal

POINTS = ("ingest", "extraction", "items_write", "publish")


def crash_point(name: str) -> None:
    """SIGKILL this process when ``MEMORY_CRASH_AT`` names this point (tests only)."""
    if os.environ.get("MEMORY_CRASH_AT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
