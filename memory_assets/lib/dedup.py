"""Deduplication: exact (normalized content hash) and semantic (cosine within a namespace).

A semantic duplicate is merged, not dropped: the fresher wording wins, the survivor
gains confidence (a second sighting confirms it), and it inherits every source id, so
nothing the duplicate pointed at is lost. Every merge is returned for the merge log.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import numpy as np
import polars as pl

from memory_assets.lib import supersession
from retrieval.trust import disagree

_SPACE = re.compile(r"\s+")
_EDGE_PUNCT = re.compile(r"^[\s\"'`.,;:!?-]+|[\s\"'`.,;:!?-]+$")


def normalize(content: str) -> str:
    return _EDGE_PUNCT.sub("", _SPACE.sub(" ", content.lower())).strip()


def content_hash(content: str) -> str:
    """SHA-256 of the normalized text: the same fact in other spacing or case is one fact."""
    return hashlib.sha256(normalize(content).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Merge:
    kept_id: str
    merged_id: str
    similarity: float
    kept_content: str
    merged_content: str


_LIST_COLS = ("source_resource_ids", "source_turn_ids", "tags", "entities", "merged_from")


def _union(values: list[list[str] | None]) -> list[str]:
    seen: dict[str, None] = {}
    for value in values:
        for v in value or []:
            seen.setdefault(v, None)
    return list(seen)


def _absorb(survivor: dict, other: dict, bonus: float) -> dict:
    """Fold ``other`` into ``survivor``: union of sources, confidence bonus, max importance."""
    merged = dict(survivor)
    for col in _LIST_COLS:
        if col in merged:
            merged[col] = _union([survivor.get(col), other.get(col)])
    merged["merged_from"] = _union([survivor.get("merged_from"), [other["id"]], other.get("merged_from")])
    merged["confidence"] = round(min(1.0, max(survivor["confidence"], other["confidence"]) + bonus), 4)
    merged["importance"] = max(survivor["importance"], other["importance"])
    for counter in ("reference_count", "injected_count", "echo_count", "fizzle_count"):
        if counter in merged:
            merged[counter] = (survivor.get(counter) or 0) + (other.get(counter) or 0)
    return merged


def _replaces(hint: str | None, old_content: str) -> bool:
    """A row hinted ``hint`` says it replaces a row whose text is ``old_content``."""
    return bool(hint) and supersession.mentions(old_content, supersession.hint_words(hint))


def replace_rows(frame: pl.DataFrame, changed: dict[int, dict], keep: np.ndarray | None = None) -> pl.DataFrame:
    """``frame`` with the rows at the positions in ``changed`` replaced by those dicts,
    and only the positions where ``keep`` is True (all when None), in position order.

    What a ``to_dicts()`` → edit → ``pl.DataFrame(rows, schema=frame.schema)`` round trip
    gives, at the cost of the rows that changed rather than of the whole frame.
    """
    index = "__row_position"
    base = frame.with_row_index(index)
    if keep is not None:
        base = base.filter(pl.Series(keep, dtype=pl.Boolean))
    if changed:
        positions = sorted(changed)
        patch = pl.DataFrame([changed[p] for p in positions], schema=frame.schema).with_columns(
            pl.Series(index, positions, dtype=base.schema[index]))
        base = pl.concat([base.filter(~pl.col(index).is_in(positions)), patch.select(base.columns)]).sort(index)
    return base.drop(index)


def exact_dedup(items: pl.DataFrame) -> tuple[pl.DataFrame, list[Merge]]:
    """One row per (namespace, content_hash); the earliest row keeps its id.

    Only the rows of a repeated key become Python dicts; the rest stay columnar.
    """
    if items.is_empty():
        return items, []
    ordered = items.sort("created_at")
    key = pl.struct("namespace", "content_hash")
    flags = ordered.select(dup=key.is_duplicated(), first=key.is_first_distinct())
    repeated = flags["dup"].to_numpy()
    if not repeated.any():
        return ordered, []
    positions = np.flatnonzero(repeated)
    merges: list[Merge] = []
    kept: dict[tuple[str, str], tuple[int, dict]] = {}
    for position, row in zip(positions.tolist(), ordered[positions].to_dicts()):
        key_value = (row["namespace"], row["content_hash"])
        if key_value in kept:
            first, survivor = kept[key_value]
            merges.append(Merge(survivor["id"], row["id"], 1.0, survivor["content"], row["content"]))
            kept[key_value] = (first, _absorb(survivor, row, 0.0))
        else:
            kept[key_value] = (position, row)
    keep = ~repeated | flags["first"].to_numpy()
    return replace_rows(ordered, dict(kept.values()), keep), merges


def semantic_dedup(items: pl.DataFrame, vectors: np.ndarray, *, threshold: float, bonus: float,
                   candidates: np.ndarray | None = None, block: int = 2048) -> tuple[pl.DataFrame, np.ndarray, list[Merge]]:
    """Merge rows whose vectors have cosine above ``threshold`` within one namespace.

    Args:
        items: rows aligned with ``vectors`` (unit vectors).
        threshold: cosine above which two items are one memory.
        bonus: confidence added to the survivor.
        candidates: indices of rows to compare against all others (new rows); all rows
            when None. Rows outside ``candidates`` are never compared with each other,
            so an incremental run costs new × all, not all × all.
        block: rows per matrix block, to bound memory.
    Returns:
        the surviving rows, their vectors, and the merges made.
    """
    n = items.height
    if n < 2:
        return items, vectors, []
    # Columns for the comparisons; whole rows (dicts) only for the rows that merge.
    namespaces = np.asarray(items["namespace"].to_list())
    created = items["created_at"].to_list()
    contents = items["content"].to_list()
    hints = items["supersedes_hint"].to_list() if "supersedes_hint" in items.columns else [None] * n
    order = np.arange(n) if candidates is None else np.asarray(sorted(set(candidates.tolist())), dtype=int)
    parent = np.arange(n)

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    pairs: list[tuple[int, int, float]] = []
    for start in range(0, len(order), block):
        idx = order[start:start + block]
        sims = vectors[idx] @ vectors.T
        for r, i in enumerate(idx):
            sims[r, i] = -1.0  # not itself
            hits = np.nonzero(sims[r] > threshold)[0]
            for j in hits:
                if namespaces[j] == namespaces[i] and (candidates is None and j > i or candidates is not None):
                    # "due at 11,799" vs "due at 17,771" are alike but disagree: a
                    # contradiction for the lifecycle to resolve, never a duplicate to merge.
                    if disagree(contents[i], contents[j]):
                        continue
                    # "now prefers afternoon instead of morning" replaces "prefers morning":
                    # supersession, not a duplicate — merging would lose the old item's fate.
                    if _replaces(hints[i], contents[j]) or _replaces(hints[j], contents[i]):
                        continue
                    pairs.append((int(i), int(j), float(sims[r, j])))
    if not pairs:
        return items, vectors, []
    rows: dict[int, dict] = {}

    def row(i: int) -> dict:
        if i not in rows:
            rows[i] = items.row(i, named=True)
        return rows[i]

    merges: list[Merge] = []
    for i, j, sim in sorted(pairs, key=lambda p: -p[2]):
        a, b = find(i), find(j)
        if a == b:
            continue
        # The fresher wording survives (DESIGN: keep the fresher wording, confidence +0.05).
        keep, drop = (a, b) if created[a] >= created[b] else (b, a)
        merges.append(Merge(row(keep)["id"], row(drop)["id"], sim, row(keep)["content"], row(drop)["content"]))
        rows[keep] = _absorb(row(keep), row(drop), bonus)
        parent[drop] = keep
    survivors = [i for i in range(n) if find(i) == i]
    alive = np.zeros(n, dtype=bool)
    alive[survivors] = True
    out = replace_rows(items, {i: r for i, r in rows.items() if alive[i]}, alive)
    return out, vectors[survivors], merges
