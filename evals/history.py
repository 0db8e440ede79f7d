"""Every eval run's metrics, one Parquet file per run, read back through DuckDB.

The history is what the Dagster UI trends and what the regression gate compares with:
each row carries the prompt version, extractor, model and git revision it measured.
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from retrieval.files import stamp
from retrieval.paths import DataRoot
from memory_assets.lib import warehouse

REPO = Path(__file__).resolve().parents[1]


def git_revision() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                             text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def folder(paths: DataRoot, kind: str) -> Path:
    return paths.warehouse / "evals" / kind


def append(paths: DataRoot, kind: str, row: dict[str, Any], now: datetime) -> Path:
    """Add one run; nested metrics are kept as JSON in ``details``."""
    flat = {k: v for k, v in row.items() if isinstance(v, (int, float, str, bool)) or v is None}
    flat["details"] = json.dumps({k: v for k, v in row.items() if k not in flat}, default=str)
    flat["run_at"] = now  # not "at": a DuckDB keyword
    return warehouse.write_frame(folder(paths, kind) / f"{kind}-{stamp(now)}.parquet", pl.DataFrame([flat]))


def glob(paths: DataRoot, kind: str) -> str:
    return str(folder(paths, kind) / "*.parquet")
