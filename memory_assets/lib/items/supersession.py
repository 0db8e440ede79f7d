"""Supersession: a newer fact that says it replaces an older one retires the older one.

The extractor leaves a ``supersedes`` hint naming what is replaced ("black",
"morning meetings"); here the hint is resolved to the older active item that mentions
it and most resembles the new fact. The old item stays, marked ``superseded`` with a
pointer to its successor, so nothing is lost and it is never injected again.
"""

from __future__ import annotations


import numpy as np
import polars as pl

from memory_assets.lib.items.similarity import epoch_us, partitions, similarity_blocks
from retrieval.spans import spanned
from retrieval.text import PREFERENCE_VERBS, STOPWORDS, TOKEN, tokens

# The verb of a preference is not what was replaced: "want black" replaces "black".
_STOP = STOPWORDS | PREFERENCE_VERBS


def hint_words(text: str) -> set[str]:
    return {w.strip(".'") for w in tokens(text.lower()) if w not in _STOP and len(w) > 1}


def mentions(content: str, words: set[str], *, names: bool = False) -> bool:
    """Every hint word occurs in ``content`` as a common word, not inside a name:
    "switched from black" replaces "likes black", never "a bag from Black Diamond".
    With ``names`` (the hint is itself a name: "ditched Evernote"), names count too."""
    common: set[str] = set()
    before = None  # where the previous token ended: a sentence starts where ".", "!" or "?" lies between
    for m in TOKEN.finditer(content):
        token, gap = m.group(), "." if before is None else content[before:m.start()]
        before = m.end()
        # Capitalized mid-sentence (and not the pronoun I) reads as a proper noun.
        if not names and token[:1].isupper() and not any(c in ".!?" for c in gap):
            continue
        common.add(token.lower().strip(".'"))
    return words <= common


@spanned("consolidate: supersession")
def resolve(items: pl.DataFrame, vectors: np.ndarray, min_similarity: float) -> list[tuple[int, int, float]]:
    """Pair each hinted row of ``items`` with the older active row it supersedes.

    The older row must be strictly older, in the same namespace and project (``similarity.partitions``), mention every word of
    the hint, and be at least ``min_similarity`` alike (``[dedup] supersede_min_similarity``: the
    older item must also mention every hint word, so the bar can be low). Returns (new, old, similarity),
    as row positions.
    """
    pairs: list[tuple[int, int, float]] = []
    if items.is_empty() or "supersedes_hint" not in items.columns:
        return pairs
    # A row already paired on an earlier run keeps its pair.
    hint, paired = pl.col("supersedes_hint"), pl.col("supersedes")
    waiting = items.with_row_index("_row").filter(hint.is_not_null() & (hint != "")
                                                  & (paired.is_null() | (paired == "")))
    hints = {i: (text, hint_words(text)) for i, text in zip(waiting["_row"].to_list(),
                                                           waiting["supersedes_hint"].to_list())}
    hinted = [i for i, (_text, words) in hints.items() if words]
    if not hinted:
        return pairs
    # The compared columns as arrays (a million rows as dicts would be a gigabyte, and
    # their texts as Python strings most of one): texts are looked up for candidates only.
    active = (items["status"] == "active").fill_null(False).to_numpy()
    partition = partitions(items)
    created = epoch_us(items["created_at"])
    content = items["content"]
    # Every hinted row against every row, a block at a time (``similarity.similarity_blocks``);
    # only the rows at least ``min_similarity`` alike are candidates, the 100 closest of
    # them in order. (Sorting all n similarities per hinted row was quadratic in practice:
    # 1% of a million rows hinted, a million sorted each.)
    for chunk, sims in similarity_blocks(vectors, hinted):
        for r, i in enumerate(chunk):
            row = sims[r]
            close = np.flatnonzero(row >= min_similarity)
            if close.size > 100:
                close = close[np.argpartition(-row[close], 99)[:100]]
            text, words = hints[i]
            ranked = close[np.argsort(-row[close], kind="stable")]
            # Strictly older, active, in the same namespace and project.
            ranked = ranked[(ranked != i) & active[ranked] & (partition[ranked] == partition[i])
                            & (created[ranked] < created[i])]
            for j in ranked:
                if mentions(content[int(j)], words, names=text[:1].isupper()):
                    pairs.append((i, int(j), float(row[j])))
                    break
    return pairs

