"""Step 1 of an erasure (the ``erasure`` asset): the words leave everything a build reads.

A namespace's turns, facts, inbox lines, events, checkpoints … are deleted; the turns one
erased item came from keep their place with their text replaced by ``[ERASED]`` (other
items read from them still point back to a turn). The ids are written to
``erasure_log/pending.json`` first, for step 3 and for a rerun after a crash."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import polars as pl

from memory_assets.lib import warehouse
from memory_assets.lib.erasure.targets import (ERASED, Target, drop_rows, erased_item,
                                               manifest_file, names_any, pending, resolve)
from memory_assets.lib.items import publish
from retrieval.config import MemoryConfig
from retrieval.ids import REMEMBER_PREFIX
from retrieval.inbox import encode_jsonl
from retrieval.paths import DataRoot

# What an erased item's event loses when the event also names items that stay: its words.
_EVENT_TEXT = ("query", "content", "tags", "topic")


@dataclass
class Erased:
    """What ``erase_sources`` did (counts and ids: the asset's metadata; never content)."""

    requests: int = 0
    namespaces: list[str] = field(default_factory=list)
    items: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    sessions_removed: list[str] = field(default_factory=list)  # sessions with nothing left anywhere

    def add(self, what: str, n: int) -> None:
        if n:
            self.counts[what] = self.counts.get(what, 0) + n


def erase_sources(paths: DataRoot, config: MemoryConfig, now: datetime) -> Erased:
    """Step 1: remove the words of every pending request from what the builds read, and
    record the ids for ``purge_versions``. A rerun after a failure finds the same ids
    again (they stay in the versions until step 3) and finishes the work."""
    asked = pending(paths)
    raw = warehouse.read_json(manifest_file(paths))
    if not asked and raw is None:
        return Erased()
    target = resolve(paths, asked, config)
    if raw is not None:
        target = Target.from_json(raw).merge(target)
    done = Erased(len(target.requests), sorted(target.namespaces), len(target.item_ids))
    # Written first: a crash from here on leaves the ids for the next run.
    warehouse.write_json(manifest_file(paths), target.to_json(), indent=1)
    done.add("checkpoints", _checkpoints(paths, config, target))  # first: it matches the turns' words
    done.add("documents", _documents(paths, config, target))
    done.add("inbox_lines", _inbox(paths, target))
    done.add("resources", _resources(paths, target))
    done.add("facts", _facts(paths, target))
    done.add("rejections", _rejections(paths, target))
    done.add("quarantine_records", _quarantine(paths, target))
    done.add("imports", _imports(paths, target))
    done.add("events", _events(paths, target))
    merged = pl.col("kept_id").is_in(sorted(target.item_ids)) | pl.col("merged_id").is_in(sorted(target.item_ids))
    done.add("merges", drop_rows(warehouse.files(paths.merges, "*.parquet"), merged))
    done.add("archive", drop_rows([paths.archive / "items.parquet"], erased_item(target)))
    done.add("clusters", drop_rows([paths.clusters], names_any("member_ids", target.item_ids)))
    done.add("triggers", drop_rows([paths.triggers], names_any("item_ids", target.item_ids)))
    done.sessions_removed = _empty_sessions(paths, target)
    # A rollback's hold would keep an erased version published: the erasure publishes.
    publish.unhold(paths)
    return done


def _inbox(paths: DataRoot, target: Target) -> int:
    """Inbox lines: a namespace's go, an erased item's turns keep their place, not their words."""
    resources = warehouse.read_resources(paths).filter(pl.col("resource_id").is_in(sorted(target.scrubbed)))
    turns = set(resources.select("session_id", "turn").iter_rows())
    changed = 0
    for folder in [p for p in paths.inbox.iterdir() if p.is_dir()] if paths.inbox.exists() else []:
        for file in warehouse.files(folder, "*.jsonl"):
            lines = [json.loads(line) for line in warehouse.read_text(file).splitlines() if line.strip()]
            kept, touched = [], 0
            for line in lines:
                if target.namespaces and target.names_namespace(line.get("namespace")):
                    touched += 1
                    continue
                if (line.get("session_id", folder.name), line.get("turn")) in turns:
                    line, touched = {**line, "content": ERASED}, touched + 1
                kept.append(line)
            if not touched:
                continue
            changed += touched
            if kept:
                warehouse.write_bytes(file, encode_jsonl(kept))
            else:
                warehouse.remove(file)
                warehouse.remove(paths.ingest_ledger / folder.name / f"{file.name}.done")
        if not warehouse.files(folder, "*"):
            warehouse.remove_folder(folder)
    return changed


def _resources(paths: DataRoot, target: Target) -> int:
    changed = 0
    for file in warehouse.resource_files(paths):
        frame = warehouse.read_frame(file)
        ids = frame["resource_id"]
        gone, scrub = ids.is_in(sorted(target.resource_ids)), ids.is_in(sorted(target.scrubbed))
        if not (gone.any() or (scrub & (frame["content"] != ERASED)).any()):
            continue
        kept = frame.filter(~gone).with_columns(
            content=pl.when(pl.col("resource_id").is_in(sorted(target.scrubbed))).then(pl.lit(ERASED))
            .otherwise(pl.col("content")))
        changed += int(gone.sum()) + int(scrub.sum())
        if kept.height:
            warehouse.write_frame(file, kept)
        else:
            warehouse.remove(file)
    for folder in [p for p in paths.resources.iterdir() if p.is_dir()] if paths.resources.exists() else []:
        if not warehouse.files(folder, "*"):
            warehouse.remove_folder(folder)
    return changed


def _facts(paths: DataRoot, target: Target) -> int:
    """A session with no turns left loses its facts file; an item's session keeps the file
    (possibly empty), so it is not extracted again."""
    gone = 0
    for file in warehouse.fact_files(paths):
        frame = warehouse.read_frame(file)
        kept = frame.filter(~erased_item(target))
        gone += frame.height - kept.height
        if not warehouse.files(paths.resources / file.stem, "*.parquet") and (not kept.height or file.stem in target.sessions):
            warehouse.remove(file)
        elif kept.height != frame.height:
            warehouse.write_frame(file, kept)
    return gone


def _rejections(paths: DataRoot, target: Target) -> int:
    turns = target.resource_ids | target.scrubbed
    gone = drop_rows(warehouse.files(paths.rejections, "*.parquet"), names_any("source_resource_ids", turns))
    for session in target.sessions:
        if not warehouse.files(paths.resources / session, "*.parquet"):
            gone += int(warehouse.exists(file := paths.rejections / f"{session}.parquet"))
            warehouse.remove(file)
    return gone


def _quarantine(paths: DataRoot, target: Target) -> int:
    """A removed session's records go; an erased item's session keeps them without the
    LLM's raw response (it quotes the session)."""
    scrubbed = set(warehouse.read_resources(paths).filter(pl.col("resource_id").is_in(sorted(target.scrubbed)))
                   ["session_id"].to_list())
    changed = 0
    for session in target.sessions | scrubbed:
        folder = paths.quarantine / session
        records = warehouse.files(folder, "*.json") + warehouse.files(folder / "resolved", "*.json")
        if session in target.sessions and not warehouse.files(paths.resources / session, "*.parquet"):
            changed += len(records)
            warehouse.remove_folder(folder)
            continue
        for file in records:
            record = warehouse.read_json(file)
            if record.get("raw_response") not in (None, ERASED):
                warehouse.write_json(file, {**record, "raw_response": ERASED}, indent=1)
                changed += 1
    return changed


def _imports(paths: DataRoot, target: Target) -> int:
    """Import records of an erased namespace or naming an erased item (an edge to it too)."""
    changed = 0
    for file in warehouse.files(paths.imports, "*.jsonl"):
        lines = [json.loads(line) for line in warehouse.read_text(file).splitlines() if line.strip()]
        header, records = lines[:1], lines[1:]
        kept = [r for r in records if not (
            (target.namespaces and target.names_namespace(r.get("namespace")))
            or r.get("id") in target.item_ids
            or r.get("source") in target.item_ids or r.get("target") in target.item_ids)]
        if len(kept) == len(records):
            continue
        changed += len(records) - len(kept)
        if kept:
            warehouse.write_bytes(file, "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n"
                                                for r in header + kept).encode())
        else:
            warehouse.remove(file)
            warehouse.remove(paths.rejections / f"import-{file.stem}.parquet")
    return changed


def _event_kept(event: dict[str, Any], erased: set[str]) -> dict[str, Any] | None:
    """An event without the erased items: gone when it named only them; its words
    (a query, an update's wording) gone when it named one of them."""
    ids = list(event.get("item_ids") or [])
    if event.get("type") == "erase" or not set(ids) & erased:
        return event
    left = [i for i in ids if i not in erased]
    if not left:
        return None
    payload = event.get("payload") or {}
    text = isinstance(payload, str)
    payload = json.loads(payload or "{}") if text else dict(payload)
    payload = {k: v for k, v in payload.items() if k not in _EVENT_TEXT}
    return {**event, "item_ids": left, "payload": json.dumps(payload) if text else payload}


def _events(paths: DataRoot, target: Target) -> int:
    erased, changed = target.item_ids, 0
    # The events not folded yet, and the copies readers hold of the corrections among them.
    for file in warehouse.files(paths.events, "*.json") + warehouse.files(paths.corrections, "*.json"):
        try:
            event = json.loads(warehouse.read_bytes(file))
        except ValueError:
            continue  # not an event: the items build names it
        kept = _event_kept(event, erased)
        if kept is event:
            continue
        changed += 1
        if kept is None:
            warehouse.remove(file)
        else:
            warehouse.write_json(file, kept)
    for file in warehouse.files(paths.warehouse / "event_log", "*.parquet"):
        frame = warehouse.read_frame(file)
        hit = names_any("item_ids", erased) & (pl.col("type") != "erase")
        touched = frame.filter(hit)
        if touched.is_empty():
            continue
        kept = [e for e in (_event_kept(row, erased) for row in touched.to_dicts()) if e is not None]
        frame = pl.concat([frame.filter(~hit), pl.DataFrame(kept, schema=frame.schema)]).sort("ts")
        warehouse.write_frame(file, frame)
        changed += touched.height
    return changed


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [" ".join(value.split())]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _checkpoints(paths: DataRoot, config: MemoryConfig, target: Target) -> int:
    """The per-turn checkpoints: a namespace's, and the checkpointed turns that said what
    an erased item was read from (a checkpoint becomes several messages when flushed, so
    it is found by what it says, before the stored turns lose their words)."""
    from retrieval.checkpoints import CheckpointStore
    from retrieval.database import configured_dsn, sqlite_path

    if not configured_dsn(config) and not sqlite_path(paths).exists():
        return 0
    turns = warehouse.read_resources(paths).filter(pl.col("resource_id").is_in(sorted(target.scrubbed))
                                                   & (pl.col("content") != ERASED))
    said: dict[tuple[str, str], set[str]] = {}
    for namespace, session, content in turns.select("namespace", "session_id", "content").iter_rows():
        said.setdefault((namespace or target.default_namespace, session), set()).add(" ".join(content.split()))
    with CheckpointStore.for_root(paths, config) as store:
        deleted = sum(store.erase(namespace) for namespace in sorted(target.namespaces))
        for (namespace, session), words in sorted(said.items()):
            hit = [c.turn for c in store.replay(namespace, session) if words & set(_strings(c.record))]
            deleted += store.erase(namespace, session, turns=hit) if hit else 0
    return deleted


def _documents(paths: DataRoot, config: MemoryConfig, target: Target) -> int:
    """The keyed documents a framework put (``retrieval.documents``): a namespace's, and
    those an erased memory was made of (its ``remember`` session)."""
    from retrieval.database import configured_dsn, sqlite_path
    from retrieval.documents import DocumentStore

    if not configured_dsn(config) and not sqlite_path(paths).exists():
        return 0
    turns = warehouse.read_resources(paths).filter(pl.col("resource_id").is_in(sorted(target.scrubbed)))
    sessions = target.sessions | set(turns["session_id"].to_list())
    with DocumentStore.for_root(paths, config) as store:
        return store.erase(target.namespaces, (s for s in sessions if s.startswith(REMEMBER_PREFIX)))


def _empty_sessions(paths: DataRoot, target: Target) -> list[str]:
    """The sessions an erasure left with nothing: their ingest ledger, errors and runs go too."""
    gone = sorted(s for s in target.sessions
                  if not warehouse.files(paths.resources / s, "*.parquet") and not warehouse.files(paths.inbox / s, "*"))
    for session in gone:
        warehouse.remove_folder(paths.ingest_ledger / session)
        warehouse.remove_folder(paths.quarantine / session)
        for file in warehouse.files(paths.ingest_errors, f"{session}-*.json"):
            if file.stem.rsplit("-", 1)[0] == session:  # <session>-<stamp>.json
                warehouse.remove(file)
        for file in warehouse.files(paths.extraction_runs, "*.parquet"):
            frame = warehouse.read_frame(file)
            if frame.height and set(frame["session_id"].to_list()) == {session}:
                warehouse.remove(file)
    return gone
