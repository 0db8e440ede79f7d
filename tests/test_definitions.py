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
from retrieval.config import load_config

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
            "partitions": (getattr(node.partitions_def, "name", None) or str(node.partitions_def))
            if node.partitions_def else None,
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
    from retrieval.llm import load_prompt

    assert load_prompt("extract_facts").version in EXTRACTION_CODE_VERSION
    node = defs().resolve_asset_graph().get(dg.AssetKey("extracted_facts"))
    assert node.code_version == EXTRACTION_CODE_VERSION


def test_a_prompt_edit_marks_every_session_stale_and_a_backfill_reextracts(tmp_path, monkeypatch):
    """Issue: editing prompts/extract_facts.md shows extracted_facts stale in the UI; a
    backfill over the sessions partitions re-extracts history and clears it."""
    import shutil

    from dagster._core.definitions.data_version import CODE_VERSION_TAG, StaleStatus
    from dagster._utils.test.data_versions import get_stale_status_resolver

    from memory_assets.lib.extraction.session import code_version as extraction_code_version
    from retrieval import llm as prompts
    from memory_assets.lib.ingest.intake import ingest_paths
    from memory_assets.cli.runner import bound_definitions, materialize_pending
    from retrieval.paths import DataRoot
    from tests.conftest import SAMPLES

    root = tmp_path / "data"
    paths = DataRoot.resolve(root)
    key = dg.AssetKey("extracted_facts")
    with dg.instance_for_test() as instance:
        ingest_paths([SAMPLES / "coding-agent.jsonl", SAMPLES / "support-chat.json"], root, load_config())
        materialize_pending(paths, extractor="offline", instance=instance)
        sessions = instance.get_dynamic_partitions("sessions")
        assets, resources = bound_definitions(str(root), "offline")
        resolver = get_stale_status_resolver(instance, assets)
        assert sessions and all(resolver.get_status(key, s) == StaleStatus.FRESH for s in sessions)

        edited_dir = tmp_path / "prompts"
        shutil.copytree(str(prompts.PROMPTS), edited_dir)
        with open(edited_dir / "extract_facts.md", "a", encoding="utf-8") as fh:
            fh.write("\nNever extract the user's guesses about other people.\n")
        monkeypatch.setattr(prompts, "PROMPTS", edited_dir)
        version = extraction_code_version(prompts.load_prompt("extract_facts"))
        edited = [a.map_asset_specs(lambda spec: spec.replace_attributes(code_version=version))
                  if isinstance(a, dg.AssetsDefinition) and key in a.keys else a for a in assets]
        stale = get_stale_status_resolver(instance, edited)
        assert all(stale.get_status(key, s) == StaleStatus.STALE for s in sessions)
        assert any("code version" in cause.reason for cause in stale.get_stale_causes(key, sessions[0]))

        for session in sessions:  # the backfill: one run per partition
            assert dg.materialize(edited, selection=["extracted_facts"], partition_key=session,
                                  instance=instance, resources=resources).success
        fresh = get_stale_status_resolver(instance, edited)
        assert all(fresh.get_status(key, s) == StaleStatus.FRESH for s in sessions)
        latest = instance.get_latest_materialization_event(key)
        assert latest.dagster_event.event_specific_data.materialization.tags[CODE_VERSION_TAG] == version


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


# Every Dagster run process, the code server and `dg check defs` load the code location:
# these cost seconds each to import and are needed only by the steps that use them.
HEAVY = ("sklearn", "matplotlib", "lancedb", "great_expectations", "spacy", "torch", "onnxruntime")


def test_loading_the_code_location_imports_no_heavy_library():
    code = ("import sys; from memory_assets.definitions import defs; defs().resolve_asset_graph(); "
            f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"imported when the code location loads: {result.stdout.strip()}"


def test_the_spacy_pipeline_loads_without_torch_and_torch_still_imports_after():
    code = ("import sys; from memory_assets.lib.extraction import structure; "
            "doc = structure.nlp()('I switched from vim to neovim.'); "
            "assert doc[1].lemma_ == 'switch' and doc[0].dep_ == 'nsubj', [(t.lemma_, t.dep_) for t in doc]; "
            "assert 'torch' not in sys.modules; import torch; print(torch.tensor([1]).sum().item())")
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1"

def test_instance_config_turns_telemetry_off_and_fits_two_cores():
    import yaml

    config = yaml.safe_load((REPO / "dagster.yaml").read_text())
    assert config["telemetry"]["enabled"] is False
    assert config["concurrency"]["runs"]["max_concurrent_runs"] <= 2
    assert config["concurrency"]["pools"]["default_limit"] == 1
