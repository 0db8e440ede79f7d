"""Atomic facts extracted from each session, before consolidation."""

import dagster as dg

from memory_assets.defs.clock import run_now
from memory_assets.defs.partitions import session_backfills, sessions
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
    backfill_policy=session_backfills,
)
def extracted_facts(context: dg.AssetExecutionContext, memory: MemoryRoot,
                    extractor: ExtractorResource) -> dg.MaterializeResult:
    """What each session taught us: atomic, speaker-attributed facts with category, kind,
    tier, trust and the turns they came from — before deduplication.

    Facts the write gate refused (credentials, chatter, injected instructions) are kept
    in the rejection log with the reason, never here. A session whose LLM output never
    validated is quarantined with the raw response and retried by a later run.
    """
    config = memory.config
    now = run_now(context)  # one clock per run (defs/clock.py)
    built = extractor.build(config)  # once per run: one session, or a batch (`[pipeline] sessions_per_run`)
    done = []
    for session_id in context.partition_keys:
        one = extract_session(memory.paths, session_id, built, config, now)
        if one.failed is not None:
            context.log.error(f"session {session_id} quarantined for LLM re-extraction: {one.failed.reason} "
                              f"({one.quarantine_record}); extracted offline meanwhile")
        done.append(one)
    facts = [one.gated.facts for one in done]
    reasons: dict[str, int] = {}
    categories: dict[str, int] = {}
    for one in done:
        for reason, n in one.gated.reasons.items():
            reasons[reason] = reasons.get(reason, 0) + n
        if one.gated.facts.height:
            for category, n in one.gated.facts["category"].value_counts().iter_rows():
                categories[category] = categories.get(category, 0) + n
    failed = [one for one in done if one.failed is not None]
    last = done[-1]
    return dg.MaterializeResult(metadata={
        "sessions": len(done),
        "facts": sum(f.height for f in facts),
        "turns": sum(one.turns for one in done),
        "rejected": sum(one.gated.rejections.height for one in done),
        "rejected_by_reason": dict(sorted(reasons.items())),
        "untrusted_facts": sum(int((f["source_trust"] == "untrusted").sum()) for f in facts),
        "extractor": last.extractor.name,
        "extractor_version": last.extractor.version,
        "model": next((one.result.model for one in done if one.result.model), None) or "none",
        "prompt_tokens": sum(one.result.prompt_tokens for one in done),
        "completion_tokens": sum(one.result.completion_tokens for one in done),
        "attempts": sum(one.result.attempts for one in done),
        "cost_usd": round(sum(one.cost_usd for one in done), 6),
        "quarantine_resolved": sum(int(one.quarantine_resolved) for one in done),
        "quarantined": len(failed),
        "llm_failure": "; ".join(sorted({one.failed.reason for one in failed})) or "none",
        "forget_requests": sum(one.forget_requests for one in done),
        "items_forgotten": sum(one.items_forgotten for one in done),
        # Ids and counts only: Dagster's run history cannot be erased item by item (`memory erase`).
        "by_category": dict(sorted(categories.items())),
    })
