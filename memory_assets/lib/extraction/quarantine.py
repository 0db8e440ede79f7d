"""Sessions whose extraction failed, kept with the raw response and the reason.

A quarantined session is never dropped: the record stays open until a later run
extracts the session, then moves to ``resolved/`` (kept, for the audit trail).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from memory_assets.lib import warehouse
from retrieval.files import stamp
from retrieval.paths import DataRoot


def put(paths: DataRoot, session_id: str, *, reason: str, raw_response: str | None,
        attempts: int, extractor: str, now: datetime, retry: bool = True) -> Path:
    """An open record; ``retry``: whether ``quarantine_retry_sensor`` runs the session again
    (not for one over its time budget, which would only spend the budget again)."""
    record = {
        "session_id": session_id, "reason": reason, "raw_response": raw_response,
        "attempts": attempts, "extractor": extractor, "quarantined_at": now.isoformat(), "retry": retry,
    }
    return warehouse.write_json(paths.quarantine / session_id / f"{stamp(now)}.json", record, indent=1)


def open_records(paths: DataRoot, session_id: str | None = None) -> list[dict[str, Any]]:
    root = paths.quarantine
    if not root.exists():
        return []
    folders = [root / session_id] if session_id else [p for p in root.iterdir() if p.is_dir()]
    records = []
    for folder in folders:
        for f in sorted(folder.glob("*.json")):
            records.append({**json.loads(f.read_text()), "path": str(f)})
    return records


def quarantined_sessions(paths: DataRoot) -> list[str]:
    return sorted({r["session_id"] for r in open_records(paths)})


def resolve(paths: DataRoot, session_id: str) -> int:
    """Close a session's open records after a successful extraction."""
    folder = paths.quarantine / session_id
    if not folder.exists():
        return 0
    done = folder / "resolved"
    moved = 0
    for f in folder.glob("*.json"):
        done.mkdir(exist_ok=True)
        warehouse.move(f, done / f.name)
        moved += 1
    return moved
