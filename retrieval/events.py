"""Feedback events: the agent's only way to change memory (DESIGN principle 1).

Each event is its own JSON file in ``<data root>/events/``; the pipeline folds them into
items on its next run. An ``injected`` event never counts as a reference: only a
user-confirmed use (``reinforce``) does.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from retrieval.corrections import CORRECTION_TYPES, mirror
from retrieval.inbox import write_event
from retrieval.names import check_session_id
from retrieval.paths import DataRoot
from retrieval.schema import EVENT_TYPES


@dataclass(frozen=True)
class Event:
    type: str
    item_ids: list[str]
    ts: str
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    session_id: str | None = None
    payload: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.type not in EVENT_TYPES:
            raise ValueError(f"event type {self.type!r}; expected one of {', '.join(EVENT_TYPES)}")


def trigger_key(trigger: dict[str, Any]) -> str:
    """A forward trigger's identity: its date and the items it preloads."""
    items = ",".join(sorted(trigger.get("item_ids") or []))
    return hashlib.sha256(f"{trigger['trigger_date']}|{items}".encode()).hexdigest()[:16]


def fired_triggers(paths: DataRoot) -> set[str]:
    """Keys of the triggers already delivered: ``fired`` events not yet folded (their
    file names say the type) and those in the pipeline's event log."""
    keys: set[str] = set()
    if paths.events.exists():
        for file in paths.events.glob("*-fired-*.json"):
            try:
                keys.update(json.loads(file.read_text(encoding="utf-8")).get("payload", {}).get("triggers", []))
            except (OSError, ValueError):
                continue  # a half-read file is read again next time
    log = paths.warehouse / "event_log"
    if log.exists() and any(log.glob("*.parquet")):
        import polars as pl

        fired = pl.scan_parquet(str(log / "*.parquet")).filter(pl.col("type") == "fired").select("payload").collect()
        for payload in fired["payload"].to_list():
            keys.update(json.loads(payload or "{}").get("triggers", []))
    return keys


def record(events_dir: Path, type: str, item_ids: Sequence[str], now: datetime, *,
           session_id: str | None = None, payload: dict[str, Any] | None = None,
           pii: Iterable[str], corrections: Path | None = None) -> Event:
    """Append one event (``retrieval.inbox.write_event``), its payload redacted of
    credentials and the ``pii`` kinds: the config's ``[privacy] redact``
    (``credentials.pii_from_config``), which every caller holding a config passes.
    A correction (forget, update, pin…) is also copied, as stored, to ``corrections``
    (the data root's ``corrections/``), so readers see it at once (``retrieval.corrections``)."""
    event = Event(type=type, item_ids=list(item_ids), ts=now.isoformat(),
                  session_id=None if session_id is None else check_session_id(session_id), payload=payload or {})
    # An ``injected`` event only counts injections (never a reference): it skips the
    # fsync that every other event, the user's feedback, gets; inject stays fast.
    written = write_event(events_dir, asdict(event), pii=pii, durable=type != "injected")
    if corrections is not None and type in CORRECTION_TYPES:
        mirror(corrections, json.loads(written.read_bytes()))  # the redacted event, as stored
    return event
