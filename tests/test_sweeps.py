"""Weekly and monthly sweeps are their own assets: decided as of the run's clock, applied
by ``memory_items`` (each id checked again), filed away once the version is published."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import dagster as dg
import polars as pl

from memory_assets.definitions import defs
from memory_assets.lib.ingest.intake import ingest_paths
from memory_assets.lib.lifecycle import sweeps
from memory_assets.cli.runner import run_job
from retrieval.config import load_config
from retrieval.paths import DataRoot
from retrieval.store import ItemStore

CONFIG = load_config()
T0 = datetime(2026, 3, 1, 9, tzinfo=timezone.utc)


def _items(**used_days_ago: int) -> pl.DataFrame:
    rows = [{"id": i, "status": "active", "tier": "standard", "promoted": False, "last_referenced_at": None,
             "created_at": T0 - timedelta(days=d), "first_seen_at": T0 - timedelta(days=d), "updated_at": None}
            for i, d in used_days_ago.items()]
    return pl.DataFrame(rows, schema={"id": pl.String, "status": pl.String, "tier": pl.String, "promoted": pl.Boolean,
                                      "last_referenced_at": pl.Datetime("us", "UTC"),
                                      "created_at": pl.Datetime("us", "UTC"), "first_seen_at": pl.Datetime("us", "UTC"),
                                      "updated_at": pl.Datetime("us", "UTC")})


def test_a_sweep_decides_by_its_rule_and_an_item_used_since_stays(tmp_path):
    paths = DataRoot.resolve(tmp_path / "data")
    items = _items(old=120, older=200, fresh=3)
    assert sweeps.decide("archive", items, CONFIG, T0) == ["old", "older"]
    assert sweeps.decide("cold", items, CONFIG, T0) == ["older"]
    written = sweeps.write(paths, "archive", ["old", "older"], T0)
    assert [s.file for s in sweeps.pending(paths)] == [written.file] and not written.refresh
    # "old" was confirmed by the user after the decision: the rule, asked again, keeps it.
    used = items.with_columns(last_referenced_at=pl.when(pl.col("id") == "old").then(pl.lit(T0))
                              .otherwise(pl.col("last_referenced_at")))
    out, report = sweeps.apply(used, sweeps.pending(paths), CONFIG, T0 + timedelta(hours=1))
    assert dict(out.select("id", "status").iter_rows()) == {"old": "active", "older": "archived", "fresh": "active"}
    assert report.ids["archived"] == ["older"]
    # Only the ids it decided: "fresh" would not qualify anyway, but an id it did not list is never touched.
    untouched, _ = sweeps.apply(_items(stray=400), sweeps.pending(paths), CONFIG, T0)
    assert untouched["status"].to_list() == ["active"]
    assert sweeps.settle(paths, [written.file]) == 1 and sweeps.pending(paths) == []
    assert (paths.sweeps / "applied" / written.file).exists()


def test_the_sweeps_are_assets_upstream_of_the_items_and_in_their_jobs_only():
    graph = defs().resolve_asset_graph()
    parents = {k.to_user_string() for k in graph.get(dg.AssetKey("memory_items")).parent_keys}
    assert {"archive_sweep", "cold_sweep", "extracted_facts"} <= parents
    jobs = {name: {k.to_user_string() for k in defs().resolve_job_def(name).asset_layer.selected_asset_keys}
            for name in ("nightly", "weekly", "monthly")}
    assert "archive_sweep" in jobs["weekly"] and "cold_sweep" in jobs["monthly"]
    assert not {"archive_sweep", "cold_sweep"} & jobs["nightly"]
    assert "cold_sweep" not in jobs["weekly"] and "archive_sweep" not in jobs["monthly"]


def test_the_weekly_job_archives_through_its_sweep_and_files_it_once_published(tmp_path, samples):
    paths = DataRoot.resolve(tmp_path / "data")
    ingest_paths([samples / "personal-assistant.jsonl"], paths.root, load_config())
    with dg.instance_for_test() as instance:
        assert run_job(paths, "nightly", extractor="offline", instance=instance)
        born = ItemStore(paths).items()
        learned = max(born["created_at"].max(), born["first_seen_at"].max())  # the memory learned it today
        later = learned + timedelta(days=int(CONFIG.lifecycle.archive_after_days) + 1)
        assert run_job(paths, "nightly", now=later, extractor="offline", instance=instance)
        nightly = instance.get_latest_materialization_event(dg.AssetKey("memory_items")).asset_materialization
        before = dict(ItemStore(paths).items().select("id", "status").iter_rows())
        assert run_job(paths, "weekly", now=later, extractor="offline", instance=instance)
        sweep = instance.get_latest_materialization_event(dg.AssetKey("archive_sweep")).asset_materialization
        weekly = instance.get_latest_materialization_event(dg.AssetKey("memory_items")).asset_materialization
    name = sweep.metadata["file"].value
    decided = set(json.loads((paths.sweeps / "applied" / name).read_text())["ids"])  # filed once published
    after = ItemStore(paths).items()
    archived = set(after.filter(pl.col("status") == "archived")["id"]) - {i for i, s in before.items() if s == "archived"}
    assert "archived" not in nightly.metadata["lifecycle"].value  # the nightly job has no sweep…
    assert archived == decided and len(decided) == sweep.metadata["decided"].value > 0  # …the weekly one applies its own
    assert all(before[i] == "active" for i in archived)
    assert not after.filter(pl.col("id").is_in(list(archived)) & (pl.col("tier").eq("permanent") | pl.col("promoted"))).height
    assert weekly.metadata["sweeps_applied"].value == [name] and sweeps.pending(paths) == []
