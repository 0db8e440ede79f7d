"""Supersession: a newer fact that says it replaces an older one retires the older one.

The extractor leaves a ``supersedes`` hint ("black", "morning meetings"); here the hint
is resolved to the older active item it most resembles. The old item stays, marked
``superseded`` with a pointer to its successor, so nothing is lost and it is never
injected again.
"""

from __future__ import annotations

import re

import numpy as np

_WORD = re.compile(r"[a-z0-9][a-z0-9'+.-]*")
# Below this cosine, a hinted fact and an older item are not about the same thing.
MIN_SIMILARITY = 0.45


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


def resolve(rows: list[dict], vectors: np.ndarray) -> list[tuple[int, int, float]]:
    """Pair each hinted row with the older active row it supersedes.

    Returns (new index, old index, similarity) triples; rows are modified by the caller.
    """
    pairs: list[tuple[int, int, float]] = []
    # A row already paired on an earlier run keeps its pair.
    hinted = [i for i, r in enumerate(rows) if r.get("supersedes_hint") and not r.get("supersedes")]
    for i in hinted:
        new = rows[i]
        hint = _words(new["supersedes_hint"])
        sims = vectors @ vectors[i]
        best, best_sim = -1, MIN_SIMILARITY
        for j in np.argsort(-sims)[:50]:
            old = rows[j]
            if j == i or old["status"] != "active" or old["namespace"] != new["namespace"]:
                continue
            if old["created_at"] > new["created_at"] or old.get("supersedes_hint") and old["created_at"] == new["created_at"]:
                continue
            mentions = bool(hint & _words(old["content"]))
            score = float(sims[j]) + (0.2 if mentions else 0.0)
            if (mentions or old["category"] == new["category"]) and score > best_sim:
                best, best_sim = int(j), score
        if best >= 0:
            pairs.append((i, best, best_sim))
    return pairs
