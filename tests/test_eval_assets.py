"""Eval runs in Dagster: metrics with history (DuckDB over Parquet) and the regression gate."""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone

import dagster as dg

from memory_assets.defs.evals.assets import extraction_eval, extraction_regression_gate
from memory_assets.defs.runtime import default_resources
from evals import history as eval_history
from retrieval.paths import DataRoot
from tests.conftest import REPO


def _run(tmp_path, instance, data_root):
    gold = tmp_path / "gold"
    gold.mkdir(exist_ok=True)
    for f in sorted((REPO / "evals" / "gold").glob("[!a]*.json"))[:3]:  # three ordinary sessions
        shutil.copy(f, gold / f.name)
    resources = default_resources(str(data_root))
    return dg.materialize([extraction_eval, extraction_regression_gate], instance=instance, resources=resources,
                          run_config={"ops": {"extraction_eval": {"config": {"extractor": "offline", "dataset": str(gold)}}}},
                          raise_on_error=False)


def test_eval_run_is_recorded_and_the_gate_passes_without_regression(tmp_path, instance, data_root):
    result = _run(tmp_path, instance, data_root)
    assert result.success
    metadata = result.asset_materializations_for_node("extraction_eval")[0].metadata
    assert metadata["leaks"].value == 0 and 0 <= metadata["f1"].value <= 1
    checks = result.get_asset_check_evaluations()
    assert [c.passed for c in checks] == [True]
    assert list(eval_history.folder(DataRoot.resolve(data_root), "extraction").glob("*.parquet"))


def test_gate_fails_when_f1_drops_below_the_best_run(tmp_path, instance, data_root):
    paths = DataRoot.resolve(data_root)
    earlier = datetime.now(timezone.utc) - timedelta(days=1)
    eval_history.append(paths, "extraction", {"extractor": "offline", "source": str(tmp_path / "gold"),
                                              "f1": 0.999, "leaks": 0}, earlier)
    result = _run(tmp_path, instance, data_root)
    assert not result.success  # a blocking check failed
    check = result.get_asset_check_evaluations()[0]
    assert check.passed is False and check.metadata["best_before"].value == 0.999


def test_gate_compares_only_runs_over_the_same_sessions(tmp_path, instance, data_root):
    paths = DataRoot.resolve(data_root)
    earlier = datetime.now(timezone.utc) - timedelta(days=1)
    # A better F1 on other sessions (LoCoMo, or another gold folder) is no yardstick.
    for source in ("locomo", str(tmp_path / "other-gold")):
        eval_history.append(paths, "extraction", {"extractor": "offline", "source": source, "f1": 0.999, "leaks": 0},
                            earlier)
    eval_history.append(paths, "extraction", {"extractor": "llm", "source": str(tmp_path / "gold"), "f1": 0.999,
                                              "leaks": 0}, earlier)
    result = _run(tmp_path, instance, data_root)
    assert result.success
    check = result.get_asset_check_evaluations()[0]
    assert check.passed is True and check.metadata["best_before"].value == -1.0
