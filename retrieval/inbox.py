"""The agent's only way in: append a transcript or an event as a new file.

Every write goes to a temporary name in the same directory and is renamed into place,
so the pipeline never sees half a file (DESIGN principle 1). Nothing here opens a store.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from retrieval.credentials import redact


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> Path:
    """Write ``data`` to ``path`` via a temporary sibling and an atomic rename.

    ``durable``: fsync before the rename, so a power cut cannot leave an empty file
    under the final name (off only for records whose loss costs nothing but a count).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        if durable:
            fh.flush()
            os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path


def encode_jsonl(messages: Iterable[Mapping[str, Any]]) -> bytes:
    return "".join(json.dumps(m, ensure_ascii=False, sort_keys=True) + "\n" for m in messages).encode()


def write_session(inbox: Path, session_id: str, messages: list[Mapping[str, Any]]) -> Path | None:
    """Drop one session's canonical messages into the inbox.

    Credentials are redacted here, so they never reach the data root at all. The file
    is named by its content hash, so dropping the same transcript twice writes nothing
    new. Returns the path, or None when the file was already there.
    """
    data = encode_jsonl({**m, "content": redact(str(m.get("content", "")))} for m in messages)
    digest = hashlib.sha256(data).hexdigest()[:16]
    path = inbox / session_id / f"{digest}.jsonl"
    if path.exists():
        return None
    return atomic_write(path, data)


def write_event(events_dir: Path, event: Mapping[str, Any], *, durable: bool = True) -> Path:
    """Append one feedback event as its own file (never a shared log)."""
    name = f"{event.get('ts', '')}-{uuid.uuid4().hex}.json".replace(":", "")
    return atomic_write(events_dir / name, json.dumps(event, ensure_ascii=False).encode(), durable=durable)
