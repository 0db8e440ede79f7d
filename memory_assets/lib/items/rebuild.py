"""The items build as one pure function: ``rebuild_items(facts, previous, events, …)``.

Every extracted fact becomes an item again (``consolidation``: feedback folded, exact and
near duplicates merged, supersession), then the night's lifecycle runs as of ``now``
(``lifecycle.apply``), the pending weekly/monthly sweeps are applied, items due on a
forward trigger get today's boost, and each item's search text is assembled. It reads
and writes nothing: the ``memory_items`` asset reads the warehouse, calls this, and
writes what it returns; tests and benchmarks call it directly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import polars as pl

from memory_assets.lib import lifecycle
from memory_assets.lib.items import source_text, validity
from memory_assets.lib.items.consolidation import Consolidated, TextEmbedder, VectorLookup, consolidate, repair_links
from memory_assets.lib.lifecycle import sweeps as sweeping
from retrieval import scoring
from retrieval.config import MemoryConfig
from retrieval.spans import spanned


@dataclass
class Rebuilt:
    """The new item set, its vectors (row-aligned), the consolidation's counts, what
    the lifecycle did, and each item's full-text search text."""

    items: pl.DataFrame
    vectors: np.ndarray
    consolidated: Consolidated
    report: lifecycle.LifecycleReport
    search_text: pl.Series


@spanned("preload due triggers")
def preload_due_triggers(items: pl.DataFrame, config: MemoryConfig, now: datetime) -> pl.DataFrame:
    """On a forward trigger's day, its items get today's boost, so they surface unasked."""
    due = lifecycle.forward_triggers(items, now).filter(pl.col("trigger_date") == now.date())
    ids = {i for group in due["item_ids"].to_list() for i in group}
    if not ids:
        return items
    due_rows = items.filter(pl.col("id").is_in(list(ids))).select("id", "retrieval_priority")
    boosted = {i: scoring.preload_boost(config, p or 0.0) for i, p in due_rows.iter_rows()}
    return items.with_columns(retrieval_priority=pl.col("id").replace_strict(
        boosted, default=pl.col("retrieval_priority"), return_dtype=items.schema["retrieval_priority"]))


def rebuild_items(facts: pl.DataFrame, previous: pl.DataFrame | None, events: pl.DataFrame | None,
                  pending: Sequence[sweeping.Sweep],
                  known_vectors: Callable[[], Mapping[str, np.ndarray] | VectorLookup],
                  embedder: TextEmbedder, resources: pl.DataFrame | Callable[[], pl.DataFrame], config: MemoryConfig,
                  now: datetime, adopted: pl.DataFrame | None = None) -> Rebuilt:
    """The items as of ``now``.

    Args:
        facts: every extracted fact (FACT_SCHEMA).
        previous: the last published items (their lifecycle state is carried over).
        events: the feedback event log (``feedback.EVENT_SCHEMA``).
        pending: the sweeps not yet applied; a monthly one asks for the full refresh
            (every item embedded again, every pair checked for contradictions).
        known_vectors: gives the stored vectors (content hash → vector, or a
            ``VectorLookup``), called only when no refresh is asked.
        embedder: turns new text into unit vectors.
        resources: the turns the facts came from (their text is searched too), or what
            reads them: then they are read only for the search text, after the rest.
        adopted: items adopted from imports as they were (``imports.adopt``).
    """
    refresh = any(s.refresh for s in pending)
    result = consolidate(facts, previous, {} if refresh else known_vectors(), embedder, config, now, events=events,
                         adopted=adopted)
    # Without a refresh, contradictions are looked for around new and reworded items only.
    items, report = lifecycle.apply(result.items, result.vectors, config, now,
                                    changed=None if refresh else result.changed)
    items, swept = sweeping.apply(items, pending, config, now)
    report.add(swept)
    items = validity.stamp_invalid(repair_links(preload_due_triggers(items, config, now)))
    search = source_text.search_texts(items, source_text.turn_texts(resources() if callable(resources) else resources))
    return Rebuilt(items, result.vectors, result, report, search)
