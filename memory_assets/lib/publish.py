"""Write a new version of the item store, then publish it (DESIGN principle 4).

``write_items`` writes a versioned Parquet file and a new LanceDB table version with its
full-text index; nothing the agent reads has changed yet. ``publish`` moves the agent's
pointers: the LanceDB ``published`` tag and the Parquet snapshot (atomic rename).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import lancedb
import numpy as np
import polars as pl

from retrieval.paths import DataRoot
from retrieval.store import ITEMS_TABLE, PUBLISHED_TAG

# Above this many rows brute-force vector search gets slow (~250 ms at 100k on 2 cores):
# build an ANN index instead.
VECTOR_INDEX_MIN_ROWS = 20_000


@dataclass(frozen=True)
class ItemsVersion:
    version: int
    parquet: Path
    rows: int


def _stamp(now: datetime) -> str:
    return now.strftime("%Y%m%dT%H%M%S%f")


def write_items(paths: DataRoot, items: pl.DataFrame, vectors: np.ndarray, now: datetime) -> ItemsVersion:
    """Write (not publish) a new version of the items: Parquet file + LanceDB version."""
    versions = paths.items_dir / "versions"
    versions.mkdir(parents=True, exist_ok=True)
    parquet = versions / f"items-{_stamp(now)}.parquet"
    tmp = parquet.with_suffix(".parquet.tmp")
    items.write_parquet(tmp)
    os.replace(tmp, parquet)

    table_data = items.to_arrow()
    dim = vectors.shape[1] if vectors.ndim == 2 and vectors.shape[0] else 384
    import pyarrow as pa

    vec_type = pa.list_(pa.float32(), dim)
    flat = pa.array(vectors.astype(np.float32).reshape(-1), type=pa.float32())
    table_data = table_data.append_column("vector", pa.FixedSizeListArray.from_arrays(flat, dim).cast(vec_type))
    db = lancedb.connect(str(paths.lancedb))
    table = db.create_table(ITEMS_TABLE, data=table_data, mode="overwrite")
    if items.height:
        table.create_fts_index("content", replace=True, with_position=False)
        if items.height >= VECTOR_INDEX_MIN_ROWS:
            table.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_HNSW_SQ")
    return ItemsVersion(version=table.version, parquet=parquet, rows=items.height)


def publish(paths: DataRoot, written: ItemsVersion) -> None:
    """Point the agent at ``written``: LanceDB tag first, then the Parquet snapshot."""
    db = lancedb.connect(str(paths.lancedb))
    table = db.open_table(ITEMS_TABLE)
    tags = table.tags.list()
    if PUBLISHED_TAG in tags:
        table.tags.update(PUBLISHED_TAG, written.version)
    else:
        table.tags.create(PUBLISHED_TAG, written.version)
    tmp = paths.published_items.with_suffix(".parquet.tmp")
    shutil.copyfile(written.parquet, tmp)
    os.replace(tmp, paths.published_items)
