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
from retrieval.config import load_config  # noqa: E402
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


def _build_once(tmp_path_factory, name: str, samples: list[Path]) -> Path:
    """``samples`` ingested and materialized (offline extractor, a test instance) once per
    test session, shared by the xdist workers through a lock: a template, never written
    after it is built; a test that writes works on a copy (``copy_root``)."""
    from filelock import FileLock

    from memory_assets.cli.runner import materialize_pending
    from memory_assets.lib.ingest.intake import ingest_paths
    from retrieval.paths import DataRoot

    shared = tmp_path_factory.getbasetemp().parent  # one folder for every worker of the session
    root = shared / f"built-{name}" / "data"
    with FileLock(str(shared / f"built-{name}.lock")):
        if not (root.parent / "done").exists():
            shutil.rmtree(root.parent, ignore_errors=True)
            with pytest.MonkeyPatch.context() as env:
                for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "MEMORY_CONFIG", "MEMORY_EXTRACTOR"):
                    env.delenv(variable, raising=False)
                ingest_paths(samples, root, load_config())
                with dg.instance_for_test() as instance:
                    summary = materialize_pending(DataRoot.resolve(root), extractor="offline", instance=instance)
                assert summary.items_materialized and not summary.failed, summary
            (root.parent / "done").touch()
    return root


@pytest.fixture(scope="session")
def samples_root(tmp_path_factory) -> Path:
    """Every committed sample, published: read it, or ``copy_root`` it to write."""
    return _build_once(tmp_path_factory, "samples", sorted(SAMPLES.iterdir()))


@pytest.fixture(scope="session")
def personal_root(tmp_path_factory) -> Path:
    """The personal-assistant sample, published: read it, or ``copy_root`` it to write."""
    return _build_once(tmp_path_factory, "personal", [SAMPLES / "personal-assistant.jsonl"])


def copy_root(template: Path, folder: Path) -> Path:
    """``folder/data``: a copy of a built data root that a test may write to."""
    target = folder / "data"
    shutil.copytree(template, target)
    return target
