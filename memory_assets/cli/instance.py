"""The local Dagster instance that lives under a data root."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from retrieval.paths import DataRoot
from memory_assets.lib import warehouse

REPO_DAGSTER_YAML = Path(__file__).resolve().parents[2] / "dagster.yaml"


def ensure_home(paths: DataRoot) -> Path:
    """``<data root>/dagster`` with the committed ``dagster.yaml`` (telemetry off)."""
    home = paths.dagster_home
    warehouse.makedirs(home)
    target = home / "dagster.yaml"
    if not warehouse.exists(target) and REPO_DAGSTER_YAML.exists():
        warehouse.copy(REPO_DAGSTER_YAML, target)
    return home


def local_instance(paths: DataRoot) -> dg.DagsterInstance:
    home = ensure_home(paths)
    os.environ.setdefault("DAGSTER_HOME", str(home))
    return dg.DagsterInstance.from_config(str(home))
