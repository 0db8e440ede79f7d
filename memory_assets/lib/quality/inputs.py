"""What the checks read from a data root: stored files as the checks need them.

Reads are tolerant of schema drift (files are concatenated diagonally, so a missing
column shows up as nulls to the suites) because finding drift is the checks' job.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import polars as pl

from retrieval.paths import DataRoot
from retrieval.schema import FACT_SCHEMA, RESOURCE_SCHEMA


def resource_files(paths: DataRoot, sessions: Iterable[str] | None = None) -> list[Path]:
    """The resources Parquet parts of ``sessions`` (None: every session)."""
    if not paths.resources.exists():
        return []
    if sessions is None:
        return sorted(paths.resources.glob("*/part-*.parquet"))
    return sorted(p for s in sessions for p in (paths.resources / s).glob("part-*.parquet"))


def fact_files(paths: DataRoot, sessions: Iterable[str] | None = None) -> list[Path]:
    """The extracted-facts Parquet file of each of ``sessions`` that has one (None: every session)."""
    if not paths.extracted_facts.exists():
        return []
    if sessions is None:
        return sorted(paths.extracted_facts.glob("*.parquet"))
    return [p for s in sessions if (p := paths.extracted_facts / f"{s}.parquet").exists()]


def schemas(files: Iterable[Path], root: Path) -> dict[str, dict[str, pl.DataType]]:
    """File (relative to ``root``) → its Parquet schema."""
    return {str(f.relative_to(root)): dict(pl.read_parquet_schema(f)) for f in files}


def read_frames(files: list[Path], contract: dict[str, pl.DataType]) -> pl.DataFrame:
    if not files:
        return pl.DataFrame(schema=contract)
    return pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")


def read_resources(paths: DataRoot, sessions: Iterable[str] | None = None) -> pl.DataFrame:
    return read_frames(resource_files(paths, sessions), RESOURCE_SCHEMA)


def read_facts(paths: DataRoot, sessions: Iterable[str] | None = None) -> pl.DataFrame:
    return read_frames(fact_files(paths, sessions), FACT_SCHEMA)


def resource_ids(paths: DataRoot, sessions: Iterable[str] | None = None) -> pl.Series:
    """Every stored resource id (of ``sessions``, or of every session)."""
    files = resource_files(paths, sessions)
    if not files:
        return pl.Series("resource_id", [], dtype=pl.String)
    return pl.concat([pl.read_parquet(f, columns=["resource_id"]) for f in files])["resource_id"]
