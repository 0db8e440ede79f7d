"""Atomic facts extracted from each session, before consolidation."""


from datetime import datetime

import dagster as dg
import polars as pl

from memory_assets.defs.resources import ExtractorResource, MemoryRoot
from memory_assets.defs.clock import run_now
from memory_assets.lib.extraction import forgetting, quarantine
from memory_assets.lib import warehouse
from memory_assets.lib.extraction.base import ExtractionFailed
from memory_assets.lib.extraction.offline import OfflineExtractor
from memory_assets.lib.faults import crash_point
from memory_assets.lib.extraction.facts import build_facts
from memory_assets.defs.partitions import sessions
from retrieval.llm import Prompt, Usage, load_prompt
from retrieval import events
from retrieval.schema import Turn
from retrieval.store import ItemStore

def extraction_code_version(prompt: Prompt) -> str:
    """``extracted_facts``' code version: the prompt's content hash and the offline rules'
    version. A prompt edit or an offline rule change makes every session's facts stale
    in the UI, and a backfill over `sessions` re-extracts history."""
    return f"prompt-{prompt.version}.{OfflineExtractor.version}"


EXTRACTION_PROMPT = load_prompt("extract_facts")
EXTRACTION_CODE_VERSION = extraction_code_version(EXTRACTION_PROMPT)


def to_turns(frame: pl.DataFrame) -> list[Turn]:
    return [
        Turn(session_id=r["session_id"], turn=r["turn"], role=r["role"], content=r["content"],
             content_at=r["content_at"], speaker=r["speaker"], trust=r["trust"],
             external_id=r["external_id"], resource_id=r["resource_id"], namespace=r.get("namespace"))
        for r in frame.sort("turn").iter_rows(named=True)
    ]


@dg.asset(
    partitions_def=sessions,
    deps=["resources"],
    group_name="extraction",
    kinds={"python", "parquet", "openai"},
    code_version=EXTRACTION_CODE_VERSION,
)
def extracted_facts(context: dg.AssetExecutionContext, memory: MemoryRoot,
                    extractor: ExtractorResource) -> dg.MaterializeResult:
    """What each session taught us: atomic, speaker-attributed facts with category, kind,
    tier, trust and the turns they came from — before deduplication.

    Facts the write gate refused (credentials, chatter, injected instructions) are kept
    in the rejection log with the reason, never here. A session whose LLM output never
    validated is quarantined with the raw response and retried by a later run.
    """
    session_id = context.partition_key
    paths, config = memory.paths, memory.config
    now = run_now(context)  # one clock per run (defs/clock.py)
    turns = to_turns(warehouse.read_resources(paths, [session_id]))
    impl = extractor.build(config)
    failed: ExtractionFailed | None = None
    try:
        result = impl.extract(turns)
    except ExtractionFailed as failure:
        # Quarantined for an LLM retry, and extracted offline meanwhile: the agent never
        # goes without the session's memories while the endpoint is down.
        failed = failure
        record = quarantine.put(paths, session_id, reason=failure.reason, raw_response=failure.raw_response,
                                attempts=failure.attempts, extractor=impl.name, now=now)
        context.log.error(f"session {session_id} quarantined for LLM re-extraction: {failure.reason} ({record}); "
                          "extracted offline meanwhile")
        impl = OfflineExtractor(config)
        result = impl.extract(turns)
    asked = forgetting.requests(turns)
    candidates, forgotten = forgetting.drop_forgotten(result.candidates, asked)
    gated = build_facts(candidates, turns, config, session_id=session_id,
                        extractor=impl.name, prompt_version=impl.version, now=now,
                        forgotten=[(c, r.topic) for c, r in forgotten])
    retired = _retire_what_was_asked(paths, asked, gated.namespace, session_id, now)
    warehouse.write_frame(warehouse.fact_file(paths, session_id), gated.facts)
    warehouse.write_frame(paths.rejections / f"{session_id}.parquet", gated.rejections)
    crash_point("extraction")
    resolved = quarantine.resolve(paths, session_id) if failed is None else False
    cost = Usage(0, result.prompt_tokens, result.completion_tokens).cost_usd(config)
    # One row per run, so the health report can show extraction cost over time.
    warehouse.write_frame(paths.extraction_runs / f"{session_id}-{warehouse.stamp(now)}.parquet", pl.DataFrame([{
        "session_id": session_id, "extractor": impl.name, "model": result.model or "none",
        "facts": gated.facts.height, "rejected": gated.rejections.height,
        "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
        "cost_usd": cost, "at": now,
    }]))
    return dg.MaterializeResult(metadata={
        "facts": gated.facts.height,
        "turns": len(turns),
        "rejected": gated.rejections.height,
        "rejected_by_reason": dict(sorted(gated.reasons.items())),
        "untrusted_facts": int((gated.facts["source_trust"] == "untrusted").sum()),
        "extractor": impl.name,
        "extractor_version": impl.version,
        "model": result.model or "none",
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "attempts": result.attempts,
        "cost_usd": round(cost, 6),
        "quarantine_resolved": resolved,
        "quarantined": failed is not None,
        "llm_failure": failed.reason if failed is not None else "none",
        "forget_requests": len(asked),
        "items_forgotten": retired,
        "preview": dg.MetadataValue.md("\n".join(f"- {c}" for c in gated.facts["content"].head(10).to_list()) or "none"),
    })


def _retire_what_was_asked(paths, asked: list[forgetting.ForgetRequest], namespace: str, session_id: str,
                           now: datetime) -> int:
    """One ``forget`` event per request for the stored items it names (audited like any
    forget, folded by the next ``memory_items`` run)."""
    matches = forgetting.stored_matches(ItemStore(paths).items(), asked, namespace)
    by_turn = {r.turn.resource_id: r for r in asked}
    for resource_id, ids in matches.items():
        events.record(paths.events, "forget", ids, now, session_id=session_id,
                      payload={"reason": "the user asked to forget it", "topic": by_turn[resource_id].topic,
                               "request_resource_id": resource_id})
    return sum(len(ids) for ids in matches.values())
