"""Folding the agent's feedback events into items.

Items are rebuilt from facts on every run, so the counters an event changes are
derived by replaying every event in time order — never incremented in place, so a
re-run cannot count an event twice. Events for an id that was merged away land on the
item that absorbed it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from memory_assets.lib.extraction.fields import read_fields, reworded
from memory_assets.lib.items import dedup
from memory_assets.lib import warehouse
from retrieval import corrections
from retrieval.corrections import CORRECTION_TYPES
from retrieval.schema import AGENT_STATED, agent_written
from retrieval.ids import PENDING, REMEMBER_PREFIX, content_hash
from retrieval.config import MemoryConfig
from retrieval.moments import parse_utc
from retrieval.paths import DataRoot
from retrieval.spans import spanned

EVENT_SCHEMA = {
    "id": pl.String, "type": pl.String, "item_ids": pl.List(pl.String), "ts": pl.Datetime("us", "UTC"),
    "session_id": pl.String, "payload": pl.String, "source_file": pl.String,
}


@dataclass
class EventBatch:
    events: pl.DataFrame
    errors: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)


@spanned("read events")
def read_events(paths: DataRoot) -> EventBatch:
    """Every event: compacted history in the warehouse plus new files in ``events/``."""
    rows, errors, files = [], [], []
    for file in warehouse.files(paths.events, "*.json"):
        try:
            raw = json.loads(warehouse.read_bytes(file))
            rows.append({
                "id": str(raw["id"]), "type": str(raw["type"]), "item_ids": [str(i) for i in raw["item_ids"]],
                "ts": parse_utc(raw["ts"]), "session_id": raw.get("session_id"),
                "payload": json.dumps(raw.get("payload") or {}), "source_file": file.name,
            })
            files.append(file)
        except (ValueError, KeyError, TypeError) as exc:
            errors.append(f"{file}: not a feedback event ({exc})")
    fresh = pl.DataFrame(rows, schema=EVENT_SCHEMA)
    history = warehouse.read_frames(warehouse.files(paths.warehouse / "event_log", "*.parquet"))
    events = pl.concat([*([history] if history is not None else []), fresh],
                       how="vertical_relaxed").unique("id", keep="first").sort("ts")
    return EventBatch(events, errors, files)


@spanned("compact events")
def compact(paths: DataRoot, batch: EventBatch, stamp: str) -> int:
    """Move the event files just folded into a Parquet part (kept forever), then remove
    them and the copies readers held of the corrections among them: the published rows
    say what those said (``retrieval.corrections``)."""
    if not batch.files:
        return 0
    names = {f.name for f in batch.files}
    part = batch.events.filter(pl.col("source_file").is_in(list(names)))
    warehouse.write_frame(paths.warehouse / "event_log" / f"events-{stamp}.parquet", part)
    for event_id in part.filter(pl.col("type").is_in(CORRECTION_TYPES))["id"].to_list():
        warehouse.remove(corrections.file_of(paths.corrections, event_id))
    for f in batch.files:
        warehouse.remove(f)
    return part.height


@spanned("consolidate: fold events")
def fold(items: pl.DataFrame, events: pl.DataFrame, config: MemoryConfig) -> tuple[pl.DataFrame, dict[str, int]]:
    """Apply ``events`` in time order to ``items``; returns the items and counts per event type.

    Only the rows an event names (directly or through an id merged into them) become
    Python dicts; the rest of the frame is kept as it is.
    """
    if items.is_empty() or events.is_empty():
        return items, {}
    events = _expand_erasures(items, events)
    ids = items["id"].to_list()
    position = {item_id: i for i, item_id in enumerate(ids)}
    if len(position) != len(ids):  # repeated ids: the whole-frame replay (one row per id)
        rows = {r["id"]: r for r in items.to_dicts()}
        alias = {m: r["id"] for r in rows.values() for m in (r.get("merged_from") or [])} | _remembered(items)
        counts = _replay(rows, alias, events, config)
        return pl.DataFrame(list(rows.values()), schema=items.schema), counts
    merged = items.select("id", "merged_from").filter(pl.col("merged_from").list.len() > 0)
    alias = {m: item_id for item_id, absorbed in merged.iter_rows() for m in absorbed} | _remembered(items)
    named = events["item_ids"].explode().drop_nulls().unique().to_list()
    touched = {target for raw_id in named
               if (target := raw_id if raw_id in position else alias.get(raw_id)) in position}
    rows = {item_id: items.row(position[item_id], named=True) for item_id in touched}
    counts = _replay(rows, alias, events, config)
    return dedup.replace_rows(items, {position[item_id]: row for item_id, row in rows.items()}), counts


def _remembered(items: pl.DataFrame) -> dict[str, str]:
    """A ``remember`` as its reader named it before it was stored (``pending:<session>``,
    ``retrieval.agent.pending``) → the item made of it: a correction of the pending line
    applies to the item."""
    if "session_id" not in items.columns:
        return {}
    made = items.select("id", "session_id").filter(pl.col("session_id").str.starts_with(REMEMBER_PREFIX))
    return {f"{PENDING}:{session}": item_id for item_id, session in made.iter_rows()}


def _expand_erasures(items: pl.DataFrame, events: pl.DataFrame) -> pl.DataFrame:
    """An ``erase`` of a namespace names no items: it applies to every item of the
    namespace stated before it (what the user says afterwards is remembered again). An
    ``erase`` of one item (``memory erase --id``) names it, like a ``forget``."""
    erase = events.filter(pl.col("type") == "erase")
    if erase.is_empty():
        return events
    rows = []
    for event in erase.iter_rows(named=True):
        namespace = json.loads(event["payload"] or "{}").get("namespace")
        if namespace is None:
            rows.append(event)
            continue
        named = items.filter((pl.col("namespace") == namespace) & (pl.col("created_at") <= event["ts"]))["id"]
        rows.append({**event, "item_ids": named.to_list()})
    return pl.concat([events.filter(pl.col("type") != "erase"), pl.DataFrame(rows, schema=events.schema)]).sort("ts")


def _replay(rows: dict[str, dict], alias: dict[str, str], events: pl.DataFrame, config: MemoryConfig) -> dict[str, int]:
    """Apply ``events`` in order to ``rows`` (id → row, edited in place); counts per type."""
    counts: dict[str, int] = {}
    step_up, step_down = config.decay.reinforce_step, config.decay.demote_step
    for event in events.iter_rows(named=True):
        payload = json.loads(event["payload"] or "{}")
        for raw_id in event["item_ids"]:
            row = rows.get(raw_id) or rows.get(alias.get(raw_id, ""))
            if row is None:
                continue
            kind = event["type"]
            counts[kind] = counts.get(kind, 0) + 1
            if kind == "injected":  # never a reference (DESIGN: only user-confirmed use reinforces)
                row["injected_count"] += 1
            elif kind == "referenced":
                row["echo_count"] += 1
            elif kind == "ignored":
                row["fizzle_count"] += 1
            elif kind == "reinforce":
                row["reinforcement"] += step_up
                row["reference_count"] += 1
                row["last_referenced_at"] = event["ts"]
            elif kind == "demote":
                row["reinforcement"] += step_down
            elif kind in ("update", "correction") and payload.get("content"):
                row["content"] = payload["content"]
                row["content_hash"] = content_hash(payload["content"])
                # The new wording's directive and days, read as the extraction reads them.
                row.update(read_fields(payload["content"], row["kind"], row["created_at"], entities=row.get("entities")))
                if "slot" in row:  # and what it is about: subject, relation, value, slot
                    row.update(reworded(payload["content"], row, config))
                if payload.get("tags") is not None:
                    row["tags"] = list(payload["tags"])
                # Another agent's rewording is its claim, not the user's correction.
                row["provenance"] = AGENT_STATED if agent_written(payload.get("written_by")) else "user_corrected"
                row["updated_at"] = event["ts"]
                row["last_referenced_at"] = event["ts"]
            elif kind in ("forget", "erase"):
                row["status"] = "purged"
                row["updated_at"] = event["ts"]
            elif kind == "pin":  # the user's word: kept for good (never decayed, archived or purged)
                row["tier"] = "permanent"
                if row["status"] in ("archived", "cold", "candidate"):
                    row["status"] = "active"
                row["updated_at"] = event["ts"]
            elif kind == "unpin":
                row["tier"] = config.tier_for(row["kind"], row["category"])
                row["updated_at"] = event["ts"]
    return counts
