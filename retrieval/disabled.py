"""Whether memory is off for a namespace (``memory disable`` / ``memory enable``).

While a namespace's memory is off, nothing is injected into its prompts (``inject``
returns an empty block, tier ``disabled``; ``search`` finds nothing) and nothing it says
is captured: ``flush_session``, ``append_turn`` and ``remember`` write nothing and raise
``MemoryDisabled``. What is stored stays, and stays the user's: listing, showing,
exporting, forgetting and erasing still work.

The flag is a file under the data root, ``settings/disabled.json``, so it survives
restarts and every agent and service process sees it: the operator's CLI writes it
(atomically, ``retrieval.files.atomic_write``), agents only read it.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from retrieval.files import atomic_write
from retrieval.paths import DataRoot

FILE_NAME = "disabled.json"


class MemoryDisabled(RuntimeError):
    """A write for a namespace whose memory is off; nothing was written."""

    def __init__(self, namespace: str):
        super().__init__(f"memory is disabled for {namespace}: nothing was stored "
                         f"(`memory enable --namespace {namespace}` turns it back on)")
        self.namespace = namespace


def _file(paths: DataRoot) -> Path:
    return paths.settings / FILE_NAME


# (file, mtime_ns, size) → its namespaces: inject reads the flag on every call.
_cache: dict[Path, tuple[int, int, dict[str, Any]]] = {}


def disabled_namespaces(paths: DataRoot) -> dict[str, dict[str, Any]]:
    """Namespace → when and by whom its memory was turned off."""
    file = _file(paths)
    try:
        stat = file.stat()
    except FileNotFoundError:
        return {}
    cached = _cache.get(file)
    if cached and cached[:2] == (stat.st_mtime_ns, stat.st_size):
        return cached[2]
    found = dict(json.loads(file.read_text(encoding="utf-8")).get("disabled") or {})
    _cache[file] = (stat.st_mtime_ns, stat.st_size, found)
    return found


def is_disabled(paths: DataRoot, namespace: str | None) -> bool:
    return bool(namespace) and namespace in disabled_namespaces(paths)


def refuse_if_disabled(paths: DataRoot, namespace: str | None) -> None:
    """Raise ``MemoryDisabled`` when ``namespace``'s memory is off."""
    if is_disabled(paths, namespace):
        raise MemoryDisabled(str(namespace))


def set_disabled(paths: DataRoot, namespace: str, disabled: bool, *, now: datetime, by: str | None = None) -> bool:
    """Turn ``namespace``'s memory off (``disabled``) or back on; whether anything changed.
    The operator's write (``memory disable`` / ``memory enable``), never an agent's."""
    if not namespace or namespace == "*":
        raise ValueError("disable and enable take one namespace")
    current = dict(disabled_namespaces(paths))
    if disabled == (namespace in current):
        return False
    if disabled:
        current[namespace] = {"since": now.isoformat(), **({"by": by} if by else {})}
    else:
        current.pop(namespace)
    atomic_write(_file(paths), json.dumps({"disabled": current}, indent=1, sort_keys=True).encode())
    return True
