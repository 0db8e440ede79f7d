"""Comparing items with each other: within one partition (the same namespace and project),
every row against every row, a block of similarities at a time.

Semantic dedup (``dedup``) and supersession (``supersession``) both compare this way.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import polars as pl


def partitions(items: pl.DataFrame) -> np.ndarray:
    """Per row, the (namespace, project) it is compared within, as an integer: two rows
    are compared only when theirs are equal (a missing namespace or project is its own
    value, never the empty one)."""
    if items.is_empty():
        return np.zeros(0, dtype=np.int64)

    def column(name: str) -> pl.Expr:
        value = pl.col(name) if name in items.columns else pl.lit(None, dtype=pl.String)
        return value.cast(pl.String).fill_null("\0")  # no name is a NUL

    return items.select(pl.struct(column("namespace"), column("project")).rank("dense").cast(pl.Int64)).to_series().to_numpy()


def epoch_us(column: pl.Series) -> np.ndarray:
    """Timestamps as integers (microseconds); a missing one sorts after every other."""
    return column.dt.epoch("us").fill_null(np.iinfo(np.int64).max).to_numpy()


# The similarity block held at once (float32; ``similarity_blocks``).
BLOCK_BYTES = 512 * 2**20


def similarity_blocks(vectors: np.ndarray, rows: Sequence[int], *, block: int | None = None,
                      ) -> Iterator[tuple[Sequence[int], np.ndarray]]:
    """(a block of ``rows``, their similarities to every row), block by block: as many rows
    as fit ``BLOCK_BYTES`` of similarities, at most 2,048 (``block`` to choose), so a
    million rows hold 512 MiB at a time instead of 8 GiB. Semantic dedup and supersession
    compare their rows with every row this way."""
    if block is None:
        block = int(min(2048, max(16, BLOCK_BYTES // (4 * max(len(vectors), 1)))))
    for start in range(0, len(rows), block):
        chunk = rows[start:start + block]
        yield chunk, vectors[chunk] @ vectors.T
