"""Supersession: a newer fact that says it replaces an older one retires the older one.

The extractor leaves a ``supersedes`` hint naming what is replaced ("black",
"morning meetings"); here the hint is resolved to the older active item that mentions
it and most resembles the new fact. The old item stays, marked ``superseded`` with a
pointer to its successor, so nothing is lost and it is never injected again.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from memory_assets.lib.items.similarity import epoch_us, partitions, similarity_blocks
from retrieval.spans import spanned
from retrieval.text import PREFERENCE_VERBS, value_words

# (The verb of a preference is not what was replaced: "want black" replaces "black".)


def hint_words(text: str) -> set[str]:
    """A hint's content words, in the compared form a fact's ``words`` field holds."""
    return {w for w in value_words(text) if w not in PREFERENCE_VERBS and len(w) > 1}


def mentions(words: Sequence[str] | None, hint: set[str], *, names: bool = False) -> bool:
    """Every hint word is one of a fact's ``words`` (read at extraction) as a common word,
    not a name's (written with a capital): "switched from black" replaces "likes black",
    never "a bag from Black Diamond". With ``names`` (the hint is itself a name: "ditched
    Evernote"), names count too."""
    said = {w.lower() for w in words or () if names or not w[:1].isupper()}
    return bool(hint) and hint <= said


@spanned("consolidate: supersession")
def resolve(items: pl.DataFrame, vectors: np.ndarray, min_similarity: float) -> list[tuple[int, int, float]]:
    """Pair each hinted row of ``items`` with the older active row it supersedes.

    The older row must be strictly older, in the same namespace and project (``similarity.partitions``), mention every word of
    the hint, and be at least ``min_similarity`` alike (``[dedup] supersede_min_similarity``: the
    older item must also name every hint word among its ``words``, so the bar can be low). Returns (new, old, similarity),
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
    words = items["words"] if "words" in items.columns else pl.Series([None] * items.height)
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
            text, hint = hints[i]
            ranked = close[np.argsort(-row[close], kind="stable")]
            # Strictly older, active, in the same namespace and project.
            ranked = ranked[(ranked != i) & active[ranked] & (partition[ranked] == partition[i])
                            & (created[ranked] < created[i])]
            for j in ranked:
                if mentions(listed(words, j), hint, names=text[:1].isupper()):
                    pairs.append((i, int(j), float(row[j])))
                    break
    return pairs


def listed(column: pl.Series, i) -> list | None:
    """Row ``i`` of a list column as a list (one row's, not the column's: a million rows
    of words as Python lists would be gigabytes)."""
    value = column[int(i)]
    return value.to_list() if isinstance(value, pl.Series) else value
