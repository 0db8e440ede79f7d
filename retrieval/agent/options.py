"""Which retrieval stages run: the knobs the eval turns off one at a time."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RetrievalOptions:
    """Stages of the retrieval path (DESIGN.md, "Retrieval path").

    Attributes:
        rewrite: turn the last messages into a search query (LLM when configured,
            else keywords and entities); off = the raw text is searched.
        tiers: try category summaries (tier 1) before items (tier 2).
        fusion: ``hybrid`` (vector + BM25 + the graph walk, fused), ``vector``, ``fts`` or
            ``graph`` (the walk from the query's entities alone).
        graph: add the graph walk to ``hybrid`` (dual search, ADR-0077); off = vector + BM25.
        scoring: re-rank by importance, decay, confidence, reinforcement and trust;
            off = relevance only.
        budget_aware: at most 5 items, and skip the costly paths (LLM rewrite, tier 1).
        relevance_floor: inject nothing the query is not about (``[injection]
            min_similarity``); off = the best ``k`` whatever their relevance.
        triggers: a negative rule whose trigger patterns the context names leads the
            block, whatever the query is about (``retrieval.agent.triggers``).
    """

    rewrite: bool = True
    tiers: bool = True
    fusion: str = "hybrid"
    graph: bool = True
    scoring: bool = True
    budget_aware: bool = False
    relevance_floor: bool = True
    triggers: bool = True
