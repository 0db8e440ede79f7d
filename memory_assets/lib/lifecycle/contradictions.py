"""Contradictions: two active items about the same subject that state different values.

"Same subject" is a neighbour in vector space (cosine ≥ ``lifecycle.contradiction_similarity``)
in the same namespace and category; "different value" is the trust pass's test
(``retrieval.text.opposed``, on the facts' ``numbers`` and ``denies`` fields): differing numbers or opposite polarity. Pairs are found among
each item's nearest neighbours, never over all pairs:

* ``neighbors`` given (the caller's ANN index, e.g. LanceDB, for new and changed items):
  O(Σ |neighbors[i]| · d).
* otherwise a blocked top-k in numpy within each (namespace, category) group:
  O(Σ_g n_g² · d) multiply-adds in BLAS, O(block · n_g) memory, and the text test on at
  most k pairs per item — O(n · k), not O(n²).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import polars as pl

from retrieval.spans import spanned

# Neighbours per item in the numpy fallback.
TOP_K = 10
# Rows per matrix block in the fallback, to bound memory (block × group size floats).
BLOCK = 1024

Neighbors = Sequence[Sequence[int]] | Mapping[int, Sequence[int]]


RULES_GROUP = "\0rules"  # no category is named so
RULE_KINDS = frozenset({"negative", "procedure", "decision"})


def group_codes(items: pl.DataFrame) -> np.ndarray:
    """Whom and what each row is compared with, as an integer per row (-1: not active,
    compared with nothing): its namespace's rows of its category; a standing rule for the
    assistant (a negative rule, procedure or decision with a ``directive``) with every such
    rule of its namespace, whatever category each was filed under ("Never force-push to
    main" against "I decided you should force-push to main"). A correction stays with the
    facts of its category, which it corrects. Two projects' facts never contradict each
    other (each is true of its own project)."""
    if items.is_empty():
        return np.zeros(0, dtype=np.int64)

    def column(name: str) -> pl.Expr:
        return pl.col(name).cast(pl.String) if name in items.columns else pl.lit(None, dtype=pl.String)

    rule = (column("directive").fill_null("") != "") & column("kind").is_in(sorted(RULE_KINDS)).fill_null(False)
    key = pl.struct(column("namespace").fill_null(""), column("project").fill_null(""),
                    pl.when(rule).then(pl.lit(RULES_GROUP)).otherwise(column("category").fill_null("")).alias("group"))
    codes = items.select(pl.when(pl.col("status") == "active").then(key.rank("dense").cast(pl.Int64))
                         .otherwise(-1).fill_null(-1)).to_series()
    return codes.to_numpy()


def _given(neighbors: Neighbors) -> Iterator[tuple[int, int]]:
    pairs = neighbors.items() if isinstance(neighbors, Mapping) else enumerate(neighbors)
    for i, candidates in pairs:
        for j in candidates:
            yield int(i), int(j)


def _top_k(groups: np.ndarray, vectors: np.ndarray, threshold: float, k: int,
           block: int, only: set[int] | None = None, lengths: np.ndarray | None = None) -> Iterator[tuple[int, int]]:
    active = np.flatnonzero(groups >= 0)
    order = active[np.argsort(groups[active], kind="stable")]
    bounds = np.flatnonzero(np.diff(groups[order])) + 1
    for members in np.split(order, bounds) if order.size else []:
        if len(members) < 2:
            continue
        idx = np.asarray(members)
        group = vectors[idx] if lengths is None else vectors[idx] / lengths[idx]
        kk = min(k, len(idx) - 1)
        # Rows whose neighbours are looked up: all, or only those in ``only``.
        queries = np.arange(len(idx)) if only is None else np.flatnonzero(np.isin(idx, list(only)))
        for start in range(0, len(queries), block):
            part = queries[start:start + block]
            sims = group[part] @ group.T
            sims[np.arange(len(part)), part] = -np.inf  # not itself
            above = sims >= threshold
            # A row with at most kk neighbours at or above the threshold keeps all of them
            # (they outrank everything below it); only a crowded row needs its top kk.
            crowded = above.sum(axis=1) > kk
            for r, c in zip(*np.nonzero(above & ~crowded[:, None])):
                yield int(idx[part[r]]), int(idx[c])
            crowded_rows = np.flatnonzero(crowded)
            if crowded_rows.size:
                top = np.argpartition(-sims[crowded_rows], kk - 1, axis=1)[:, :kk]
                close = np.take_along_axis(sims[crowded_rows], top, axis=1) >= threshold
                for r, c in zip(*np.nonzero(close)):
                    yield int(idx[part[crowded_rows[r]]]), int(idx[top[r, c]])


@spanned("lifecycle.apply: contradiction neighbours")
def candidate_pairs(groups: np.ndarray, vectors: np.ndarray, threshold: float, *,
                    neighbors: Neighbors | None = None, only: Sequence[int] | None = None,
                    k: int = TOP_K, block: int = BLOCK, lengths: np.ndarray | None = None) -> list[tuple[float, int, int]]:
    """Pairs of active rows alike enough to be about the same subject.

    Args:
        groups: each row's ``group_codes`` (-1: not active), aligned with ``vectors``
            (unit vectors).
        threshold: the cosine at or above which two items share a subject.
        neighbors: for each row index, candidate neighbour row indices; when None, the
            top ``k`` by cosine within the row's (namespace, category) group.
        lengths: what each row of ``vectors`` is divided by to be a unit vector (shape
            (n, 1)), when they are not unit vectors already: divided as they are used.
        only: with the numpy top-k, look up the neighbours of these rows only (the new
            and changed ones: pairs of unchanged rows were looked at when the newer of
            the two arrived), so a night costs changed × group, not group².
    Returns:
        (cosine, i, j) with i < j, most alike first (ties by index, so the order is stable).
    """
    found: dict[tuple[int, int], float] = {}
    source = (_given(neighbors) if neighbors is not None
              else _top_k(groups, vectors, threshold, k, block, None if only is None else set(only), lengths))
    for i, j in source:
        if i == j or groups[i] < 0 or groups[i] != groups[j]:
            continue
        key = (min(i, j), max(i, j))
        if key in found:
            continue
        a, b = ((vectors[key[0]], vectors[key[1]]) if lengths is None
                else (vectors[key[0]] / lengths[key[0]], vectors[key[1]] / lengths[key[1]]))
        sim = float(a @ b)
        if sim >= threshold:
            found[key] = sim
    return sorted(((s, i, j) for (i, j), s in found.items()), key=lambda p: (-p[0], p[1], p[2]))
