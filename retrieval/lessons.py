"""Lessons: the standing rules an agent should follow, from the user's corrections,
negative rules, procedures and decisions (``MemoryClient.lessons``; the nightly job
also writes them to ``lifecycle/lessons.json`` and ``MEMORY.md``).

Read from the published items, so an agent gets the lessons of its own namespace only.
"""

from __future__ import annotations

import polars as pl

from retrieval.config import MemoryConfig
from retrieval.spans import spanned
from retrieval.text import normalize

# The kinds a lesson comes from; extraction gives each of them a directive.
LESSON_KINDS = ("correction", "negative", "procedure", "decision")


@spanned("lessons")
def lessons(items: pl.DataFrame, config: MemoryConfig, *, limit: int | None = None) -> list[str]:
    """Lessons from the active, trusted corrections, negatives, procedures and decisions.

    At most ``limit`` (default ``[lifecycle] max_lessons``), ordered by importance, then
    confidence, then the newest first; duplicates (same text after normalizing case,
    spacing and end punctuation) keep the first. An item without a directive (one
    extracted before facts carried it) is not a lesson until it is extracted again.
    """
    if items.is_empty():
        return []
    rows = items.filter(
        (pl.col("status") == "active") & pl.col("kind").is_in(list(LESSON_KINDS))
        & (pl.col("source_trust") != "untrusted")
        & (pl.col("confidence") >= float(config.injection.uncertain_below))
        & pl.col("directive").is_not_null()
    ).sort(["importance", "confidence", "created_at", "id"], descending=[True, True, True, False])
    out: dict[str, str] = {}
    for text in rows["directive"].to_list():
        key = normalize(text)
        if key and key not in out:
            out[key] = text
        if len(out) >= (config.lifecycle.max_lessons if limit is None else limit):
            break
    return list(out.values())
