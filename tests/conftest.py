"""Shared fixtures: a temporary data root, a temporary Dagster instance, the fake LLM."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import dagster as dg
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")

from evals.locomo import default_dir as default_locomo_dir  # noqa: E402
from tests.fake_openai import fake_openai  # noqa: E402,F401  (fixture)

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "data" / "samples"
LOCOMO = default_locomo_dir()  # the shared folder beside or above the clone, or MEMORY_LOCOMO_DIR


@pytest.fixture(autouse=True)
def offline_by_default(monkeypatch):
    """Tests run offline unless they start the fake LLM server themselves."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("MEMORY_CONFIG", raising=False)
    monkeypatch.delenv("MEMORY_EXTRACTOR", raising=False)


@pytest.fixture
def data_root(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "data"
    root.mkdir()
    monkeypatch.setenv("MEMORY_DATA_ROOT", str(root))
    return root


@pytest.fixture
def instance():
    with dg.instance_for_test() as inst:
        yield inst


@pytest.fixture
def samples(tmp_path) -> Path:
    target = tmp_path / "samples"
    shutil.copytree(SAMPLES, target)
    return target
