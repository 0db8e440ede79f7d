"""The embeddings suite: vectors retrieval can compare, and the full-text index it searches.

Hybrid search fuses cosine similarity with BM25: a vector from another model, of
another dimension, with a NaN or not of unit length silently ranks wrong, and a table
without its full-text index loses the keyword half. Vectors are summarized per row with
numpy (dimension, NaN, norm) and the summary is validated with GX.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from memory_assets.lib.items.publish import FTS_COLUMN
from memory_assets.lib.quality.suite_report import QualityReport
from memory_assets.lib.quality.validation import Rule, validate
from retrieval.config import MemoryConfig
from retrieval.spans import spanned
from retrieval.store import VECTOR_BATCH

# Output dimension of each embedding model the config may name, so a check never has to
# load a model to know it. A model missing here is loaded once to ask it.
MODEL_DIMENSIONS = {
    "all-MiniLM-L6-v2": 384,
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
# A stored unit vector is within this of length 1 (float32 rounding is ~1e-7).
NORM_TOLERANCE = 1e-3
_PROBED: dict[str, int] = {}


def expected_model(config: MemoryConfig) -> tuple[str, int]:
    """The configured model's id (as items record it) and its dimension."""
    from retrieval.embeddings import Embedder

    embedder = Embedder(config)
    name = embedder.model_name
    if name not in MODEL_DIMENSIONS and name not in _PROBED:
        _PROBED[name] = embedder.dimension
    return embedder.model_id, MODEL_DIMENSIONS.get(name) or _PROBED[name]


def vector_rules(model_id: str, dimension: int) -> list[Rule]:
    return [
        Rule("dimension_matches_model", "ExpectColumnValuesToBeInSet", "ERROR",
             f"every vector is comparable with the query's: {dimension} dimensions ({model_id})",
             {"column": "dimension", "value_set": [dimension]}),
        Rule("one_dimension", "ExpectColumnUniqueValueCountToBeBetween", "ERROR",
             "one vector space for the whole table", {"column": "dimension", "min_value": 0, "max_value": 1}),
        Rule("no_nan", "ExpectColumnValuesToBeInSet", "ERROR",
             "a NaN makes every cosine with that vector NaN", {"column": "has_nan", "value_set": [False]}),
        Rule("unit_norm", "ExpectColumnValuesToBeBetween", "ERROR",
             "cosine similarity is a dot product only for unit vectors",
             {"column": "norm", "min_value": 1 - NORM_TOLERANCE, "max_value": 1 + NORM_TOLERANCE}),
        Rule("embedding_model_matches_config", "ExpectColumnValuesToBeInSet", "ERROR",
             "items are embedded with the model queries are embedded with",
             {"column": "embedding_model", "value_set": [model_id]}),
    ]


INDEX_RULES = [
    Rule("full_text_index_present", "ExpectColumnValuesToBeInSet", "ERROR",
         "the BM25 half of hybrid search needs the full-text index on the items' text",
         {"column": "present", "value_set": [True]}),
    Rule("full_text_index_covers_all_rows", "ExpectColumnValuesToBeBetween", "WARN",
         "rows outside the index are found by a slower flat scan",
         {"column": "unindexed_rows", "min_value": 0, "max_value": 0}),
]


def vector_stats(vectors: pa.Array | pa.ChunkedArray) -> pl.DataFrame:
    """Per row: the vector's dimension, whether it holds a NaN, and its L2 norm."""
    if isinstance(vectors, pa.ChunkedArray):
        vectors = vectors.combine_chunks() if vectors.num_chunks else pa.array([], type=vectors.type)
    n = len(vectors)
    if pa.types.is_fixed_size_list(vectors.type):
        dim = vectors.type.list_size
        values = vectors.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
        matrix = values.reshape(n, dim) if n else np.zeros((0, dim), np.float32)
        dims = np.full(n, dim, dtype=np.int64)
        has_nan = np.isnan(matrix).any(axis=1)
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix, dtype=np.float64))
    else:  # a variable-length list column: rows may differ
        dims = vectors.value_lengths().fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        values = vectors.flatten().to_numpy(zero_copy_only=False).astype(np.float64)
        starts = np.concatenate([[0], np.cumsum(dims)[:-1]]) if n else np.zeros(0, np.int64)
        squares = np.add.reduceat(values * values, starts) if values.size else np.zeros(n)
        nans = np.add.reduceat(np.isnan(values).astype(np.int64), starts) > 0 if values.size else np.zeros(n, bool)
        norms = np.where(dims > 0, np.sqrt(squares), 0.0)
        has_nan = np.where(dims > 0, nans, False)
    return pl.DataFrame({"dimension": dims, "has_nan": has_nan, "norm": norms})


def vectors_report(table: pa.Table, config: MemoryConfig, *, subject: str = "items vectors",
                   expected: tuple[str, int] | None = None) -> QualityReport:
    """Check the ``vector`` column of an items table (arrow, with ``id`` and ``embedding_model``).

    Args:
        table: the rows, e.g. from ``embeddings_report``.
        config: the config in force; names the embedding model.
        subject: what is checked, for the summary line.
        expected: (model id, dimension) to expect instead of the configured model's.
    """
    return _vectors_checked(_stats(table), config, subject=subject, expected=expected)


def _stats(batch: pa.Table | pa.RecordBatch) -> pl.DataFrame:
    """id, embedding_model and ``vector_stats`` of some rows."""
    names = pl.DataFrame({
        "id": pl.Series("id", batch.column("id"), dtype=pl.String) if batch.num_rows else [],
        "embedding_model": pl.Series("embedding_model", batch.column("embedding_model"), dtype=pl.String)
        if batch.num_rows else [],
    }, schema={"id": pl.String, "embedding_model": pl.String})
    return pl.concat([names, vector_stats(batch.column("vector"))], how="horizontal")


def _vectors_checked(frame: pl.DataFrame, config: MemoryConfig, *, subject: str,
                     expected: tuple[str, int] | None) -> QualityReport:
    model_id, dimension = expected or expected_model(config)
    return validate(frame, vector_rules(model_id, dimension), subject=subject, id_column="id",
                    context_columns=("dimension", "norm"))


def index_report(indices: list[Any], *, rows: int, subject: str = "items full-text index") -> QualityReport:
    """Check that a full-text index covers the items' text (``table.list_indices()``):
    ``search_text`` (content and source turns), or ``content`` alone in a table written
    before items kept their source text.

    An empty table has nothing to index, so no index is required there.
    """
    fts = [i for i in indices if str(getattr(i, "index_type", "")).upper() == "FTS"
           and {FTS_COLUMN, "content"} & set(getattr(i, "columns", []) or [])]
    unindexed = sum(int(getattr(i, "num_unindexed_rows", 0) or 0) for i in fts)
    frame = pl.DataFrame({"index": ["content (full-text)"], "present": [bool(fts) or rows == 0],
                          "unindexed_rows": [unindexed]})
    return validate(frame, INDEX_RULES, subject=subject, id_column="index")


@spanned("check: embeddings suite")
def embeddings_report(table: Any, config: MemoryConfig, *, subject: str,
                      expected: tuple[str, int] | None = None) -> QualityReport:
    """Vectors and full-text index of a LanceDB items table, at whatever version it is checked out."""
    # A batch of rows at a time: a million vectors read whole are 1.5 GB, and again as numpy.
    reader = table.search().select(["id", "embedding_model", "vector"]).limit(None).to_batches(VECTOR_BATCH)
    parts = [_stats(batch) for batch in reader]
    frame = pl.concat(parts) if parts else _stats(reader.schema.empty_table())
    return QualityReport.combine(
        _vectors_checked(frame, config, subject=f"{subject} vectors", expected=expected),
        index_report(table.list_indices(), rows=frame.height, subject=f"{subject} full-text index"),
        subject=subject,
    )

