"""The local Dagster instance that lives under a data root."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import dagster as dg

from retrieval.paths import DataRoot

REPO_DAGSTER_YAML = Path(__file__).resolve().parents[2] / "dagster.yaml"


def ensure_home(paths: DataRoot) -> Path:
    """``<data root>/dagster`` with the committed ``dagster.yaml`` (telemetry off)."""
    home = paths.dagster_home
    home.mkdir(parents=True, exist_ok=True)
    target = home / "dagster.yaml"
    if not target.exists() and REPO_DAGSTER_YAML.exists():
        shutil.copyfile(REPO_DAGSTER_YAML, target)
    return home


def local_instance(paths: DataRoot) -> dg.DagsterInstance:
    home = ensure_home(paths)
    os.environ.setdefault("DAGSTER_HOME", str(home))
    return dg.DagsterInstance.from_config(str(home))
