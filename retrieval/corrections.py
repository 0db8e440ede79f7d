"""The user's word at once: ``forget``, ``update``, ``pin``, ``unpin`` and ``erase`` change
what ``search`` and ``inject`` return from the next call, before any pipeline run.

The one-writer rule holds (DESIGN principle 1): such a feedback event is written to
``events/`` as any other, and only the pipeline folds it into the items. It is also
written, the same redacted JSON under its event id, to ``corrections/``: a small folder
of the corrections not published yet, which the read side lays over the published rows
(``Corrections.apply``) as the pipeline's replay would (``memory_assets.lib.items.feedback``):
a forgotten or erased item reads ``purged``, an updated one its new wording, a pinned
one ``permanent`` and active again. ``events/`` itself is no place to look on every call:
it holds one file per injection until the next run.

When a run publishes the version that folded an event, the event moves into the event
log and its copy here is removed; an erasure scrubs this folder as it does ``events/``.
A copy left behind (a crash between the two) says what the published rows already say.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from retrieval.files import atomic_write
from retrieval.ids import content_hash
from retrieval.moments import parse_utc
from retrieval.paths import DataRoot
from retrieval.schema import AGENT_STATED, agent_written

# The feedback events a reader sees at once (the rest, counters, wait for the run).
CORRECTION_TYPES = ("update", "correction", "forget", "erase", "pin", "unpin")
# Statuses a pin brings back, as the pipeline's replay does.
_PINNED_BACK = ("archived", "cold", "candidate")


def mirror(folder: Path, event: Mapping[str, Any]) -> Path | None:
    """Write ``event`` (already redacted, as stored in ``events/``) to ``folder`` when it
    is a correction; its file, or None for any other type."""
    if event.get("type") not in CORRECTION_TYPES:
        return None
    return atomic_write(folder / f"{event['id']}.json", json.dumps(dict(event), ensure_ascii=False).encode())


def file_of(folder: Path, event_id: str) -> Path:
    """Where the copy of the event ``event_id`` is (``mirror``)."""
    return folder / f"{event_id}.json"


class Corrections:
    """The corrections not published yet under a data root, read again only when the
    folder changed (a stat per call on a disk; on an object store at most every
    ``seconds``, or at once after ``invalidate``, which a writer in this process calls).

    ``tier_for`` (``MemoryConfig.tier_for``) gives an unpinned item its tier back; without
    it an unpin leaves the published tier. Safe to share between threads.
    """

    def __init__(self, paths: DataRoot, tier_for: Callable[[str, str | None], str] | None = None,
                 seconds: float = 1.0):
        self.folder = paths.corrections
        self.is_local, self.tier_for, self.seconds = paths.is_local, tier_for, seconds
        self._key: Any = None
        self._by_item: dict[str, list[dict[str, Any]]] = {}
        self._erased: list[tuple[str, datetime]] = []  # (namespace, erased at)
        self._lock = threading.Lock()

    def invalidate(self) -> None:
        """Read the folder again on the next call (a correction was just written)."""
        self._key = None

    def _current(self) -> tuple[dict[str, list[dict[str, Any]]], list[tuple[str, datetime]]]:
        if self.is_local:
            try:
                key: Any = self.folder.stat().st_mtime_ns  # a file added or removed changes it
            except (FileNotFoundError, NotADirectoryError):
                key = "none"
        else:
            key = ("ttl", int(time.monotonic() / self.seconds))
        if key != self._key:
            with self._lock:
                by_item, erased = self._read()
                self._by_item, self._erased, self._key = by_item, erased, key
        return self._by_item, self._erased

    def _read(self) -> tuple[dict[str, list[dict[str, Any]]], list[tuple[str, datetime]]]:
        events = []
        for file in self.folder.glob("*.json") if self.folder.exists() else []:
            if file.name.startswith("."):
                continue
            try:
                raw = json.loads(file.read_bytes())
                events.append({"type": str(raw["type"]), "item_ids": [str(i) for i in raw.get("item_ids") or []],
                               "ts": parse_utc(raw["ts"]), "payload": dict(raw.get("payload") or {})})
            except (OSError, ValueError, KeyError, TypeError):
                continue  # being written, or scrubbed meanwhile: the pipeline's copy is the truth
        events.sort(key=lambda e: e["ts"])
        by_item: dict[str, list[dict[str, Any]]] = {}
        erased: list[tuple[str, datetime]] = []
        for event in events:
            namespace = event["payload"].get("namespace")
            if event["type"] == "erase" and not event["item_ids"] and isinstance(namespace, str):
                erased.append((namespace, event["ts"]))
            for item_id in event["item_ids"]:
                by_item.setdefault(item_id, []).append(event)
        return by_item, erased

    def __bool__(self) -> bool:
        by_item, erased = self._current()
        return bool(by_item or erased)

    def reworded(self, item_id: str) -> bool:
        """Whether ``item_id`` has a new wording not published yet (a summary line that
        quotes its old one is not served)."""
        return any(e["type"] in ("update", "correction") for e in self._current()[0].get(item_id, ()))

    def apply(self, row: dict[str, Any]) -> dict[str, Any]:
        """``row`` (a copy the caller owns) with the corrections about it, in time order."""
        by_item, erased = self._current()
        for event in by_item.get(row.get("id", ""), ()):
            _replay(row, event, self.tier_for)
        created = row.get("created_at")
        for namespace, at in erased:
            if row.get("namespace") == namespace and created is not None and _utc(created) <= at:
                row["status"] = "purged"
        return row

    def apply_all(self, rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """``apply`` to each of ``rows`` (copies the caller owns); nothing to do is free."""
        rows = list(rows)
        return [self.apply(r) for r in rows] if self else rows

    def touched(self) -> set[str]:
        """The item ids some correction names."""
        return set(self._current()[0])

    def erased(self) -> list[tuple[str, datetime]]:
        """The namespaces erased and when (every item of one created by then is purged)."""
        return list(self._current()[1])


def _utc(value: Any) -> datetime:
    return parse_utc(value) if isinstance(value, str) else value


def _replay(row: dict[str, Any], event: dict[str, Any], tier_for: Callable[[str, str | None], str] | None) -> None:
    """One correction applied to ``row`` as ``memory_assets.lib.items.feedback._replay``
    applies it (the fields read from the new wording wait for the run)."""
    kind, payload, ts = event["type"], event["payload"], event["ts"]
    if kind in ("update", "correction") and payload.get("content"):
        row["content"] = payload["content"]
        row["content_hash"] = content_hash(payload["content"])
        if payload.get("tags") is not None:
            row["tags"] = list(payload["tags"])
        row["provenance"] = AGENT_STATED if agent_written(payload.get("written_by")) else "user_corrected"
        row["updated_at"] = ts
    elif kind in ("forget", "erase"):
        row["status"] = "purged"
        row["updated_at"] = ts
    elif kind == "pin":
        row["tier"] = "permanent"
        if row.get("status") in _PINNED_BACK:
            row["status"] = "active"
        row["updated_at"] = ts
    elif kind == "unpin":
        if tier_for is not None:
            row["tier"] = tier_for(str(row.get("kind")), row.get("category"))
        row["updated_at"] = ts
