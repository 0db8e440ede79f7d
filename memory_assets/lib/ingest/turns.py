"""Inbox files to resource rows: one row per new turn, credentials redacted first.

``new_turns`` reads a session's pending inbox files and returns the turns not stored
yet (by content hash: the same turn handed over twice is one resource), the errors
that name their file and line, and how many turns held a credential. It writes
nothing; the ``resources`` asset stores what it returns.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import polars as pl

from memory_assets.lib.ingest.transcripts import parse_transcript
from retrieval.credentials import redact
from retrieval.moments import parse_utc
from retrieval.schema import RESOURCE_SCHEMA


def resource_id(message: dict) -> str:
    """Content hash of a turn: the same turn handed over twice is one resource."""
    key = "\x1f".join(str(message[k]) for k in ("session_id", "turn", "role", "speaker", "ts", "content"))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


@dataclass
class NewTurns:
    frame: pl.DataFrame
    errors: list[str] = field(default_factory=list)
    redacted: int = 0

    @property
    def part_name(self) -> str:
        """The Parquet part these rows are stored as (named by their ids: a retry rewrites it)."""
        digest = hashlib.sha256("".join(self.frame["resource_id"].to_list()).encode()).hexdigest()[:16]
        return f"part-{digest}.parquet"


def new_turns(files: Sequence[Path], session_id: str, stored: Iterable[str], *, max_message_bytes: int,
              pii: Sequence[str], now: datetime) -> NewTurns:
    """The turns of ``files`` (canonical JSONL inbox files of ``session_id``) whose
    resource id is not in ``stored``, redacted for credentials and the ``pii`` kinds."""
    seen = set(stored)
    rows: list[dict] = []
    out = NewTurns(pl.DataFrame(schema=RESOURCE_SCHEMA))
    for file in files:
        parsed = parse_transcript(file, "jsonl", max_message_bytes=max_message_bytes)
        out.errors.extend(str(e) for e in parsed.errors)
        for message in parsed.messages:
            if message["session_id"] != session_id:
                out.errors.append(f"{file}: turn {message['turn']} belongs to session {message['session_id']!r}, "
                                  f"not {session_id!r}")
                continue
            clean = redact(message["content"], pii=pii)
            out.redacted += clean != message["content"]
            message = {**message, "content": clean}
            rid = resource_id(message)
            if rid in seen:
                continue
            seen.add(rid)
            rows.append({
                "resource_id": rid, "session_id": session_id, "turn": message["turn"],
                "external_id": message.get("external_id"), "role": message["role"],
                "speaker": message["speaker"], "content": clean,
                "content_at": parse_utc(message["ts"]), "trust": message["trust"],
                "source_format": message.get("source_format", "jsonl"), "source_file": file.name, "ingested_at": now,
                "namespace": message.get("namespace"), "project": message.get("project"),
                "written_by": message.get("written_by"),
            })
    out.frame = pl.DataFrame(rows, schema=RESOURCE_SCHEMA)
    return out
