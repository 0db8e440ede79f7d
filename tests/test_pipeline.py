"""The whole pipeline on real Dagster, LanceDB, Parquet and DuckDB: samples in, trusted items out."""

from __future__ import annotations

import json

import dagster as dg
import polars as pl
import pytest

from memory_assets.lib.ingest.intake import ingest_paths
from memory_assets.lib.items.publish import FTS_COLUMN
from memory_assets.lib.items.source_text import MAX_TURNS
from memory_assets.cli.runner import materialize_pending
from retrieval import MemoryClient
from retrieval.config import load_config
from retrieval.paths import DataRoot
from retrieval.schema import ITEM_SCHEMA
from retrieval.store import ItemStore
from tests.conftest import SAMPLES

SECRET = "sk-proj-AbC123dEf456GhI789jKl012MnO345pQr678"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The committed samples ingested and materialized once for this module."""
    root = tmp_path_factory.mktemp("pipeline") / "data"
    paths = DataRoot.resolve(root)
    with dg.instance_for_test() as instance:
        ingest_paths(sorted(SAMPLES.iterdir()), root, load_config())
        summary = materialize_pending(paths, extractor="offline", instance=instance)
        yield paths, instance, summary


def _items(paths: DataRoot) -> pl.DataFrame:
    return ItemStore(paths).items()


def test_samples_become_published_items(built):
    paths, _, summary = built
    assert not summary.failed and summary.items_materialized
    items = _items(paths)
    assert items.height > 50
    assert ItemStore(paths).published_version() is not None
    wrx = items.filter(pl.col("content").str.contains("WRX oil change is due at 11,799"))
    assert wrx.height == 1 and wrx["category"][0] in ("vehicle", "maintenance")
    assert wrx["source_resource_ids"][0].len() >= 1 and wrx["source_trust"][0] == "trusted"


def test_every_item_points_back_to_stored_resources(built):
    paths, _, _ = built
    resources = pl.concat([pl.read_parquet(p) for p in paths.resources.rglob("part-*.parquet")])
    known = set(resources["resource_id"].to_list())
    for ids in _items(paths)["source_resource_ids"].to_list():
        assert ids and set(ids) <= known


def test_each_item_is_searched_by_the_text_of_exactly_its_source_turns(built):
    paths, _, _ = built
    resources = pl.concat([pl.read_parquet(p) for p in paths.resources.rglob("part-*.parquet")])
    said = {r: " ".join(c.split()) for r, c in zip(resources["resource_id"], resources["content"])}
    # The search text lives in LanceDB only: the Parquet snapshot holds the item schema, no more.
    assert set(_items(paths).columns) == set(ITEM_SCHEMA)
    table = ItemStore(paths).table().to_arrow()
    rows = zip(table.column("content").to_pylist(), table.column("source_resource_ids").to_pylist(),
               table.column(FTS_COLUMN).to_pylist())
    for content, ids, text in rows:
        # The content, then one line per source turn (at most MAX_TURNS), then the context.
        lines = text.splitlines()
        assert lines[0] == content
        assert all(line.endswith(said[rid]) for rid, line in zip(ids[:MAX_TURNS], lines[1:]))
        assert len(lines) > min(len(ids), MAX_TURNS)


def test_credentials_never_reach_any_store(built):
    paths, _, _ = built
    for file in paths.root.rglob("*"):
        if file.is_file():
            assert SECRET.encode() not in file.read_bytes(), file
    assert not _items(paths).filter(pl.col("content").str.contains("REDACTED")).height


def test_rejections_are_stored_with_a_reason(built):
    paths, _, _ = built
    rejections = pl.concat([pl.read_parquet(p) for p in paths.rejections.glob("*.parquet")])
    assert "credential" in set(rejections["reason"].to_list())
    assert SECRET not in " ".join(rejections["preview"].to_list())


def test_instructions_inside_untrusted_data_never_become_trusted_facts(built):
    paths, _, _ = built
    items = _items(paths)
    # The planted instructions and fake facts (tool output, a pasted email); the user's own
    # report *about* them ("the bot tries to instruct agents…") is a legitimate fact.
    for phrase in ("ignore previous instructions", "ignore all previous", "wants all tests disabled",
                   "migrated back to mysql", "no allergies", "$499", "due at 15,000"):
        hits = items.filter(pl.col("content").str.to_lowercase().str.contains(phrase, literal=True))
        assert hits.filter(pl.col("source_trust") == "trusted").is_empty(), hits["content"].to_list()
    untrusted = items.filter(pl.col("source_trust") == "untrusted")
    assert untrusted.height > 0
    assert (untrusted["importance"] <= 0.5).all()


def test_assistant_claims_the_user_did_not_confirm_are_not_extracted(built):
    paths, _, _ = built
    contents = " ".join(_items(paths)["content"].to_list()).lower()
    assert "deploy on fridays" not in contents and "deploys on fridays" not in contents


def test_injected_memory_block_is_not_extracted_again(built):
    paths, _, _ = built
    facts = pl.read_parquet(paths.extracted_facts / "pa-2026-09-23.parquet")
    assert not facts.filter(pl.col("content").str.contains("11,799")).height


def test_reversed_preference_supersedes_the_old_one(built):
    paths, _, _ = built
    items = _items(paths)
    black = items.filter(pl.col("content").str.contains("likes black"))
    assert black["status"].to_list() == ["superseded"]
    successor = items.filter(pl.col("id") == black["superseded_by"][0])
    assert successor.height == 1 and successor["supersedes"][0] == black["id"][0]
    hits = MemoryClient(paths.root).search("does Priya like black formatting", k=20)
    assert black["id"][0] not in {h.id for h in hits}


def test_reingesting_and_rematerializing_changes_nothing(built):
    paths, instance, _ = built
    before_items = _items(paths).select("id", "content", "status").sort("id")
    parts_before = sorted(p.name for p in paths.resources.rglob("part-*.parquet"))
    report = ingest_paths(sorted(SAMPLES.iterdir()), paths.root, load_config())
    summary = materialize_pending(paths, extractor="offline", instance=instance)
    assert report.files_written == 0 and summary.sessions == []
    assert sorted(p.name for p in paths.resources.rglob("part-*.parquet")) == parts_before
    assert _items(paths).select("id", "content", "status").sort("id").equals(before_items)


def test_search_rows_carry_the_contract_fields(built):
    paths, _, _ = built
    hits = MemoryClient(paths.root).search("oil change", k=5)
    assert hits
    row = hits[0].as_dict()
    for key in ("id", "content", "category", "importance", "confidence", "source_trust",
                "session_id", "source_resource_ids", "source_turn_ids"):
        assert key in row
    json.dumps(row)


def test_runs_are_recorded_in_the_dagster_instance(built):
    _, instance, _ = built
    event = instance.get_latest_materialization_event(dg.AssetKey("memory_items"))
    metadata = event.asset_materialization.metadata
    assert metadata["items"].value > 50
    assert metadata["embedding_model"].value == "local:all-MiniLM-L6-v2"
    assert set(instance.get_dynamic_partitions("sessions")) >= {"code-2026-09-01", "pa-2026-09-02", "support-chat"}


def test_a_bad_batch_leaves_what_is_stored_untouched(built, tmp_path):
    paths, instance, _ = built
    stored = {p: p.read_bytes() for p in paths.resources.rglob("part-*.parquet")}
    items_before = _items(paths).select("id", "content", "status").sort("id")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"session_id": "code-2026-09-01", "turn": 99, "role": "user", "cont\n\xff\xfe junk\n')
    report = ingest_paths([bad, tmp_path / "missing.jsonl"], paths.root, load_config())
    assert len(report.errors) == 3 and report.messages == 0
    materialize_pending(paths, extractor="offline", instance=instance)
    assert {p: p.read_bytes() for p in paths.resources.rglob("part-*.parquet")} == stored
    assert _items(paths).select("id", "content", "status").sort("id").equals(items_before)
