"""Consolidation: all extracted facts become the canonical memory items.

Pure core of the ``memory_items`` asset: exact dedup, embeddings (each distinct
content hash embedded once, ever), semantic merge, supersession, and carrying what the
agent's feedback already changed on items that existed before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

import numpy as np
import polars as pl

from memory_assets.lib.extraction.fields import with_fields
from memory_assets.lib.extraction import gate
from memory_assets.lib.items import dedup, feedback, supersession, validity
from retrieval.config import MemoryConfig
from retrieval.schema import AGENT_STATED, ITEM_SCHEMA
from retrieval.spans import spanned

# What lifecycle runs change on an item; carried over from the last published version.
# (Feedback counters are not carried: they are re-derived from the event log every run.)
CARRIED = (
    "retrieval_priority", "status", "superseded_by", "supersedes", "invalid_at", "retired_why",
    "contradicts", "promoted", "expires_at", "updated_at", "first_seen_at",
)


# What the build reads of the last published items: their ids, hashes and merges, and
# what the lifecycle carries over (the rest is derived again from the facts).
PREVIOUS_COLUMNS = ("id", "namespace", "content_hash", "merged_from", *CARRIED)


# content hashes (a column) → (a matrix with a row per hash, or None when none is known;
# which rows were found): the vectors a build reuses (``ItemStore.vectors_for``).
VectorLookup = Callable[[pl.Series], tuple["np.ndarray | None", np.ndarray]]


class TextEmbedder(Protocol):
    model_id: str

    def embed(self, texts: list[str]) -> np.ndarray: ...


@dataclass
class Consolidated:
    items: pl.DataFrame
    vectors: np.ndarray
    merges: list[dedup.Merge] = field(default_factory=list)
    superseded: list[tuple[str, str]] = field(default_factory=list)
    embedded: int = 0
    reused_vectors: int = 0
    events_folded: dict[str, int] = field(default_factory=dict)
    # Positions (in ``items``) of rows that are new or whose text changed since the
    # previous version: the only rows the lifecycle compares for contradictions nightly.
    changed: list[int] | None = None


@spanned("consolidate: facts_to_items")
def facts_to_items(facts: pl.DataFrame, now: datetime) -> pl.DataFrame:
    """Fresh item rows for facts, with lifecycle fields at their starting values."""
    n = facts.height
    return facts.with_columns(
        session_id=pl.col("source_session"),
        updated_at=pl.col("created_at"),
        last_referenced_at=pl.lit(None, dtype=pl.Datetime("us", "UTC")),
        reference_count=pl.lit(0, dtype=pl.Int64),
        injected_count=pl.lit(0, dtype=pl.Int64),
        echo_count=pl.lit(0, dtype=pl.Int64),
        fizzle_count=pl.lit(0, dtype=pl.Int64),
        reinforcement=pl.lit(0.0),
        retrieval_priority=pl.lit(0.0),
        status=pl.lit("active"),
        supersedes=pl.lit(None, dtype=pl.String),
        superseded_by=pl.lit(None, dtype=pl.String),
        invalid_at=pl.lit(None, dtype=pl.Datetime("us", "UTC")),
        retired_why=pl.lit(None, dtype=pl.String),
        contradicts=pl.Series([[] for _ in range(n)], dtype=pl.List(pl.String)),
        promoted=pl.lit(False),
        expires_at=pl.lit(None, dtype=pl.Datetime("us", "UTC")),
        merged_from=pl.Series([[] for _ in range(n)], dtype=pl.List(pl.String)),
        embedding_model=pl.lit(None, dtype=pl.String),
        first_seen_at=pl.lit(now).cast(pl.Datetime("us", "UTC")),
    )


@spanned("consolidate")
def consolidate(facts: pl.DataFrame, previous: pl.DataFrame | None,
                known_vectors: Mapping[str, np.ndarray] | VectorLookup,
                embedder: TextEmbedder, config: MemoryConfig, now: datetime,
                events: pl.DataFrame | None = None, adopted: pl.DataFrame | None = None) -> Consolidated:
    """Build the item set from every extracted fact, and the items adopted from imports.

    Args:
        facts: all extracted facts (FACT_SCHEMA).
        previous: the last published items, whose feedback state is carried over.
        known_vectors: content hash → vector from the last published table (a dict, or
            a ``VectorLookup`` such as ``ItemStore.vectors_for``); only hashes missing
            here are embedded.
        embedder: turns text into unit vectors.
        now: the run's clock.
        events: the feedback event log, replayed onto the items (``feedback.fold``).
        adopted: items adopted from imports (``imports.adopt``: ITEM_SCHEMA, base scores,
            their feedback counters the base the events add to). Like items of the
            previous version, they are not compared as new rows for dedup or
            contradictions: their own memory did that.
    """
    items = facts_to_items(with_fields(facts), now)
    items, merges = dedup.exact_dedup(items)
    # A new item starts active, or as a candidate below the gate's usefulness bar.
    items = items.with_columns(status=gate.admitted(config))
    if previous is not None and not previous.is_empty():
        # A version published before a column existed carries nulls for it.
        previous = previous.with_columns([pl.lit(None, dtype=ITEM_SCHEMA[c]).alias(c) for c in CARRIED
                                          if c not in previous.columns])
        carried = previous.select(["id", *CARRIED]).filter(pl.col("id").is_in(items["id"].implode()))
        items = items.rename({"status": "_admitted"}).drop([c for c in CARRIED if c != "status"])
        items = items.join(carried, on="id", how="left")
        items = items.with_columns(
            status=pl.col("status").fill_null(pl.col("_admitted")),
            retrieval_priority=pl.col("retrieval_priority").fill_null(0.0),
            promoted=pl.col("promoted").fill_null(False),
            updated_at=pl.col("updated_at").fill_null(pl.col("created_at")),
            first_seen_at=pl.col("first_seen_at").fill_null(pl.lit(now).cast(pl.Datetime("us", "UTC"))),
            contradicts=pl.col("contradicts").fill_null([]),
        ).drop("_admitted")
    items = items.select(list(ITEM_SCHEMA) + ["supersedes_hint"]) if "supersedes_hint" in items.columns else items
    adopted = adopted if adopted is not None and adopted.height else None
    if adopted is not None:
        items = pl.concat([items, _carried_onto(adopted, previous)], how="diagonal_relaxed")
    items = items.sort("created_at", "id")
    folded: dict[str, int] = {}
    if events is not None:
        items, folded = feedback.fold(items, events, config)

    # Facts an earlier version merged fold straight back into their survivor, before
    # embedding: they need no vector and no similarity search.
    previous_ids = set(previous["id"].to_list()) if previous is not None and not previous.is_empty() else set()
    if previous_ids and previous is not None and "merged_from" in previous.columns:
        merged = previous.filter(pl.col("merged_from").list.len() > 0).select("id", "merged_from")
        merged_into = {m: survivor for survivor, absorbed in merged.iter_rows() for m in absorbed}
        items, refolded = dedup.fold_known(items, merged_into, bonus=config.confidence.merge_bonus)
        previous_ids.update(refolded)

    vectors, missing = _vectors(items, known_vectors, embedder)
    del known_vectors
    items = items.with_columns(embedding_model=pl.lit(embedder.model_id))

    known_ids = previous_ids | (set(adopted["id"].to_list()) if adopted is not None else set())
    new_rows = np.asarray([i for i, x in enumerate(items["id"].to_list()) if x not in known_ids], dtype=int)
    if new_rows.size:
        items, vectors, semantic = dedup.semantic_dedup(
            items, vectors, threshold=config.dedup.semantic_threshold,
            bonus=config.confidence.merge_bonus, candidates=None if not known_ids else new_rows, in_place=True,
        )
        merges.extend(semantic)

    superseded: list[tuple[str, str]] = []
    hinted = supersession.resolve(items, vectors, config.dedup.supersede_min_similarity)
    items = _retire(items, [validity.Retirement(n, o, "hint") for n, o, _sim in hinted], now, superseded)
    # Validity in time: a later value of a one-value relation, or a stated change, retires
    # the earlier item (``validity``); the hint pairs above are settled first.
    items = _retire(items, validity.retire_replaced(items, vectors, config, embedder.embed, known_ids), now, superseded)
    items = items.select(list(ITEM_SCHEMA))
    changed = None
    if known_ids:
        # Each id's text before: the previous version's, else as adopted.
        earlier = [f.select("id", pl.col("content_hash").alias("_before"))
                   for f in (previous if previous is not None and previous_ids else None, adopted) if f is not None]
        before = pl.concat(earlier).unique("id", keep="first", maintain_order=True)
        compared = items.select("id", "content_hash").join(before, on="id", how="left", maintain_order="left")
        changed = np.flatnonzero(compared["content_hash"].ne_missing(compared["_before"]).to_numpy()).tolist()
    return Consolidated(items, vectors, merges, superseded, embedded=len(missing),
                        reused_vectors=items["content_hash"].filter(~items["content_hash"].is_in(missing)).n_unique(),
                        events_folded=folded, changed=changed)


def lookup_in(vectors: Mapping[str, np.ndarray]) -> VectorLookup:
    """A ``VectorLookup`` over a dict of content hash → vector."""
    def lookup(hashes: pl.Series) -> tuple[np.ndarray | None, np.ndarray]:
        rows = [vectors.get(h) for h in hashes.to_list()]
        found = np.asarray([row is not None for row in rows], dtype=bool)
        if not found.any():
            return None, found
        matrix = np.zeros((len(rows), len(next(r for r in rows if r is not None))), dtype=np.float32)
        matrix[found] = np.stack([r for r in rows if r is not None])
        return matrix, found
    return lookup


@spanned("consolidate: vectors")
def _vectors(items: pl.DataFrame, known: Mapping[str, np.ndarray] | VectorLookup,
             embedder: TextEmbedder) -> tuple[np.ndarray, list[str]]:
    """One vector per row: the known one of its content hash, else embedded (each text
    once); and the hashes embedded, in the order first met."""
    hashes = items["content_hash"]
    matrix, found = (known if callable(known) else lookup_in(known))(hashes)
    missing = hashes.filter(pl.Series(~found)).unique(maintain_order=True).to_list()
    if missing:
        texts = items.filter(pl.col("content_hash").is_in(missing)).unique("content_hash", keep="first", maintain_order=True)
        fresh = np.asarray(embedder.embed(texts["content"].to_list()), dtype=np.float32)
        if matrix is None:
            matrix = np.zeros((items.height, fresh.shape[1]), dtype=np.float32)
        position = pl.DataFrame({"content_hash": texts["content_hash"]}).with_row_index("_fresh")
        rows = np.flatnonzero(~found)
        fill = (pl.DataFrame({"content_hash": hashes.gather(rows)})
                .join(position, on="content_hash", how="left", maintain_order="left")["_fresh"].to_numpy())
        matrix[rows] = fresh[fill]
    if matrix is None:
        matrix = np.zeros((0, 1), np.float32)
    return matrix, missing


def _carried_onto(adopted: pl.DataFrame, previous: pl.DataFrame | None) -> pl.DataFrame:
    """Adopted items with what the lifecycle has changed since they were adopted (the
    ``CARRIED`` columns of the previous version), their own state before that."""
    if previous is None or previous.is_empty():
        return adopted
    carried = [c for c in CARRIED if c in previous.columns]
    later = previous.select(["id", *carried]).filter(pl.col("id").is_in(adopted["id"].implode()))
    if later.is_empty():
        return adopted
    joined = adopted.join(later, on="id", how="left", suffix="_later")
    known = pl.col("id").is_in(later["id"].implode())
    return joined.with_columns([pl.when(known).then(pl.col(f"{c}_later")).otherwise(pl.col(c)).alias(c)
                                for c in carried]).select(adopted.columns)


def _retire(items: pl.DataFrame, pairs: list[validity.Retirement], now: datetime,
            superseded: list[tuple[str, str]]) -> pl.DataFrame:
    """Mark each (new, old, rule) row pair: the old one superseded by the new one (appended
    to ``superseded``), with why (``validity.why``); an old row already retired is left as it is.
    A "conflict" pair retires nothing: once the retirements are done, the two rows, if both
    still stand, name each other in ``contradicts`` (the trust pass marks both). Another
    agent's claim (``agent_stated``) never retires what the user said: such a pair is a
    conflict, which the trust pass settles for the user."""
    rows: dict[int, dict] = {}
    for new_i, old_i, _rule in pairs:
        for i in (old_i, new_i):
            if i not in rows:
                rows[i] = items.row(i, named=True)
    for new_i, old_i, rule in sorted(pairs, key=lambda p: p.rule == "conflict"):
        old, new = rows[old_i], rows[new_i]
        if old["status"] not in ("active", "candidate"):
            continue
        if new.get("provenance") == AGENT_STATED and old.get("provenance") != AGENT_STATED:
            rule = "conflict"
        if rule == "conflict":
            if new["status"] in ("active", "candidate") and new["id"] not in (old["contradicts"] or []):
                old["contradicts"] = [*(old["contradicts"] or []), new["id"]]
                new["contradicts"] = [*(new["contradicts"] or []), old["id"]]
            continue
        old["status"] = "superseded"
        old["superseded_by"] = new["id"]
        old["retired_why"] = validity.why(old, new, rule)
        old["updated_at"] = now
        new["supersedes"] = new["supersedes"] or old["id"]
        superseded.append((new["id"], old["id"]))
    return dedup.replace_rows(items, rows) if rows else items


_LINKS = ("supersedes", "superseded_by", "contradicts")


def repair_links(items: pl.DataFrame) -> pl.DataFrame:
    """Point supersedes/superseded_by/contradicts at ids that exist.

    A link carried from an earlier version may name an item that has since merged into
    another: it follows the merge to the survivor, and a link to nothing is dropped.
    """
    if items.is_empty():
        return items
    ids = set(items["id"].to_list())
    alias = {m: r["id"] for r in items.select("id", "merged_from").to_dicts() for m in (r["merged_from"] or [])}

    def resolve(value: str | None) -> str | None:
        if value is None:
            return None
        value = alias.get(value, value)
        return value if value in ids else None

    # Only the link columns become dicts; the rest of the frame is kept as it is.
    rows = items.select("id", *_LINKS).to_dicts()
    for row in rows:
        row["supersedes"] = resolve(row["supersedes"])
        row["superseded_by"] = resolve(row["superseded_by"])
        row["contradicts"] = [c for c in (resolve(x) for x in row["contradicts"] or []) if c and c != row["id"]]
        if row["supersedes"] == row["id"]:
            row["supersedes"] = None
        if row["superseded_by"] == row["id"]:
            row["superseded_by"] = None
    return items.with_columns([pl.Series(c, [r[c] for r in rows], dtype=items.schema[c]) for c in _LINKS])
