"""Deduplication: exact (normalized content hash) and semantic (cosine within a namespace).

Two items are compared only within one *partition*: the same namespace and the same
project (null for global items). Two projects stating the same rule keep an item each,
so neither project loses it to the other's scope.

A semantic duplicate is merged, not dropped: the fresher wording wins, the survivor
gains confidence (a second sighting confirms it), and it inherits every source id, so
nothing the duplicate pointed at is lost. Every merge is returned for the merge log.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from memory_assets.lib.items import supersession
from memory_assets.lib.items.similarity import partitions, similarity_blocks
from retrieval.spans import spanned
from retrieval.text import different_values, opposed


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


def _absorb(survivor: dict, others: list[dict], bonus: float) -> dict:
    """Fold ``others`` into ``survivor`` at once: union of sources, confidence + ``bonus``
    per item folded in (capped at 1), max importance, summed counters.

    One fold per cluster, not one per pair: folding pair by pair copies the survivor's
    growing lists each time, which is quadratic in the size of a cluster.
    """
    merged = dict(survivor)
    group = [survivor, *others]
    for col in _LIST_COLS:
        if col in merged:
            merged[col] = _union([row.get(col) for row in group])
    merged["merged_from"] = _union([survivor.get("merged_from")]
                                   + [part for o in others for part in ([o["id"]], o.get("merged_from"))])
    merged["confidence"] = round(min(1.0, max(row["confidence"] for row in group) + bonus * len(others)), 4)
    merged["importance"] = max(row["importance"] for row in group)
    for counter in ("reference_count", "injected_count", "echo_count", "fizzle_count"):
        if counter in merged:
            merged[counter] = sum(row.get(counter) or 0 for row in group)
    return merged


def _fold_clusters(items: pl.DataFrame, parent: dict[int, int], bonus: float) -> tuple[pl.DataFrame, np.ndarray]:
    """Each root in ``parent`` (member position → root position) absorbs its members.

    Returns the frame without the members, and the positions kept.
    """
    members: dict[int, list[int]] = {}
    for member, root in parent.items():
        members.setdefault(root, []).append(member)
    involved = sorted({*members, *parent})
    rows = dict(zip(involved, items[involved].to_dicts()))
    changed = {root: _absorb(rows[root], [rows[m] for m in sorted(group)], bonus) for root, group in members.items()}
    alive = np.ones(items.height, dtype=bool)
    alive[list(parent)] = False
    return replace_rows(items, changed, alive), alive


def fold_known(items: pl.DataFrame, merged_into: dict[str, str], *, bonus: float) -> tuple[pl.DataFrame, set[str]]:
    """Rows an earlier version already merged fold into the same survivor again.

    Items are rebuilt from every fact on each run; a fact an earlier run merged comes
    back under its own id. ``merged_into`` (merged id → survivor id, from the previous
    version's ``merged_from``) folds it straight back, so only facts never seen before
    are compared by similarity (and embedded): a nightly run costs new × all, not
    merged × all. Returns the rows and the ids folded.
    """
    if not merged_into or items.is_empty():
        return items, set()
    ids = items["id"].to_list()
    position = {item_id: i for i, item_id in enumerate(ids)}
    partition = partitions(items)
    parent = {}
    for i, item_id in enumerate(ids):
        root = position.get(merged_into.get(item_id, ""))
        if root is not None and root != i and partition[root] == partition[i] and ids[root] not in merged_into:
            parent[i] = root
    if not parent:
        return items, set()
    out, _alive = _fold_clusters(items, parent, bonus)
    return out, {ids[i] for i in parent}


def _replaces(hint: str | None, old: dict) -> bool:
    """A row hinted ``hint`` says it replaces the row whose fields are ``old`` (its ``words``)."""
    return bool(hint) and supersession.mentions(old.get("words"), supersession.hint_words(hint), names=hint[:1].isupper())


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


@spanned("consolidate: exact dedup")
def exact_dedup(items: pl.DataFrame) -> tuple[pl.DataFrame, list[Merge]]:
    """One row per (namespace, project, content_hash); the earliest row keeps its id.

    Only the rows of a repeated key become Python dicts; the rest stay columnar.
    """
    if items.is_empty():
        return items, []
    ordered = items.sort("created_at")
    key = pl.struct(*(c for c in ("namespace", "project", "content_hash") if c in items.columns))
    flags = ordered.select(dup=key.is_duplicated(), first=key.is_first_distinct())
    repeated = flags["dup"].to_numpy()
    if not repeated.any():
        return ordered, []
    positions = np.flatnonzero(repeated)
    merges: list[Merge] = []
    groups: dict[tuple[str, str | None, str], tuple[int, list[dict]]] = {}
    for position, row in zip(positions.tolist(), ordered[positions].to_dicts()):
        key_value = (row["namespace"], row.get("project"), row["content_hash"])
        if key_value in groups:
            survivor = groups[key_value][1][0]
            merges.append(Merge(survivor["id"], row["id"], 1.0, survivor["content"], row["content"]))
            groups[key_value][1].append(row)
        else:
            groups[key_value] = (position, [row])
    keep = ~repeated | flags["first"].to_numpy()
    changed = {first: _absorb(group[0], group[1:], 0.0) for first, group in groups.values()}
    return replace_rows(ordered, changed, keep), merges


@spanned("consolidate: semantic dedup")
def semantic_dedup(items: pl.DataFrame, vectors: np.ndarray, *, threshold: float, bonus: float,
                   candidates: np.ndarray | None = None, block: int | None = None,
                   in_place: bool = False) -> tuple[pl.DataFrame, np.ndarray, list[Merge]]:
    """Merge rows whose vectors have cosine above ``threshold`` within one partition.

    Args:
        items: rows aligned with ``vectors`` (unit vectors).
        threshold: cosine above which two items are one memory.
        bonus: confidence added to the survivor.
        candidates: indices of rows to compare against all others (new rows); all rows
            when None. Rows outside ``candidates`` are never compared with each other,
            so an incremental run costs new × all, not all × all.
        block: rows per matrix block (default: ``similarity_blocks``').
        in_place: the surviving vectors are moved up within ``vectors`` (which the caller
            gives up) instead of copied.
    Returns:
        the surviving rows, their vectors, and the merges made.
    """
    n = items.height
    if n < 2:
        return items, vectors, []
    # Columns for the comparisons, looked up only for the pairs alike enough (a million
    # rows' texts as Python strings are most of a gigabyte); whole rows (dicts) only for
    # the rows that merge.
    partition = partitions(items)
    content_column = items["content"]
    hint_column = items["supersedes_hint"] if "supersedes_hint" in items.columns else None

    def content(i: int) -> str:
        return content_column[int(i)]

    def hint(i: int) -> str | None:
        return None if hint_column is None else hint_column[int(i)]

    # The fields two alike rows are told apart by, looked up for those pairs only.
    compared = {c: items[c] for c in ("numbers", "denies", "value", "states_change", "session_id", "words") if c in items.columns}

    def fields(i: int) -> dict:
        return {c: supersession.listed(column, i) for c, column in compared.items()}

    def successive(a: dict, b: dict) -> bool:
        """One says the other's value changed: a stated change, said in another session,
        with another value ("does the long run on Sundays" → "on Saturdays now"). A
        successor for validity to date, never a duplicate to fold away."""
        return bool(a.get("states_change") or b.get("states_change")) and a.get("session_id") != b.get("session_id") \
            and different_values(a.get("value"), b.get("value"))

    order = np.arange(n) if candidates is None else np.asarray(sorted(set(candidates.tolist())), dtype=int)
    parent = np.arange(n)

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    pairs: list[tuple[int, int, float]] = []
    for idx, sims in similarity_blocks(vectors, order, block=block):
        for r, i in enumerate(idx):
            sims[r, i] = -1.0  # not itself
            hits = np.nonzero(sims[r] > threshold)[0]
            for j in hits:
                if partition[j] == partition[i] and (candidates is None and j > i or candidates is not None):
                    # "due at 11,799" vs "due at 17,771" are alike but disagree: a
                    # contradiction for the lifecycle to resolve, never a duplicate to merge.
                    a, b = fields(i), fields(j)
                    if opposed(a, b):
                        continue
                    # "now prefers afternoon instead of morning" replaces "prefers morning":
                    # supersession, not a duplicate — merging would lose the old item's fate.
                    if _replaces(hint(i), b) or _replaces(hint(j), a) or successive(a, b):
                        continue
                    pairs.append((int(i), int(j), float(sims[r, j])))
    if not pairs:
        return items, vectors, []
    created = items["created_at"]
    merges: list[Merge] = []
    for i, j, sim in sorted(pairs, key=lambda p: -p[2]):
        a, b = find(i), find(j)
        if a == b:
            continue
        # The fresher wording survives (DESIGN: keep the fresher wording, confidence +0.05).
        keep, drop = (a, b) if created[int(a)] >= created[int(b)] else (b, a)
        merges.append(Merge(items["id"][int(keep)], items["id"][int(drop)], sim, content(int(keep)), content(int(drop))))
        parent[drop] = keep
    members = {i: find(i) for i in {p for pair in pairs for p in pair[:2]} if find(i) != i}
    out, alive = _fold_clusters(items, members, bonus)
    return out, (_compacted(vectors, alive) if in_place else vectors[alive]), merges


def _compacted(vectors: np.ndarray, alive: np.ndarray, step: int = 65_536) -> np.ndarray:
    """``vectors[alive]`` written over ``vectors`` itself (a view of its first rows): a
    million vectors are 1.5 GB, and a copy would hold them twice."""
    kept = np.flatnonzero(alive)
    # Row k moves to k' <= k, so each write lands on rows already read.
    for start in range(0, len(kept), step):
        vectors[start:start + step][:len(kept[start:start + step])] = vectors[kept[start:start + step]]
    return vectors[:len(kept)]
