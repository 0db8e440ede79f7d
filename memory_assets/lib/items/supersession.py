"""Supersession: a newer fact that says it replaces an older one retires the older one.

The extractor leaves a ``supersedes`` hint naming what is replaced ("black",
"morning meetings"); here the hint is resolved to the older active item that mentions
it and most resembles the new fact. The old item stays, marked ``superseded`` with a
pointer to its successor, so nothing is lost and it is never injected again.
"""

from __future__ import annotations

import re

import numpy as np

from retrieval.text import PREFERENCE_VERBS, STOPWORDS
from retrieval.spans import spanned

_WORD = re.compile(r"[a-z0-9][a-z0-9'+.-]*")
# The verb of a preference is not what was replaced: "want black" replaces "black".
_STOP = STOPWORDS | PREFERENCE_VERBS


def hint_words(text: str) -> set[str]:
    return {w.strip(".'") for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'+.-]*")


def mentions(content: str, words: set[str], *, names: bool = False) -> bool:
    """Every hint word occurs in ``content`` as a common word, not inside a name:
    "switched from black" replaces "likes black", never "a bag from Black Diamond".
    With ``names`` (the hint is itself a name: "ditched Evernote"), names count too."""
    tokens = _TOKEN.findall(content)
    common: set[str] = set()
    for i, token in enumerate(tokens):
        word = token.lower().strip(".'")
        # Capitalized mid-sentence (and not the pronoun I) reads as a proper noun.
        if not names and i > 0 and token[:1].isupper() and not tokens[i - 1].endswith((".", "!", "?")):
            continue
        common.add(word)
    return words <= common


@spanned("consolidate: supersession")
def resolve(rows: list[dict], vectors: np.ndarray, min_similarity: float) -> list[tuple[int, int, float]]:
    """Pair each hinted row with the older active row it supersedes.

    The older row must be strictly older, in the same namespace and project (``dedup.partitions``), mention every word of
    the hint, and be at least ``min_similarity`` alike (``[dedup] supersede_min_similarity``: the
    older item must also mention every hint word, so the bar can be low). Returns (new, old, similarity).
    """
    pairs: list[tuple[int, int, float]] = []
    # A row already paired on an earlier run keeps its pair.
    hinted = [i for i, r in enumerate(rows) if r.get("supersedes_hint") and not r.get("supersedes")]
    for i in hinted:
        new = rows[i]
        hint = hint_words(new["supersedes_hint"])
        if not hint:
            continue
        sims = vectors @ vectors[i]
        for j in np.argsort(-sims)[:100]:
            old = rows[j]
            if sims[j] < min_similarity:
                break
            if (j == i or old["status"] != "active" or old["namespace"] != new["namespace"]
                    or old.get("project") != new.get("project") or old["created_at"] >= new["created_at"]):
                continue
            if mentions(old["content"], hint, names=new["supersedes_hint"][:1].isupper()):
                pairs.append((i, int(j), float(sims[j])))
                break
    return pairs
