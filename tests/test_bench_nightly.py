"""The nightly benchmark: a small run builds a production-shaped root and times a real nightly job."""

from __future__ import annotations

import contextlib
import io
import json

import polars as pl
import pytest

from evals.bench import nightly
from evals.bench.nightly_facts import FACTS_PER_SESSION, NIGHT, synthetic_batches, write_batch
from evals.bench.synthetic import BENCH_NOW
from memory_assets.cli import main as cli
from memory_assets.lib import warehouse as inputs
from retrieval.config import load_config
from retrieval.paths import DataRoot
from retrieval.schema import FACT_SCHEMA, RESOURCE_SCHEMA
from retrieval.store import ItemStore

RUN_KEYS = {"success", "seconds", "cpu_seconds", "steps", "steps_failed", "outside_steps_seconds", "parts",
            "items", "active_items", "facts_in", "merged", "superseded", "embedded", "vectors_reused",
            "events_folded", "lifecycle", "summaries_updated", "published_version", "run_id"}
NIGHTLY_STEPS = {"memory_items", "memory_items_checks", "published_items", "lessons_and_triggers", "category_summaries"}


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """500 facts with random first-build vectors, through the CLI as a user runs it."""
    root = tmp_path_factory.mktemp("bench-nightly") / "data"
    kept = tmp_path_factory.mktemp("bench-nightly-first") / "first"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli(["bench", "nightly", "--items", "500", "--embed", "random", "--events", "40",
                    "--root", str(root), "--first-build", str(kept), "--json"])
    reports = json.loads(out.getvalue())
    return code, reports, root, kept


@pytest.mark.slow
def test_a_kept_first_build_is_reused_only_with_the_same_arguments(small_run, tmp_path):
    _code, reports, _root, kept = small_run
    assert (kept / "first-build.json").exists() and (kept / "data").is_dir()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli(["bench", "nightly", "--items", "500", "--embed", "random", "--events", "40",
                    "--root", str(tmp_path / "again"), "--first-build", str(kept), "--json"])
    again = json.loads(out.getvalue())[0]
    assert code == 0 and again["first_build_reused"]
    # The first build was copied, not run: its report is the kept one, and the night ran on it.
    assert again["first_build"] == reports[0]["first_build"]
    assert again["nightly"]["success"]
    assert again["nightly"]["previous_version"] == reports[0]["first_build"]["published_version"]
    common = {"items": 500, "embed": "random", "seed": 0, "new_share": 0.01, "events": 40}
    assert nightly._kept_first_build(kept, common) is not None
    assert nightly._kept_first_build(kept, {**common, "events": 41}) is None
    assert nightly._kept_first_build(kept, {**common, "seed": 1}) is None


@pytest.mark.slow
def test_report_has_first_build_and_nightly_with_steps(small_run):
    code, reports, _, _ = small_run
    assert code == 0 and len(reports) == 1
    report = reports[0]
    assert {"items", "embedding", "first_build", "nightly", "nightly_input", "first_facts", "setup_seconds",
            "target_seconds", "meets_target", "machine"} <= set(report)
    assert report["items"] == 500 and report["embedding"] == "random"
    for name in ("first_build", "nightly"):
        run = report[name]
        assert RUN_KEYS <= set(run), RUN_KEYS - set(run)
        assert run["success"] and not run["steps_failed"]
        assert NIGHTLY_STEPS <= set(run["steps"])
        assert run["seconds"] > 0 and all(v >= 0 for v in run["steps"].values())
        memory_items = run["parts"]["memory_items"]
        assert {"consolidate", "lifecycle.apply", "write_items"} <= set(memory_items)
        assert {"check: items suite", "check: embeddings suite"} <= set(run["parts"]["memory_items_checks"])
    # Each phase ran as a process of its own, so each reports its own peak RSS; the report's
    # is the nightly job's (the target), not the generator's.
    assert report["setup_peak_rss_mib"] > 0 and report["first_build"]["peak_rss_mib"] > 0
    assert report["peak_rss_mib"] == report["nightly"]["peak_rss_mib"] > 0
    assert report["target_rss_mib"] is None  # at 500 facts only the time target applies
    # every fact got a random vector; exact duplicates collapse before items are embedded
    assert report["first_build"]["vectors"]["random"] >= report["first_build"]["embedded"] > 0


@pytest.mark.slow
def test_nightly_publishes_a_new_version_and_reuses_vectors(small_run):
    _, reports, root, _ = small_run
    report = reports[0]
    nightly, first = report["nightly"], report["first_build"]
    assert nightly["published_new_version"]
    assert nightly["published_version"] > nightly["previous_version"] == first["published_version"]
    assert ItemStore(DataRoot.resolve(root)).published_version() == nightly["published_version"]
    # Only tonight's texts (new facts, updated wording) are embedded; everything else is reused.
    new = report["nightly_input"]["new_facts"]
    assert 0 < nightly["embedded"] <= new + report["nightly_input"]["events"].get("update", 0)
    assert nightly["vectors_reused"] >= first["items"] - 5
    assert sum(report["nightly_input"]["events"].values()) == 40
    assert nightly["events_folded"]
    assert nightly["facts_in"] == report["first_facts"]["facts"] + new


def test_synthetic_batches_look_like_extracted_sessions(tmp_path):
    config = load_config()
    first, tonight = synthetic_batches(400, new_share=0.1, seed=1, config=config)
    assert first.facts.schema == pl.Schema(FACT_SCHEMA) and first.resources.schema == pl.Schema(RESOURCE_SCHEMA)
    assert first.facts.height == 400 and tonight.facts.height == 40
    assert first.sessions == 400 // FACTS_PER_SESSION
    assert first.repeats > 0 and first.facts["content_hash"].n_unique() == 400 - first.repeats
    # A restated fact comes from another session; a session never states one fact twice.
    assert first.facts.select(["source_session", "content_hash"]).is_unique().all()
    assert first.facts["id"].n_unique() == 400
    assert first.facts["created_at"].max() < BENCH_NOW < tonight.facts["created_at"].min()
    assert tonight.facts["created_at"].max() < NIGHT
    assert set(tonight.facts["source_session"]).isdisjoint(set(first.facts["source_session"]))
    assert first.facts["supersedes_hint"].drop_nulls().len() == first.hints

    paths = DataRoot.resolve(tmp_path / "data")
    assert write_batch(paths, first) == first.sessions
    stored = set(inputs.resource_ids(paths).to_list())
    cited = {r for ids in first.facts["source_resource_ids"].to_list() for r in ids}
    assert cited and cited <= stored  # the items check: every source turn exists
    assert inputs.read_facts(paths).height == 400
