"""From an extractor's candidates to extracted-fact rows: scored, gated, traced to sources.

Importance and confidence come from ``retrieval.scoring``; what may be stored is decided
by ``gate.check``; every fact keeps the resource ids and external turn ids it came from.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import polars as pl

from memory_assets.lib.extraction import kinds, scopes, structure
from memory_assets.lib.extraction.fields import read_fields, subject_name
from memory_assets.lib.extraction import gate
from retrieval.ids import content_hash
from retrieval import scoring
from retrieval.config import MemoryConfig
from retrieval.schema import (
    AGENT_STATED, FACT_SCHEMA, KINDS, REJECTION_SCHEMA, SENTIMENTS, STRENGTHS, TIERS, Candidate, Turn, agent_written,
)


@dataclass
class GatedFacts:
    facts: pl.DataFrame
    rejections: pl.DataFrame
    reasons: dict[str, int] = field(default_factory=dict)
    namespace: str = ""


def fact_id(namespace: str, session_id: str, digest: str) -> str:
    return hashlib.sha256(f"{namespace}|{session_id}|{digest}".encode()).hexdigest()[:20]


def speaker_of(cand: Candidate, by_turn: dict[int, Turn]) -> str | None:
    """The person who said the candidate's first source turn, when it is a user's (its subject, usually)."""
    turn = next((by_turn[n] for n in cand.source_turns if n in by_turn), None)
    return turn.speaker if turn is not None and turn.role == "user" and turn.speaker not in ("user", "User") else None


def _pick(value: str | None, allowed: tuple[str, ...], default: str) -> str:
    return value if value in allowed else default


def build_facts(candidates: list[Candidate], turns: list[Turn], config: MemoryConfig, *,
                session_id: str, extractor: str, prompt_version: str, now: datetime,
                forgotten: Sequence[tuple[Candidate, str]] = ()) -> GatedFacts:
    """Score, gate and trace each candidate; what the gate refuses goes to rejections,
    and so do the ``forgotten`` ones (candidate, the topic the user asked to forget)."""
    by_turn = {t.turn: t for t in turns}
    # A session belongs to one user or agent: the one it was handed over for.
    namespace = next((t.namespace for t in turns if t.namespace), None) or config.default_namespace
    # …and may be about one project: a fact about its work is scoped to it (``scopes``).
    session_project = next((t.project for t in turns if t.project), None)
    facts: list[dict] = []
    rejected: list[dict] = []
    reasons: dict[str, int] = {}

    def reject(refusal: gate.Rejection, text: str, resource_ids: list[str]) -> None:
        reasons[refusal.reason] = reasons.get(refusal.reason, 0) + 1
        rejected.append({
            "session_id": session_id, "reason": refusal.reason, "detail": refusal.detail,
            "preview": gate.preview(text), "source_resource_ids": resource_ids,
            "extractor": extractor, "rejected_at": now,
        })

    for cand, topic in forgotten:
        reject(gate.Rejection("forgotten", f"the user asked to forget {topic[:60]!r}"), cand.content,
               [by_turn[n].resource_id for n in cand.source_turns if n in by_turn])
    parsed = structure.read_all([c.content for c in candidates], config,
                                [c.subject or speaker_of(c, by_turn) for c in candidates]) if candidates else []
    memory_kinds = kinds.memory_kinds([c.content for c in candidates], [_pick(c.kind, KINDS, "fact") for c in candidates],
                                      parsed)
    for cand, shape, memory_kind in zip(candidates, parsed, memory_kinds):
        sources = [by_turn[n] for n in cand.source_turns if n in by_turn]
        resource_ids = [t.resource_id for t in sources]
        refusal = gate.check(cand, config)
        if refusal is None and not sources:
            refusal = gate.Rejection("empty", "no source turn in this session")
        if refusal is not None:
            reject(refusal, cand.content, resource_ids)
            continue
        category = cand.category if cand.category in config.categories else "casual"
        kind = _pick(cand.kind, KINDS, "fact")
        strength = _pick(cand.strength, STRENGTHS, "explicit")
        trust = "untrusted" if cand.source_trust == "untrusted" or any(t.trust == "untrusted" or t.role == "tool" for t in sources) else "trusted"
        if trust == "untrusted" and strength == "explicit":
            strength = "implied"  # a tool's say-so is never an explicit user statement
        digest = content_hash(cand.content)
        said_at = max(t.content_at for t in sources)
        scope, project = scopes.scope_of(category, cand.content,
                                         next((t.project for t in sources if t.project), session_project), config)
        facts.append({
            "id": fact_id(namespace, session_id, digest),
            "content": cand.content.strip(),
            "category": category,
            "kind": kind,
            "memory_kind": memory_kind,
            "tags": sorted(set(cand.tags)),
            "entities": structure.merged_entities(cand.entities, shape.entities),
            "importance": scoring.base_importance(config, category, source_trust=trust,
                                                  remember=cand.remember, action_required=cand.action_required),
            "confidence": scoring.confidence(config, strength),
            "strength": strength,
            "sentiment": _pick(cand.sentiment, SENTIMENTS, "neutral"),
            "tier": _pick(cand.tier, TIERS, config.tier_for(kind, category)),
            "scope": scope,
            "project": project,
            "namespace": namespace,
            "source_trust": trust,
            # Another agent's key wrote it: its claim, whatever the extractor read it as.
            "provenance": ("extracted" if trust == "untrusted" else AGENT_STATED
                           if any(agent_written(t.written_by) for t in sources) else cand.provenance),
            "source_session": session_id,
            "source_resource_ids": resource_ids,
            "source_turn_ids": [t.external_id or f"{session_id}:{t.turn}" for t in sources],
            # A considered or assumed change ("everyone assumed Ngozi would switch") replaces nothing.
            "supersedes_hint": None if shape.tentative else cand.supersedes or shape.replaced,
            "subject": cand.subject or shape.subject,
            **(shaped := structure.fields(cand, shape, said_at)),
            "subject_name": subject_name(cand.content, shaped["subject_key"]),
            **kinds.structure_of(kind, cand.content, cand.directive, cand.steps, cand.prerequisites,
                                 cand.warnings, cand.trigger_patterns),
            "reported_by": cand.reported_by,
            **read_fields(cand.content.strip(), kind, said_at, directive=cand.directive, remind_on=cand.remind_on,
                          entities=structure.merged_entities(cand.entities, shape.entities)),
            "content_hash": digest,
            "created_at": said_at,
            "prompt_version": prompt_version,
            "extractor": extractor,
        })
    # A credential redacted at ingest is refused even when the extractor found no fact
    # around it: the audit trail shows every pasted secret, whatever the extractor kept.
    refused = {rid for row in rejected if row["reason"] == "credential" for rid in row["source_resource_ids"]}
    for turn in turns:
        found_kinds = sorted(set(gate.REDACTED.findall(turn.content)))
        if found_kinds and turn.resource_id not in refused:
            reject(gate.Rejection("credential", f"turn {turn.turn} held a credential ({', '.join(found_kinds)}), "
                                                "redacted at ingest"), turn.content, [turn.resource_id])
    fact_frame = pl.DataFrame(facts, schema=FACT_SCHEMA).unique(subset=["id"], keep="first", maintain_order=True)
    return GatedFacts(fact_frame, pl.DataFrame(rejected, schema=REJECTION_SCHEMA), reasons, namespace)
