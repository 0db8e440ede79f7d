"""Which inbox files the pipeline has not read yet.

Inbox files are immutable and content-named; the ``resources`` asset leaves a marker
in the ingest ledger for each file it has read, so "pending" is a set difference that
the sensor and the CLI compute the same way.
"""

from __future__ import annotations

from pathlib import Path

from retrieval.paths import DataRoot
from memory_assets.lib import warehouse


def inbox_files(paths: DataRoot) -> dict[str, list[Path]]:
    """session id → its inbox files, oldest first (temporary files are skipped)."""
    out: dict[str, list[Path]] = {}
    if not paths.inbox.exists():
        return out
    for session_dir in sorted(p for p in paths.inbox.iterdir() if p.is_dir()):
        files = [f for f in session_dir.glob("*.jsonl") if not f.name.startswith(".")]
        if files:
            out[session_dir.name] = sorted(files, key=lambda f: (f.stat().st_mtime_ns, f.name))
    return out


def _marker(paths: DataRoot, session_id: str, file: Path) -> Path:
    return paths.ingest_ledger / session_id / f"{file.name}.done"


def is_consumed(paths: DataRoot, session_id: str, file: Path) -> bool:
    return warehouse.exists(_marker(paths, session_id, file))


def mark_consumed(paths: DataRoot, session_id: str, file: Path) -> None:
    warehouse.write_bytes(_marker(paths, session_id, file), b"", durable=False)


def pending_files(paths: DataRoot) -> dict[str, list[Path]]:
    """session id → inbox files not yet read into ``resources``."""
    pending: dict[str, list[Path]] = {}
    for session_id, files in inbox_files(paths).items():
        todo = [f for f in files if not is_consumed(paths, session_id, f)]
        if todo:
            pending[session_id] = todo
    return pending
