"""Lessons: short, imperative rules the agent should follow, from what users corrected,
forbade, prescribed or decided.

Each active correction, negative, procedure or decision carries its ``directive``, the
imperative written at extraction ("Always run make lint before committing";
``lib/extraction/directives.py``); duplicates are dropped, most important first, at most
20 (``[lifecycle] max_lessons``). Untrusted items never become lessons (a tool's output
telling the agent what to do is exactly the injection the trust pass guards against),
nor do uncertain ones (below ``injection.uncertain_below``).
"""

from __future__ import annotations

import polars as pl

from memory_assets.lib.extraction.directives import LESSON_KINDS
from memory_assets.lib.items.dedup import normalize
from retrieval.config import MemoryConfig
from retrieval.spans import spanned


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
