"""Builders the tests share: a fact row, a transcript file, what a data root publishes.

One home for each, instead of a copy per test file: a fact row gains a column in one place
when the schema does.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import polars as pl

from retrieval.ids import content_hash
from retrieval.paths import DataRoot
from retrieval.store import ItemStore

T0 = datetime(2026, 9, 1, 9, tzinfo=timezone.utc)
WRX = ("I drive a 2019 Subaru WRX.", "My WRX oil change is due at 11,799 miles.")


def fact(fid: str, content: str, *, at: datetime = T0, session: str = "s1", turns: list[str] | None = None,
         **overrides) -> dict:
    """One extracted fact as ``FACT_SCHEMA`` holds it: a trusted, explicit, global fact
    the user stated in ``session``; any column can be overridden by name."""
    row = {
        "id": fid, "content": content, "category": "vehicle", "kind": "fact", "memory_kind": "note",
        "tags": [], "entities": [], "importance": 0.8, "confidence": 0.9, "strength": "explicit",
        "sentiment": "neutral", "tier": "standard", "scope": "global", "namespace": "default",
        "source_trust": "trusted", "provenance": "user_stated", "source_session": session,
        "source_resource_ids": [f"r-{fid}"], "source_turn_ids": turns or [f"{session}:1"],
        "supersedes_hint": None, "content_hash": content_hash(content), "created_at": at,
        "prompt_version": "test", "extractor": "offline",
    }
    return {**row, **overrides}


def turns(lines: list[str] | tuple[str, ...], *, session_id: str | None = None, start: datetime = T0,
          day: int = 0, role: str = "user", **extra) -> list[dict]:
    """Canonical transcript messages, one a minute from ``start`` + ``day`` days, turn numbers from 1;
    ``extra`` (``speaker``, ``namespace``…) goes on every message."""
    at = start + timedelta(days=day)
    head = {"session_id": session_id} if session_id is not None else {}
    return [{**head, "turn": i, "role": role, "content": text, "ts": (at + timedelta(minutes=i)).isoformat(), **extra}
            for i, text in enumerate(lines, start=1)]


def write_transcript(path: Path, session_id: str, lines: list[str] | tuple[str, ...] = WRX, *, day: int = 0,
                     start: datetime = T0, **extra) -> Path:
    """A canonical JSONL transcript of ``lines`` said by the user in ``session_id``."""
    path.write_text("".join(json.dumps(m) + "\n" for m in turns(lines, session_id=session_id, start=start,
                                                               day=day, **extra)), encoding="utf-8")
    return path


def published_items(root: Path | DataRoot) -> pl.DataFrame:
    """The items an agent reads now (the published snapshot)."""
    return ItemStore(root if isinstance(root, DataRoot) else DataRoot.resolve(root)).items()


def item_rows(root: Path | DataRoot) -> list[tuple[str, str, str]]:
    """(id, content, status) of every published item, sorted: two roots that published the
    same memory compare equal."""
    frame = published_items(root)
    return sorted(zip(frame["id"].to_list(), frame["content"].to_list(), frame["status"].to_list()))
