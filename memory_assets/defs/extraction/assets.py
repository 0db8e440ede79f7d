"""Atomic facts extracted from each session, before consolidation."""

import dagster as dg

from memory_assets.defs.clock import run_now
from memory_assets.defs.partitions import sessions
from memory_assets.defs.runtime import ExtractorResource, MemoryRoot
from memory_assets.lib.extraction.session import code_version, extract_session
from retrieval.llm import load_prompt

EXTRACTION_PROMPT = load_prompt("extract_facts")
# A prompt edit or an offline rule change makes every session's facts stale in the UI, and
# a backfill over `sessions` re-extracts history.
EXTRACTION_CODE_VERSION = code_version(EXTRACTION_PROMPT)


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
    config = memory.config
    now = run_now(context)  # one clock per run (defs/clock.py)
    done = extract_session(memory.paths, session_id, extractor.build(config), config, now)
    result, gated, failed = done.result, done.gated, done.failed
    if failed is not None:
        context.log.error(f"session {session_id} quarantined for LLM re-extraction: {failed.reason} "
                          f"({done.quarantine_record}); extracted offline meanwhile")
    return dg.MaterializeResult(metadata={
        "facts": gated.facts.height,
        "turns": done.turns,
        "rejected": gated.rejections.height,
        "rejected_by_reason": dict(sorted(gated.reasons.items())),
        "untrusted_facts": int((gated.facts["source_trust"] == "untrusted").sum()),
        "extractor": done.extractor.name,
        "extractor_version": done.extractor.version,
        "model": result.model or "none",
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "attempts": result.attempts,
        "cost_usd": round(done.cost_usd, 6),
        "quarantine_resolved": done.quarantine_resolved,
        "quarantined": failed is not None,
        "llm_failure": failed.reason if failed is not None else "none",
        "forget_requests": done.forget_requests,
        "items_forgotten": done.items_forgotten,
        # Ids and counts only: Dagster's run history cannot be erased item by item (`memory erase`).
        "by_category": dict(sorted(gated.facts["category"].value_counts().iter_rows())) if gated.facts.height else {},
    })
