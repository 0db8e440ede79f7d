"""Column-schema change: does a stored file still have the published contract's columns and types?

The contracts are ``RESOURCE_SCHEMA``, ``FACT_SCHEMA`` and ``ITEM_SCHEMA`` in
``retrieval.schema``. The schema is validated as data — one row per column and file,
with what changed — so the UI names the column, the file, and the old and new type.
A missing or retyped column breaks every reader (ERROR); an extra column is only
unexpected (WARN), and so is a column added since the file was written (``ADDED_COLUMNS``:
its readers take it as null).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from memory_assets.lib.quality.suite_report import QualityReport
from memory_assets.lib.quality.validation import Rule, validate
from retrieval.schema import ADDED_COLUMNS
from retrieval.spans import spanned

RULES = (
    Rule("no_missing_or_retyped_columns", "ExpectColumnValuesToNotBeInSet", "ERROR",
         "every reader of this asset finds each contract column with its contract type",
         {"column": "change", "value_set": ["missing", "retyped"]}),
    Rule("no_unexpected_columns", "ExpectColumnValuesToNotBeInSet", "WARN",
         "the contract in retrieval/schema.py stays the one description of this asset",
         {"column": "change", "value_set": ["extra"]}),
    Rule("no_columns_predated", "ExpectColumnValuesToNotBeInSet", "WARN",
         "a file written before a column was added (ADDED_COLUMNS) reads it as null",
         {"column": "change", "value_set": ["predates"]}),
)


def schema_changes(schemas: Mapping[str, Mapping[str, pl.DataType]], expected: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """One row per (file, column): its expected and actual type and the change (ok/missing/retyped/extra)."""
    rows = []
    for source, actual in schemas.items():
        for name, dtype in expected.items():
            got = actual.get(name)
            change = (("predates" if name in ADDED_COLUMNS else "missing") if got is None
                      else ("ok" if got == dtype else "retyped"))
            rows.append({"column": name, "file": source, "expected": str(dtype),
                         "actual": None if got is None else str(got), "change": change})
        for name, dtype in actual.items():
            if name not in expected:
                rows.append({"column": name, "file": source, "expected": None, "actual": str(dtype), "change": "extra"})
    return pl.DataFrame(rows, schema={"column": pl.String, "file": pl.String, "expected": pl.String,
                                      "actual": pl.String, "change": pl.String})


@spanned("check: schema")
def schema_report(schemas: Mapping[str, Mapping[str, pl.DataType]], expected: Mapping[str, pl.DataType], *,
                  subject: str) -> QualityReport:
    """Check each file's schema against the contract.

    Args:
        schemas: file name → its schema (``pl.read_parquet_schema``), one entry per file.
        expected: the contract, e.g. ``ITEM_SCHEMA``.
        subject: what is checked, for the summary line.
    """
    frame = schema_changes(schemas, expected)
    return validate(frame, RULES, subject=subject, id_column="column", context_columns=("file", "expected", "actual"))
