"""A memory's history, read-only: the turns it came from, the feedback about it, and the
items it replaced or that replaced it (``MemoryClient.history``).

Every read here is of files the pipeline or an agent already wrote: resources (the raw
turns, append-only), events not folded yet (``events/``) and the compacted event log.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import polars as pl

from retrieval.paths import DataRoot


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def sources_of(paths: DataRoot, resource_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The stored turns with these resource ids, in session and turn order."""
    if not resource_ids or not paths.resources.exists():
        return []
    parts = sorted(paths.resources.glob("*/part-*.parquet"))
    if not parts:
        return []
    wanted = list(dict.fromkeys(resource_ids))
    frame = (pl.scan_parquet([str(p) for p in parts]).filter(pl.col("resource_id").is_in(wanted))
             .select("resource_id", "session_id", "turn", "role", "speaker", "content", "content_at", "trust")
             .collect().sort("session_id", "turn"))
    return [{k: _iso(v) for k, v in row.items()} for row in frame.to_dicts()]


def events_about(paths: DataRoot, item_id: str) -> list[dict[str, Any]]:
    """Every feedback event naming ``item_id``: compacted ones and those not folded yet."""
    found: dict[str, dict[str, Any]] = {}
    log = paths.warehouse / "event_log"
    if log.exists() and any(log.glob("*.parquet")):
        frame = (pl.scan_parquet(str(log / "*.parquet")).filter(pl.col("item_ids").list.contains(item_id))
                 .select("id", "type", "ts", "session_id", "payload").collect())
        for row in frame.to_dicts():
            found[row["id"]] = {**row, "ts": _iso(row["ts"]), "payload": json.loads(row["payload"] or "{}")}
    if paths.events.exists():
        for file in paths.events.glob("*.json"):
            try:
                raw = json.loads(file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # being written, or folded meanwhile
            if item_id in (raw.get("item_ids") or []):
                found[str(raw["id"])] = {"id": raw["id"], "type": raw["type"], "ts": raw["ts"],
                                         "session_id": raw.get("session_id"), "payload": raw.get("payload") or {}}
    return sorted(found.values(), key=lambda e: str(e["ts"]))


def related_items(frame: pl.DataFrame | None, item: dict[str, Any]) -> list[dict[str, Any]]:
    """The items ``item`` replaced, was replaced by, contradicts, or was merged from."""
    if frame is None or frame.is_empty():
        return []
    ids = {item.get("supersedes"), item.get("superseded_by"), *(item.get("contradicts") or []),
           *(item.get("merged_from") or [])} - {None, item["id"]}
    pointing = ((pl.col("supersedes") == item["id"]) | (pl.col("superseded_by") == item["id"])
                | pl.col("id").is_in(sorted(ids)))
    return frame.filter(pointing & (pl.col("id") != item["id"])).to_dicts()
