"""The Dagster graph as the design card fixes it; a change to any asset spec shows up here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from memory_assets.definitions import defs

SNAPSHOT = Path(__file__).parent / "snapshots" / "asset_specs.json"
REPO = Path(__file__).resolve().parents[1]


def _spec_snapshot() -> dict:
    loaded = defs()
    graph = loaded.resolve_asset_graph()
    out = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        out[key.to_user_string()] = {
            "group": node.group_name,
            "kinds": sorted(node.kinds),
            "deps": sorted(k.to_user_string() for k in node.parent_keys),
            "partitions": getattr(node.partitions_def, "name", None) if node.partitions_def else None,
            "automation": node.automation_condition.get_label() if node.automation_condition else None,
            "has_code_version": node.code_version is not None,
            "pool": node.pools and sorted(node.pools) or None,
        }
    return out


def test_asset_specs_match_the_snapshot():
    current = _spec_snapshot()
    if os.environ.get("UPDATE_SNAPSHOTS") or not SNAPSHOT.exists():
        SNAPSHOT.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    assert current == json.loads(SNAPSHOT.read_text()), "asset graph changed: review, then UPDATE_SNAPSHOTS=1"


def test_every_asset_has_kinds_a_description_and_a_group():
    graph = defs().resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.kinds, key
        assert node.description and len(node.description) > 40, key
        assert node.group_name != "default", key


def test_extraction_code_version_is_the_prompt_hash():
    from memory_assets.defs.extraction.assets import EXTRACTION_CODE_VERSION
    from memory_assets.lib.prompts import load_prompt

    assert load_prompt("extract_facts").version in EXTRACTION_CODE_VERSION
    node = defs().resolve_asset_graph().get(dg.AssetKey("extracted_facts"))
    assert node.code_version == EXTRACTION_CODE_VERSION


def test_sensors_and_jobs_are_defined():
    loaded = defs()
    assert {s.name for s in loaded.sensors} >= {"inbox_sensor", "quarantine_retry_sensor"}
    assert loaded.resolve_job_def("ingest_session").partitions_def.name == "sessions"


def test_dg_check_defs_passes():
    dg_bin = Path(sys.executable).with_name("dg")
    if not dg_bin.exists():
        pytest.skip("dg is not installed next to this interpreter")
    result = subprocess.run([str(dg_bin), "check", "defs"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_importing_retrieval_does_not_import_dagster():
    code = "import sys, retrieval; sys.exit(3 if 'dagster' in sys.modules else 0)"
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_instance_config_turns_telemetry_off_and_fits_two_cores():
    import yaml

    config = yaml.safe_load((REPO / "dagster.yaml").read_text())
    assert config["telemetry"]["enabled"] is False
    assert config["concurrency"]["runs"]["max_concurrent_runs"] <= 2
    assert config["concurrency"]["pools"]["default_limit"] == 1
