"""Raw turns, one row each, exactly as the agent handed them over (minus credentials)."""


import hashlib
from datetime import datetime

import dagster as dg
import polars as pl

from memory_assets.defs.resources import MemoryRoot
from memory_assets.defs.clock import run_now
from memory_assets.lib.ingest import inbox_scan
from memory_assets.lib import warehouse
from memory_assets.lib.faults import crash_point
from memory_assets.defs.partitions import sessions
from memory_assets.lib.ingest.transcripts import parse_transcript
from retrieval.credentials import redact
from retrieval.schema import RESOURCE_SCHEMA


def resource_id(message: dict) -> str:
    """Content hash of a turn: the same turn handed over twice is one resource."""
    key = "\x1f".join(str(message[k]) for k in ("session_id", "turn", "role", "speaker", "ts", "content"))
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


@dg.asset(
    partitions_def=sessions,
    group_name="ingest",
    kinds={"python", "parquet"},
    code_version="resources-v1",
)
def resources(context: dg.AssetExecutionContext, memory: MemoryRoot) -> dg.MaterializeResult:
    """Every turn of every session the agents handed over: who said what, when, with what trust.

    Append-only: a turn is stored once under its content hash and never updated, and
    every memory item points back to the turns it came from. Credentials are redacted
    before anything is stored.
    """
    session_id = context.partition_key
    paths = memory.paths
    cap = int(memory.config.ingest.max_message_bytes)
    existing = set(warehouse.resource_ids(paths, [session_id]).to_list())
    now = run_now(context)  # one clock per run (defs/clock.py)
    rows: list[dict] = []
    errors: list[str] = []
    files = inbox_scan.pending_files(paths).get(session_id, [])
    redacted = 0
    for file in files:
        parsed = parse_transcript(file, "jsonl", max_message_bytes=cap)
        errors.extend(str(e) for e in parsed.errors)
        for message in parsed.messages:
            if message["session_id"] != session_id:
                errors.append(f"{file}: turn {message['turn']} belongs to session {message['session_id']!r}, not {session_id!r}")
                continue
            clean = redact(message["content"])
            redacted += clean != message["content"]
            message = {**message, "content": clean}
            rid = resource_id(message)
            if rid in existing:
                continue
            existing.add(rid)
            rows.append({
                "resource_id": rid, "session_id": session_id, "turn": message["turn"],
                "external_id": message.get("external_id"), "role": message["role"],
                "speaker": message["speaker"], "content": clean,
                "content_at": datetime.fromisoformat(message["ts"]), "trust": message["trust"],
                "source_format": "jsonl", "source_file": file.name, "ingested_at": now,
                "namespace": message.get("namespace"),
            })
    if rows:
        frame = pl.DataFrame(rows, schema=RESOURCE_SCHEMA)
        digest = hashlib.sha256("".join(r["resource_id"] for r in rows).encode()).hexdigest()[:16]
        warehouse.write_frame(paths.resources / session_id / f"part-{digest}.parquet", frame)
        crash_point("ingest")
    if errors:
        warehouse.write_json(paths.ingest_errors / f"{session_id}-{warehouse.stamp(now)}.json", errors, indent=1)
        for e in errors[:20]:
            context.log.warning(e)
    for file in files:
        inbox_scan.mark_consumed(paths, session_id, file)
    return dg.MaterializeResult(metadata={
        "new_turns": len(rows),
        "total_turns": len(existing),
        "files_read": len(files),
        "bad_lines": len(errors),
        "credentials_redacted": int(redacted),
        "errors": dg.MetadataValue.md("\n".join(f"- {e}" for e in errors[:20]) or "none"),
    })
