"""The retrieval benchmark: a small run reports latencies over a root built like production's."""

from __future__ import annotations

import json
from pathlib import Path

import lancedb
import pytest

from evals.bench import synthetic_roots as roots
from evals.bench.retrieval import main, run_bench
from evals.bench.synthetic import synthetic_items
from evals.bench.synthetic_roots import MANIFEST
from retrieval.config import load_config
from retrieval.embeddings import Embedder
from retrieval.paths import DataRoot
from retrieval.published import ITEMS_TABLE, PUBLISHED_TAG
from retrieval.schema import ITEM_SCHEMA
from retrieval.store import ItemStore

STATS = {"p50", "p95", "mean", "max"}


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    cache = tmp_path_factory.mktemp("bench-cache")
    config = load_config()
    first = run_bench(300, config=config, queries=10, warmup=2, embed="random", cache_dir=cache)
    second = run_bench(300, config=config, queries=10, warmup=2, embed="random", cache_dir=cache)
    return cache, first, second


def test_report_has_latencies_for_inject_search_and_query_embedding(small_run):
    _, report, _ = small_run
    assert {"items", "queries", "inject_ms", "search_ms", "embed_ms", "build_seconds", "index",
            "embedding", "machine"} <= set(report)
    assert report["items"] == 300 and report["queries"] == 10 and report["embedding"] == "random"
    assert report["machine"]["cpus"] >= 1
    for name in ("inject_ms", "search_ms", "embed_ms", "first_inject_ms"):
        assert report[name] is not None, report.get("inject_error")
        assert set(report[name]) == STATS
        assert all(value > 0 for value in report[name].values())
        assert report[name]["p50"] <= report[name]["p95"] <= report[name]["max"]
    json.dumps(report)  # JSON-able as the CLI prints it


def test_inject_is_broken_down_by_stage_from_the_read_paths_spans(small_run):
    """The stages come from spans the read path marks itself; all but the full-text query's
    own time (inside "vector", where both LanceDB queries run together) add up to about one
    inject."""
    from evals.bench.retrieval import STAGES

    _, report, _ = small_run
    stages = report["stages_p50_ms"]
    assert set(stages) == set(STAGES) and report["data_root"] == "local disk"
    assert stages["embed"] > 0 and stages["vector"] > 0 and stages["full-text"] > 0 and stages["block"] > 0
    assert all(value >= 0 for value in stages.values())
    serial = sum(v for k, v in stages.items() if k != "full-text")
    assert 0.3 * report["inject_ms"]["p50"] <= serial <= 3 * report["inject_ms"]["p50"]


def test_built_root_is_published_with_a_full_text_index(small_run):
    _, report, _ = small_run
    table = lancedb.connect(f"{report['root']}/lancedb").open_table(ITEMS_TABLE)
    assert PUBLISHED_TAG in table.tags.list()
    table.checkout(PUBLISHED_TAG)
    assert table.count_rows() == 300
    from memory_assets.lib.items.publish import FTS_COLUMN

    assert any(index.columns == [FTS_COLUMN] and "FTS" in str(index.index_type).upper()
               for index in table.list_indices())
    assert f"FTS({FTS_COLUMN})" in report["index"]


def test_the_built_root_has_its_graph_and_inject_walks_it(small_run):
    """The latency is measured with dual search on: the root carries the graph the pipeline
    would publish, and the timed questions name its entities."""
    _, report, _ = small_run
    graph = report["graph"]
    assert graph["graph_on"] and graph["entities"] > 0 and graph["edges_mentions"] > 0
    assert graph["queries_walked"] > 0 and graph["items_reached_mean"] > 0


def test_second_run_reuses_the_cached_root(small_run):
    cache, first, second = small_run
    assert (first["cache"], second["cache"]) == ("built", "reused")
    assert second["root"] == first["root"] and second["build_seconds"] == first["build_seconds"]
    assert [p.name for p in cache.iterdir() if not p.name.startswith(".")] == [Path(first["root"]).name]
    manifest = Path(first["root"]) / MANIFEST
    built_at = json.loads(manifest.read_text())["built_at"]
    run_bench(300, config=load_config(), queries=2, warmup=0, embed="random", cache_dir=cache)
    assert json.loads(manifest.read_text())["built_at"] == built_at


def test_a_changed_write_path_rebuilds_the_root_from_kept_vectors(tmp_path, monkeypatch):
    config = load_config()
    first, _ = roots.cached_root(40, config=config, embed="model", cache_dir=tmp_path)
    real_key = roots.build_key
    monkeypatch.setattr(roots, "build_key", lambda *a, **kw: {**real_key(*a, **kw), "code_sha256": "changed"})

    def no_embedding(self, texts):
        raise AssertionError("the 40 sentences were embedded twice")

    monkeypatch.setattr(Embedder, "embed", no_embedding)
    second, reused = roots.cached_root(40, config=config, embed="model", cache_dir=tmp_path)
    assert second != first and not reused
    assert ItemStore(DataRoot.resolve(second)).table().count_rows() == 40


def test_synthetic_items_look_like_real_ones():
    config = load_config()
    items = synthetic_items(2000, seed=3, config=config)
    assert items.columns == list(ITEM_SCHEMA) and items.height == 2000
    assert items["id"].n_unique() == 2000 and items["content_hash"].n_unique() == 2000
    assert set(items["category"].unique()) <= set(config.categories)
    assert 0.03 <= (items["source_trust"] == "untrusted").mean() <= 0.07
    assert 0.015 <= (items["status"] == "superseded").mean() <= 0.04
    assert items["kind"].n_unique() >= 6 and items["tier"].n_unique() == 3
    assert synthetic_items(50, seed=3, config=config)["content"].to_list() == items["content"].head(50).to_list()


def test_cli_takes_a_comma_list_of_sizes_and_prints_json(tmp_path, capsys):
    assert main(["--items", "120,150", "--queries", "3", "--warmup", "0", "--embed", "random",
                 "--cache-dir", str(tmp_path), "--json"]) == 0
    reports = json.loads(capsys.readouterr().out)
    assert [r["items"] for r in reports] == [120, 150]


def test_an_embedding_outside_the_candidate_lists_counts_in_the_block():
    """The trust pass embedding a disagreeing pair (an object-store root) is not the
    query's embedding: the stages stay non-negative and it lands in "block"."""
    from evals.bench.retrieval import _stages

    calls = [("inject", 0.0, 0.050, 0.0), ("tier 2", 0.001, 0.030, 0.0), ("candidates", 0.002, 0.025, 0.0),
             ("embed", 0.002, 0.005, 0.0), ("vector", 0.008, 0.006, 0.0), ("full-text", 0.008, 0.004, 0.0),
             ("embed", 0.035, 0.010, 0.0)]
    stages = _stages(calls)
    assert abs(stages["embed"] - 0.005) < 1e-9 and abs(stages["rows"] - 0.014) < 1e-9
    assert abs(stages["block"] - 0.020) < 1e-9 and all(v >= 0 for v in stages.values())
