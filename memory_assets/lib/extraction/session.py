"""One session's extraction over a data root: its stored turns in, its facts and rejections out.

``extracted_facts`` (one Dagster partition per session) and the evals' in-process builds
call ``extract_session``, so a session becomes facts one way. A session whose LLM output
never validated is quarantined with the raw response for a later retry and extracted
offline meanwhile: the agent never goes without the session's memories.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import polars as pl

from memory_assets.lib import warehouse
from memory_assets.lib.extraction import direct, forgetting, quarantine
from memory_assets.lib.extraction.base import ExtractionFailed, ExtractionResult, Extractor, OverBudget
from memory_assets.lib.extraction.facts import GatedFacts, build_facts
from memory_assets.lib.extraction.offline import OfflineExtractor
from retrieval import events
from retrieval.config import MemoryConfig
from retrieval.credentials import pii_from_config
from retrieval.files import stamp
from retrieval.llm import Prompt, Usage, load_prompt
from retrieval.paths import DataRoot
from retrieval.schema import Turn
from retrieval.store import ItemStore

MODES = ("auto", "offline", "llm")


def code_version(prompt: Prompt | None = None) -> str:
    """What a session's facts depend on: the extraction prompt's content hash and the
    offline rules' version. A change to either makes every session's facts stale."""
    prompt = prompt or load_prompt("extract_facts")
    return f"prompt-{prompt.version}.{OfflineExtractor.version}"


def choose_extractor(mode: str, config: MemoryConfig) -> Extractor:
    """``auto`` is the LLM when it is enabled (``[llm] enabled = true`` or
    ``MEMORY_EXTRACTOR=llm``) and the offline rules otherwise; ``offline`` and ``llm`` force one."""
    from memory_assets.lib.extraction.llm_extractor import LLMExtractor

    if mode not in MODES:
        raise ValueError(f"extractor mode {mode!r}; use {', '.join(MODES)}")
    if mode == "llm" or (mode == "auto" and config.llm_enabled):
        return LLMExtractor(config)
    return OfflineExtractor(config)


def to_turns(frame: pl.DataFrame) -> list[Turn]:
    """Stored resource rows as the turns an extractor reads, in order."""
    return [
        Turn(session_id=r["session_id"], turn=r["turn"], role=r["role"], content=r["content"],
             content_at=r["content_at"], speaker=r["speaker"], trust=r["trust"],
             external_id=r["external_id"], resource_id=r["resource_id"], namespace=r.get("namespace"),
             source_format=r.get("source_format") or "jsonl", project=r.get("project"),
             written_by=r.get("written_by"))
        for r in frame.sort("turn").iter_rows(named=True)
    ]


@dataclass
class SessionFacts:
    """What one session's extraction wrote, for the run's metadata."""

    turns: int
    extractor: Extractor
    result: ExtractionResult
    gated: GatedFacts
    cost_usd: float
    forget_requests: int
    items_forgotten: int
    quarantine_resolved: bool
    failed: ExtractionFailed | None = None
    quarantine_record: Path | str | None = None


def extract_session(paths: DataRoot, session_id: str, extractor: Extractor, config: MemoryConfig,
                    now: datetime) -> SessionFacts:
    """Extract ``session_id``'s stored turns, gate them, and write the session's facts,
    rejections and one cost row; a forget request in the session retires what it names."""
    turns = to_turns(warehouse.read_resources(paths, [session_id]))
    remembered, conversation = direct.split_remembered(turns)
    failed: ExtractionFailed | None = None
    record = None
    try:
        result = extractor.extract(conversation) if conversation else ExtractionResult([])
    except ExtractionFailed as failure:
        # Over the time budget, the session's turns stay stored, quarantined and not retried
        # on their own; the run goes on. An LLM failure is read by the rules meanwhile.
        failed, result = failure, ExtractionResult([])
        record = quarantine.put(paths, session_id, reason=failure.reason, raw_response=failure.raw_response,
                                attempts=failure.attempts, extractor=extractor.name, now=now,
                                retry=not isinstance(failure, OverBudget))
        if not isinstance(failure, OverBudget):
            extractor = OfflineExtractor(config)
            try:
                result = extractor.extract(conversation)
            except OverBudget as over:
                record = quarantine.put(paths, session_id, reason=over.reason, raw_response=None, attempts=1,
                                        extractor=extractor.name, now=now, retry=False)
    asked = forgetting.requests(turns)
    written = direct.remembered_candidates(remembered, config)
    candidates, forgotten = forgetting.drop_forgotten(result.candidates + written, asked)
    gated = build_facts(candidates, turns, config, session_id=session_id,
                        extractor=extractor.name, prompt_version=extractor.version, now=now,
                        forgotten=[(c, r.topic) for c, r in forgotten])
    retired = _retire_what_was_asked(paths, asked, gated.namespace, session_id, now, pii_from_config(config))
    warehouse.write_frame(warehouse.fact_file(paths, session_id), gated.facts)
    warehouse.write_frame(paths.rejections / f"{session_id}.parquet", gated.rejections)
    warehouse.crash_point("extraction")
    resolved = quarantine.resolve(paths, session_id) if failed is None else False
    cost = Usage(0, result.prompt_tokens, result.completion_tokens).cost_usd(config)
    # One row per run, so the health report can show extraction cost over time.
    warehouse.write_frame(paths.extraction_runs / f"{session_id}-{stamp(now)}.parquet", pl.DataFrame([{
        "session_id": session_id, "extractor": extractor.name, "model": result.model or "none",
        "facts": gated.facts.height, "rejected": gated.rejections.height,
        "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
        "cost_usd": cost, "at": now,
    }]))
    return SessionFacts(len(turns), extractor, result, gated, cost, len(asked), retired, resolved, failed, record)


def _retire_what_was_asked(paths: DataRoot, asked: list[forgetting.ForgetRequest], namespace: str,
                           session_id: str, now: datetime, pii: tuple[str, ...]) -> int:
    """One ``forget`` event per request for the stored items it names (audited like any
    forget, folded by the next ``memory_items`` run; readers stop serving them at once)."""
    if not asked:  # most sessions: no need to read the published items
        return 0
    matches = forgetting.stored_matches(ItemStore(paths).items(), asked, namespace)
    by_turn = {r.turn.resource_id: r for r in asked}
    for resource_id, ids in matches.items():
        events.record(paths.events, "forget", ids, now, session_id=session_id,
                      payload={"reason": "the user asked to forget it", "topic": by_turn[resource_id].topic,
                               "request_resource_id": resource_id}, pii=pii, corrections=paths.corrections)
    return sum(len(ids) for ids in matches.values())
