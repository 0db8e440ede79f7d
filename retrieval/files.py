"""A file under the data root, written whole or not at all, and named by its time.

The agent side's writers (``retrieval.inbox``, ``retrieval.jobs``, ``retrieval.disabled``)
and the pipeline's warehouse (``memory_assets.lib.warehouse``) write through
``atomic_write``, so no reader ever sees half a file; ``stamp`` is the one time format in
file names (UTC, sortable, to the microsecond).
"""

from __future__ import annotations

import os
import uuid
from datetime import datetime
from pathlib import Path

from retrieval.moments import utc


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> Path:
    """Write ``data`` to ``path`` via a temporary sibling and an atomic rename: a reader
    sees the old file or the new one, never half of one, and a failed write leaves no
    temporary behind. The one local atomic write (``memory_assets.lib.warehouse`` uses it too).

    ``durable``: fsync before the rename, so a power cut cannot leave an empty file
    under the final name (off only for records whose loss costs nothing but a count).

    On an object store (``path`` a ``UPath``) one PUT is already all-or-nothing.
    """
    if not isinstance(path, Path):
        path.write_bytes(data)
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def move(source: Path, target: Path) -> Path | None:
    """Move a file the agent side wrote (a run request once run), creating the target's
    folder; None when it is already gone."""
    if not source.exists():
        return None
    if not isinstance(source, Path):  # an object store: copy, then delete
        source.fs.mv(source.path, target.path)
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, target)
    return target


def stamp(now: datetime) -> str:
    """``now`` for a file name: UTC, sortable, to the microsecond."""
    return utc(now).strftime("%Y%m%dT%H%M%S%fZ")
