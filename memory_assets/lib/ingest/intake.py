"""``memory ingest``: validate transcript files and drop each session into the inbox.

A bad line is reported with its file and line and skipped; the rest of the file and
the rest of the batch still go in. Nothing already stored is touched: the inbox only
ever gains new, content-named files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from memory_assets.lib.ingest.transcripts import TranscriptError, parse_transcript
from retrieval.config import load_config
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


def ingest_paths(files: list[Path], data_root: str | Path | None = None, *, fmt: str = "auto") -> IngestReport:
    paths = DataRoot.resolve(data_root)
    cap = int(load_config().ingest.max_message_bytes)
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
            if write_session(paths.inbox, session_id, messages) is not None:
                report.files_written += 1
    return report
