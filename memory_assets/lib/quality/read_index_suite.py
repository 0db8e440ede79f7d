"""The read-index suite: the in-process indexes a staged version publishes answer for it.

``inject`` searches a version's read indexes (``retrieval.read_index``) instead of LanceDB;
an index built for other rows, of another model's vectors, or whose graph cannot find its
own rows would rank wrong with no error. So before a version is published: its indexes
exist and open, they are of its rows (count and the ids' digest) and of the configured
model, a sample of rows is found by its own stored vector (nearest, within float rounding)
and by its own content's words (BM25, among the first ``TEXT_PROBE_K``). The properties are
gathered with numpy and validated with GX, like the other suites.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from memory_assets.lib.quality.suite_report import QualityReport
from memory_assets.lib.quality.validation import Rule, validate
from retrieval.read_index import IndexUnusable, ReadIndex, ids_digest
from retrieval.spans import spanned

PROBES = 200  # rows probed, at most
TEXT_PROBE_K = 50
SELF_COSINE = 0.999

READ_INDEX_RULES = [
    Rule("read_index_present", "ExpectColumnValuesToBeInSet", "ERROR",
         "inject searches the version's read index; without one it falls back to LanceDB (slower)",
         {"column": "present", "value_set": [True]}),
    Rule("read_index_of_these_rows", "ExpectColumnValuesToBeInSet", "ERROR",
         "row i of the index is row i of the snapshot: the same ids, in order",
         {"column": "rows_match", "value_set": [True]}),
    Rule("read_index_of_the_configured_model", "ExpectColumnValuesToBeInSet", "ERROR",
         "the index's vectors are the configured model's, as the queries will be",
         {"column": "model_matches", "value_set": [True]}),
    Rule("read_index_finds_each_row_by_its_vector", "ExpectColumnValuesToBeBetween", "ERROR",
         "a sampled row's own stored vector finds it (or its exact twin) first",
         {"column": "nearest_self", "min_value": 0.99, "max_value": 1.0}),
    Rule("read_index_finds_each_row_by_its_words", "ExpectColumnValuesToBeBetween", "WARN",
         f"a sampled row's content finds it among the first {TEXT_PROBE_K} by BM25",
         {"column": "text_self", "min_value": 0.9, "max_value": 1.0}),
]


@spanned("check: read index suite")
def read_index_report(index_path, items: pl.DataFrame, model_id: str, *, subject: str) -> QualityReport:
    """The suite over a version's read index (``index_path``, a local folder or None) and its
    snapshot ``items``. A version without rows needs no index."""
    row = {"index": "read index", "present": True, "rows_match": True, "model_matches": True,
           "nearest_self": 1.0, "text_self": 1.0}
    if items.height:
        row.update(_probed(index_path, items, model_id))
    return validate(pl.DataFrame([row]), READ_INDEX_RULES, subject=subject, id_column="index")


def _probed(index_path, items: pl.DataFrame, model_id: str) -> dict:
    try:
        index = ReadIndex.open(index_path) if index_path is not None else None
    except (IndexUnusable, OSError):
        index = None
    if index is None:
        return {"present": False, "rows_match": False, "model_matches": False, "nearest_self": 0.0, "text_self": 0.0}
    rows = np.unique(np.linspace(0, items.height - 1, min(PROBES, items.height)).astype(np.int64))
    vectors = index.vectors(rows.tolist())
    found = 0
    for row, vector in zip(rows.tolist(), vectors):
        hit, distance = index.nearest(vector, 1)
        found += bool(len(hit)) and (int(hit[0]) == row or float(distance[0]) <= 1.0 - SELF_COSINE)
    contents = items["content"].to_list()
    by_text = sum(row in index.matching(contents[row] or "", TEXT_PROBE_K)[0].tolist() for row in rows.tolist())
    manifest = index.manifest
    return {"present": True,
            "rows_match": manifest.rows == items.height and manifest.ids_digest == ids_digest(items["id"].to_list()),
            "model_matches": manifest.models in ((), (model_id,)),
            "nearest_self": found / len(rows), "text_self": by_text / len(rows)}
