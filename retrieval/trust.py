"""The trust pass: what the agent should know about each memory before it relies on it.

Flags, appended to the item's line in the block:
- ``[conflict]`` on both items of a pair in the set that disagree (an explicit
  ``contradicts`` link, or two near-identical statements with different numbers or
  opposite polarity);
- ``[uncertain]`` below the configured confidence (0.3);
- ``[stale]`` when not confirmed for the configured days (90);
- ``[untrusted]`` for facts from tool output or untrusted data.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import datetime

import numpy as np

from retrieval.config import MemoryConfig
from retrieval.scoring import age_days
from retrieval.search import Hit

_NUMBER = re.compile(r"\d[\d,.:]*")
_NEGATION = re.compile(r"\b(?:not|no|never|n't|no longer|stopped|quit)\b", re.IGNORECASE)


def disagree(a: str, b: str) -> bool:
    """Two statements of one subject that differ in a number or in polarity."""
    numbers_a, numbers_b = set(_NUMBER.findall(a)), set(_NUMBER.findall(b))
    if numbers_a and numbers_b and numbers_a != numbers_b:
        return True
    return bool(_NEGATION.search(a)) != bool(_NEGATION.search(b))


# The hits' vectors: an array aligned with the hits, or a function that reads the rows
# of the hits at the given positions (only the ones a conflict check needs).
Vectors = np.ndarray | Callable[[list[int]], np.ndarray]


def conflicts(hits: Sequence[Hit], vectors: Vectors | None, threshold: float) -> set[tuple[str, str]]:
    """Pairs of ids in ``hits`` that contradict each other.

    The text test comes first: only a pair that ``disagree``s and is not linked already
    needs its vectors, so a block without such a pair reads none.
    """
    pairs: set[tuple[str, str]] = set()
    ids = {h.id for h in hits}
    for hit in hits:
        for other in hit.row.get("contradicts") or []:
            if other in ids and other != hit.id:
                pairs.add(tuple(sorted((hit.id, other))))  # type: ignore[arg-type]
    if vectors is None or len(hits) < 2:
        return pairs
    suspects = [(i, j) for i in range(len(hits)) for j in range(i + 1, len(hits))
                if tuple(sorted((hits[i].id, hits[j].id))) not in pairs
                and disagree(hits[i].content, hits[j].content)]
    if not suspects:
        return pairs
    needed = sorted({k for pair in suspects for k in pair})
    rows = vectors[needed] if isinstance(vectors, np.ndarray) else vectors(needed)
    at = {k: n for n, k in enumerate(needed)}
    for i, j in suspects:
        if float(rows[at[i]] @ rows[at[j]]) >= threshold:
            pairs.add(tuple(sorted((hits[i].id, hits[j].id))))  # type: ignore[arg-type]
    return pairs


def flags(hits: Sequence[Hit], config: MemoryConfig, now: datetime,
          vectors: Vectors | None = None) -> dict[str, list[str]]:
    """id → the flags to show on its line, in a fixed order."""
    cfg = config.injection
    conflicted = {i for pair in conflicts(hits, vectors, float(cfg["conflict_similarity"])) for i in pair}
    out: dict[str, list[str]] = {}
    for hit in hits:
        marks: list[str] = []
        if hit.id in conflicted:
            marks.append("[conflict]")
        if hit.confidence < float(cfg["uncertain_below"]):
            marks.append("[uncertain]")
        confirmed = hit.row.get("last_referenced_at") or hit.row.get("updated_at") or hit.row.get("created_at")
        if confirmed is not None and age_days(confirmed, now) > float(config.decay["stale_after_days"]):
            marks.append("[stale]")
        if hit.source_trust == "untrusted":
            marks.append("[untrusted]")
        if marks:
            out[hit.id] = marks
    return out
