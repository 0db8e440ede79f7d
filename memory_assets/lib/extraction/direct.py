"""Direct writes (``MemoryClient.remember``): the turn is the memory, stored as said.

A remembered turn is not mined for facts like a conversation: its words are the
memory, kept as written ("User prefers tabs"), unless they speak in the first person
("I prefer tabs"), which a later reader could not place: then the rules' third-person
rendering is stored. The offline rules still type it (category, kind, a standing rule's directive
and trigger patterns, entities) when they read exactly one fact in it, so "Never commit
.env files" is a negative rule surfaced by its triggers like one said in a session.
The candidate then goes through the same gate as any extraction (``build_facts``).
"""

from __future__ import annotations

import dataclasses

from memory_assets.lib.extraction import rules as R
from memory_assets.lib.extraction.categories import Categorizer
from memory_assets.lib.extraction.offline import OfflineExtractor
from retrieval.config import MemoryConfig
from retrieval.schema import Candidate, Turn

REMEMBERED = "remember"


def split_remembered(turns: list[Turn]) -> tuple[list[Turn], list[Turn]]:
    """(turns written with ``remember``, the conversation's turns)."""
    direct = [t for t in turns if t.source_format == REMEMBERED]
    return direct, [t for t in turns if t.source_format != REMEMBERED]


def remembered_candidates(turns: list[Turn], config: MemoryConfig,
                          extractor: OfflineExtractor | None = None) -> list[Candidate]:
    """One candidate per remembered turn, worded as the user wrote it, typed by the offline rules."""
    if not turns:
        return []
    rules = extractor or OfflineExtractor(config)
    categorizer: Categorizer | None = None
    out: list[Candidate] = []
    for turn in turns:
        content = " ".join(turn.content.split())
        if not content:
            continue
        read = rules.extract([dataclasses.replace(turn, source_format="jsonl")]).candidates
        if len(read) == 1:
            typed = read[0]
        else:  # several facts or none: keep the words whole, placed by the categorizer
            categorizer = categorizer or Categorizer(config)
            category, keywords = categorizer.best(content, "personal")
            typed = Candidate(content=content, category=category, kind="fact",
                              tier=config.tier_for("fact", category), tags=[k.lower() for k in keywords])
        worded = typed.content if len(read) == 1 and R.FIRST_PERSON.search(content) else content
        out.append(dataclasses.replace(
            typed, content=worded, source_turns=[turn.turn], source_trust=turn.trust,
            strength="explicit", remember=True,
            provenance="user_corrected" if typed.kind == "correction" else "user_stated"))
    return out
