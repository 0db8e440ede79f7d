"""A transcript's way in: ``memory ingest`` drops each session into the inbox
(``ingest_paths``), and ``store_session`` turns a session's unread inbox files into
stored turns (the ``resources`` asset, one Dagster partition per session, and the evals'
in-process builds).

A bad line is reported with its file and line and skipped; the rest of the file and
the rest of the batch still go in. Nothing already stored is touched: the inbox only
ever gains new, content-named files, and a turn is stored once under its content hash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from memory_assets.lib import warehouse
from memory_assets.lib.ingest.transcripts import TranscriptError, parse_transcript
from memory_assets.lib.ingest.turns import new_turns
from retrieval.config import MemoryConfig
from retrieval.credentials import pii_from_config
from retrieval.files import stamp
from retrieval.ignored_files import withhold_transcript
from retrieval.inbox import write_session
from retrieval.paths import DataRoot


@dataclass
class IngestReport:
    files_read: int = 0
    files_written: int = 0
    messages: int = 0
    sessions: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"files_read": self.files_read, "files_written": self.files_written,
                "messages": self.messages, "sessions": self.sessions, "errors": self.errors}


def ingest_paths(files: list[Path], data_root: str | Path | None, config: MemoryConfig, *,
                 fmt: str = "auto") -> IngestReport:
    """``memory ingest``: each session of ``files`` into the inbox under ``data_root``, its
    messages capped at ``[ingest] max_message_bytes`` and redacted of the ``[privacy]
    redact`` kinds of ``config``; a bad file or line is reported, the rest go in."""
    paths = DataRoot.resolve(data_root)
    cap = int(config.ingest.max_message_bytes)
    pii = pii_from_config(config)
    report = IngestReport()
    for file in files:
        try:
            parsed = parse_transcript(file, fmt, max_message_bytes=cap)
        except TranscriptError as exc:
            report.errors.append(str(exc))
            continue
        report.files_read += 1
        report.errors.extend(str(e) for e in parsed.errors)
        for session_id, messages in parsed.sessions().items():
            report.messages += len(messages)
            if session_id not in report.sessions:
                report.sessions.append(session_id)
            messages = withhold_transcript(messages, config.privacy.secret_files)
            if write_session(paths.inbox, session_id, messages, pii=pii,
                             default_namespace=config.default_namespace) is not None:
                report.files_written += 1
    return report


# --- which inbox files are unread ----------------------------------------------------------
#
# Inbox files are immutable and content-named; ``store_session`` leaves a marker in the
# ingest ledger for each file it has read, so "pending" is a set difference that the
# sensor, the CLI and the evals compute the same way.

def _session_files(session_dir: Path) -> list[Path]:
    """One session's inbox files, oldest first (temporary files are skipped)."""
    files = [f for f in session_dir.glob("*.jsonl") if not f.name.startswith(".")]
    return sorted(files, key=lambda f: (f.stat().st_mtime_ns, f.name))


def inbox_files(paths: DataRoot) -> dict[str, list[Path]]:
    """session id → its inbox files, oldest first."""
    out: dict[str, list[Path]] = {}
    if not paths.inbox.exists():
        return out
    for session_dir in sorted(p for p in paths.inbox.iterdir() if p.is_dir()):
        if files := _session_files(session_dir):
            out[session_dir.name] = files
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
        if todo := _unread(paths, session_id, files):
            pending[session_id] = todo
    return pending


def _unread(paths: DataRoot, session_id: str, files: list[Path]) -> list[Path]:
    return [f for f in files if not is_consumed(paths, session_id, f)]


# --- storing a session's turns --------------------------------------------------------------

@dataclass
class StoredTurns:
    """What one session's unread inbox files added to the stored turns."""

    new_turns: int
    total_turns: int
    files_read: int
    errors: list[str]
    credentials_redacted: int


def store_session(paths: DataRoot, session_id: str, config: MemoryConfig, now: datetime) -> StoredTurns:
    """Store the new turns of ``session_id``'s unread inbox files (credentials redacted),
    log the lines that could not be read, and mark the files consumed."""
    stored = warehouse.resource_ids(paths, [session_id]).to_list()
    # This session's folder only: a run per session must not scan every session's inbox.
    folder = paths.inbox / session_id
    files = _unread(paths, session_id, _session_files(folder)) if folder.is_dir() else []
    found = new_turns(files, session_id, stored, max_message_bytes=int(config.ingest.max_message_bytes),
                      pii=pii_from_config(config), now=now)
    if found.frame.height:
        warehouse.write_frame(paths.resources / session_id / found.part_name, found.frame)
        warehouse.crash_point("ingest")
    if found.errors:
        warehouse.write_json(paths.ingest_errors / f"{session_id}-{stamp(now)}.json", found.errors, indent=1)
    for file in files:
        mark_consumed(paths, session_id, file)
    return StoredTurns(found.frame.height, len(set(stored)) + found.frame.height, len(files), found.errors,
                       int(found.redacted))
