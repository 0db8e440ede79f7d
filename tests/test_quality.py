"""Publish only what passed its checks: the quality suites, and write–audit–publish end to end.

The suites are specified on small hand-made frames (one bad row kind per case); then
each bad row kind is planted into a real ``memory_items`` run (real Dagster, LanceDB,
Parquet) and must fail its blocking check, fail the run, and leave the agent reading
the previous published version unchanged.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import date, datetime, timedelta, timezone

import dagster as dg
import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from memory_assets.defs.runtime import default_resources
from memory_assets.definitions import defs
from memory_assets.lib.items import publish
from memory_assets.lib.items.consolidation import facts_to_items
from memory_assets.lib.quality import (
    ScanLedger, audit, citations_report, facts_report, index_report, items_report, resources_report, schema_report,
    vectors_report,
)
from memory_assets.lib.quality.suite_report import QualityReport
from memory_assets.lib.quality.validation import runtime
from retrieval import MemoryClient
from retrieval import published
from retrieval.config import load_config
from retrieval.paths import DataRoot
from retrieval.schema import FACT_SCHEMA, ITEM_SCHEMA, RESOURCE_SCHEMA
from retrieval.store import ItemStore
from memory_assets.cli.runner import materialize_pending
from memory_assets.lib.ingest.intake import ingest_paths
from tests.conftest import SAMPLES
from tests.factories import fact

SECRET = "sk-proj-AbC123dEf456GhI789jKl012MnO345pQr678"
NOW = datetime(2026, 10, 1, tzinfo=timezone.utc)
CONFIG = load_config()
MODEL = "local:all-MiniLM-L6-v2"
SESSIONS = ("pa-2026-09-02", "pa-2026-09-09", "pa-2026-09-16", "pa-2026-09-23")


@pytest.fixture(scope="module", autouse=True)
def gx_loaded():
    """Great Expectations takes seconds to import: once per module, not inside a test."""
    runtime()


# --- hand-made frames -------------------------------------------------------------------

def _fact(fid: str, content: str, **overrides) -> dict:
    return fact(fid, content, at=NOW - timedelta(days=3), turns=[f"s1:{fid}"], **overrides)

FACT_ROWS = [
    _fact("wrx", "Aaron's WRX oil change is due at 11,799 miles"),
    _fact("old", "Aaron's WRX oil change was due at 6,000 miles"),
    _fact("tool", "The dealer says the warranty renewal costs $499", source_trust="untrusted",
          importance=0.4, strength="implied", provenance="extracted"),
]
RESOURCE_IDS = [f"r-{r['id']}" for r in FACT_ROWS]


def good_facts() -> pl.DataFrame:
    return pl.DataFrame(FACT_ROWS, schema=FACT_SCHEMA)


def good_items() -> pl.DataFrame:
    items = facts_to_items(good_facts(), NOW).with_columns(embedding_model=pl.lit(MODEL)).select(list(ITEM_SCHEMA))
    # "wrx" replaced "old", linked both ways as supersession does.
    return items.with_columns(
        status=pl.when(pl.col("id") == "old").then(pl.lit("superseded")).otherwise(pl.col("status")),
        superseded_by=pl.when(pl.col("id") == "old").then(pl.lit("wrx")),
        supersedes=pl.when(pl.col("id") == "wrx").then(pl.lit("old")),
    )


def _set(frame: pl.DataFrame, row_id: str, **values) -> pl.DataFrame:
    """``frame`` with the given columns replaced on the row whose id is ``row_id``."""
    return frame.with_columns(**{
        column: pl.when(pl.col("id") == row_id).then(pl.lit(value, dtype=frame.schema[column])).otherwise(pl.col(column))
        for column, value in values.items()
    })


def _failed(report: QualityReport) -> set[str]:
    return {f.expectation for f in report.failed}


def _examples(report: QualityReport, expectation: str) -> list[dict]:
    return report.metadata()[f"failed: {expectation}"]["examples"]


# --- the memory-items suite -------------------------------------------------------------

def test_good_items_meet_every_expectation():
    report = items_report(good_items(), CONFIG, resource_ids=RESOURCE_IDS)
    assert report.passed, report.summary()
    assert report.metadata()["failed_expectations"] == 0


BAD_ITEMS = [
    # (case, row id, bad values, the expectation that must fail, what its example shows)
    ("importance above 1", "wrx", {"importance": 1.7}, "importance_in_range", 1.7),
    ("negative confidence", "wrx", {"confidence": -0.1}, "confidence_in_range", -0.1),
    ("unconfigured category", "wrx", {"category": "astrology"}, "category_configured", "astrology"),
    ("unknown kind", "wrx", {"kind": "rumour"}, "kind_in_set", "rumour"),
    ("unknown tier", "wrx", {"tier": "forever"}, "tier_in_set", "forever"),
    ("unknown status", "wrx", {"status": "zombie"}, "status_in_set", "zombie"),
    ("unknown trust", "wrx", {"source_trust": "maybe"}, "source_trust_in_set", "maybe"),
    ("duplicate id", "tool", {"id": "wrx"}, "id_unique", None),
    ("dangling supersedes", "wrx", {"supersedes": "ghost-item"}, "supersedes_exists", "ghost-item"),
    ("dangling superseded_by", "old", {"superseded_by": "ghost-item"}, "superseded_by_exists", "ghost-item"),
    ("source turn never stored", "wrx", {"source_resource_ids": ["r-404"]}, "sources_exist", "r-404"),
    ("no source turn at all", "wrx", {"source_resource_ids": []}, "sources_exist", "<no source_resource_ids>"),
    ("credential in content", "wrx", {"content": f"Aaron's deploy key is {SECRET}"}, "no_credentials", "openai_key"),
    ("untrusted above the cap", "tool", {"importance": 0.8}, "untrusted_importance_capped", 0.8),
    ("missing content", "wrx", {"content": None}, "required_fields_present", "content"),
    ("missing status", "wrx", {"status": None}, "required_fields_present", "status"),
]


@pytest.mark.parametrize("case,row_id,values,expectation,shown", BAD_ITEMS, ids=[c[0] for c in BAD_ITEMS])
def test_each_bad_item_fails_its_expectation_with_the_row_in_the_metadata(case, row_id, values, expectation, shown):
    report = items_report(_set(good_items(), row_id, **values), CONFIG, resource_ids=RESOURCE_IDS)
    assert not report.passed and report.severity == "ERROR"
    assert _failed(report) == {expectation}, report.summary()
    examples = _examples(report, expectation)
    assert examples and examples[0]["id"] == values.get("id", row_id)
    if shown is not None:
        assert shown in examples[0].values()
    # Both rows of a duplicated id break uniqueness.
    assert report.metadata()["failing_counts"] == {expectation: 2 if expectation == "id_unique" else 1}


def test_a_credential_is_never_printed_into_the_check_metadata():
    report = items_report(_set(good_items(), "wrx", content=f"Aaron's deploy key is {SECRET}"), CONFIG,
                          resource_ids=RESOURCE_IDS)
    metadata = report.metadata()
    assert SECRET not in repr(metadata)
    assert "[REDACTED:openai_key]" in _examples(report, "no_credentials")[0]["content"]


def test_warnings_fail_the_check_without_blocking():
    report = items_report(_set(good_items(), "wrx", sentiment="ecstatic"), CONFIG, resource_ids=RESOURCE_IDS)
    assert not report.passed and report.severity == "WARN"
    assert _failed(report) == {"sentiment_in_set"}


def test_a_missing_column_fails_instead_of_passing_silently():
    report = items_report(good_items().drop("tier"), CONFIG, resource_ids=RESOURCE_IDS)
    assert {"required_fields_present", "tier_in_set"} <= _failed(report)
    assert "tier" in repr(report.metadata())


# --- extracted facts and resources ------------------------------------------------------

BAD_FACTS = [
    ("importance above 1", {"importance": 1.7}, "importance_in_range"),
    ("credential", {"content": f"my token is {SECRET}"}, "no_credentials"),
    ("source turn from another session", {"source_resource_ids": ["r-elsewhere"]}, "sources_exist"),
    ("unconfigured category", {"category": "astrology"}, "category_configured"),
]


def test_good_facts_meet_every_expectation():
    assert facts_report(good_facts(), CONFIG, resource_ids=RESOURCE_IDS).passed


@pytest.mark.parametrize("case,values,expectation", BAD_FACTS, ids=[c[0] for c in BAD_FACTS])
def test_each_bad_fact_fails_its_expectation(case, values, expectation):
    report = facts_report(_set(good_facts(), "wrx", **values), CONFIG, resource_ids=RESOURCE_IDS)
    assert _failed(report) == {expectation}
    assert _examples(report, expectation)[0]["id"] == "wrx"


def good_resources() -> pl.DataFrame:
    at = NOW - timedelta(days=3)
    rows = [{"resource_id": f"r{i}", "session_id": "s1", "turn": i, "external_id": None, "role": role,
             "speaker": role, "content": f"turn {i}", "content_at": at + timedelta(minutes=i), "trust": "trusted",
             "source_format": "jsonl", "source_file": "s1.jsonl", "ingested_at": NOW} for i, role in
            enumerate(["user", "assistant", "tool"])]
    return pl.DataFrame(rows, schema=RESOURCE_SCHEMA)


BAD_RESOURCES = [
    ("unknown role", lambda f: f.with_columns(role=pl.Series(["user", "robot", "tool"])), "role_in_set", "r1"),
    ("missing speaker", lambda f: f.with_columns(speaker=pl.Series(["user", None, "tool"], dtype=pl.String)),
     "speaker_not_null", "r1"),
    ("duplicate resource id", lambda f: f.with_columns(resource_id=pl.Series(["r0", "r0", "r2"])),
     "resource_id_unique", "r0"),
    ("unknown trust", lambda f: f.with_columns(trust=pl.Series(["trusted", "trusted", "sometimes"])),
     "trust_in_set", "r2"),
    ("timestamp that does not parse",
     lambda f: f.with_columns(content_at=pl.Series(["2026-09-28T10:00:00+00:00", "last tuesday", "2026-09-28T10:02:00Z"])),
     "content_at_parses", "r1"),
    ("turn from another session", lambda f: f.with_columns(session_id=pl.Series(["s1", "s2", "s1"])),
     "session_matches_partition", "r1"),
]


def test_good_resources_meet_every_expectation():
    assert resources_report(good_resources(), session_ids=["s1"]).passed


@pytest.mark.parametrize("case,mutate,expectation,row", BAD_RESOURCES, ids=[c[0] for c in BAD_RESOURCES])
def test_each_bad_resource_fails_its_expectation(case, mutate, expectation, row):
    report = resources_report(mutate(good_resources()), session_ids=["s1"])
    assert _failed(report) == {expectation}, report.summary()
    assert _examples(report, expectation)[0]["resource_id"] == row


# --- column-schema change ---------------------------------------------------------------

SCHEMA_CHANGES = [
    ("missing column", lambda s: {k: v for k, v in s.items() if k != "trust"}, "ERROR", "trust"),
    ("retyped column", lambda s: {**s, "turn": pl.String()}, "ERROR", "turn"),
    ("extra column", lambda s: {**s, "mood": pl.String()}, "WARN", "mood"),
]


def test_the_contract_schema_passes():
    assert schema_report({"part-1.parquet": RESOURCE_SCHEMA}, RESOURCE_SCHEMA, subject="resources").passed


@pytest.mark.parametrize("case,change,severity,column", SCHEMA_CHANGES, ids=[c[0] for c in SCHEMA_CHANGES])
def test_schema_changes_name_the_file_and_column(case, change, severity, column):
    report = schema_report({"s1/part-1.parquet": RESOURCE_SCHEMA, "s2/part-2.parquet": change(RESOURCE_SCHEMA)},
                           RESOURCE_SCHEMA, subject="resources")
    assert not report.passed and report.severity == severity
    example = report.failed[0].examples[0]
    assert example["column"] == column and example["file"] == "s2/part-2.parquet"


# --- embeddings and the full-text index -------------------------------------------------

def _vectors_table(vectors: np.ndarray | list, *, models: list[str] | None = None) -> pa.Table:
    n = len(vectors)
    if isinstance(vectors, np.ndarray):
        column = pa.FixedSizeListArray.from_arrays(pa.array(vectors.astype(np.float32).reshape(-1)), vectors.shape[1])
    else:
        column = pa.array(vectors, type=pa.list_(pa.float32()))
    return pa.table({"id": [f"i{k}" for k in range(n)], "embedding_model": models or [MODEL] * n, "vector": column})


def _unit(n: int, dim: int = 384) -> np.ndarray:
    v = np.random.default_rng(0).standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _with_row(matrix: np.ndarray, row: int, value: np.ndarray) -> np.ndarray:
    out = matrix.copy()
    out[row] = value
    return out


BAD_VECTORS = [
    ("NaN", lambda: _vectors_table(_with_row(_unit(4), 2, np.full(384, np.nan))), "no_nan", "i2"),
    ("not unit length", lambda: _vectors_table(_with_row(_unit(4), 1, _unit(1)[0] * 3)), "unit_norm", "i1"),
    ("wrong dimension", lambda: _vectors_table(_unit(4, 383)), "dimension_matches_model", "i0"),
    ("one row of another dimension", lambda: _vectors_table([*_unit(3).tolist(), _unit(1, 383)[0].tolist()]),
     "dimension_matches_model", "i3"),
    ("another model", lambda: _vectors_table(_unit(2), models=[MODEL, "openai:text-embedding-3-small"]),
     "embedding_model_matches_config", "i1"),
]


def test_unit_vectors_of_the_configured_model_pass():
    assert vectors_report(_vectors_table(_unit(5)), CONFIG).passed


@pytest.mark.parametrize("case,table,expectation,row", BAD_VECTORS, ids=[c[0] for c in BAD_VECTORS])
def test_each_bad_vector_fails_its_expectation(case, table, expectation, row):
    report = vectors_report(table(), CONFIG)
    assert expectation in _failed(report), report.summary()
    assert row in [e["id"] for e in _examples(report, expectation)]


def test_mixed_dimensions_also_fail_the_one_dimension_rule():
    report = vectors_report(_vectors_table([*_unit(3).tolist(), _unit(1, 383)[0].tolist()]), CONFIG)
    assert "one_dimension" in _failed(report)


@dataclasses.dataclass
class _Index:
    index_type: str
    columns: list[str]
    num_unindexed_rows: int = 0


@pytest.mark.parametrize("indices,rows,passed,severity", [
    ([_Index("FTS", ["content"])], 10, True, "ERROR"),
    ([_Index("FTS", ["search_text"])], 10, True, "ERROR"),
    ([], 10, False, "ERROR"),
    ([_Index("IVF_HNSW_SQ", ["vector"])], 10, False, "ERROR"),
    ([], 0, True, "ERROR"),
    ([_Index("FTS", ["content"], num_unindexed_rows=3)], 10, False, "WARN"),
], ids=["present", "content and source text", "missing", "only a vector index", "empty table", "stale"])
def test_the_full_text_index_must_cover_content(indices, rows, passed, severity):
    report = index_report(indices, rows=rows)
    assert report.passed is passed and report.severity == severity


# --- documents citing items (summaries, insights, the health report) --------------------

def _summaries(markdown=("- WRX oil change due at 11,799 miles [wrx]", "- Dealer quote $499 [tool]"),
               cited=(["wrx"], ["tool"]), names=("vehicle", "maintenance")) -> pl.DataFrame:
    return pl.DataFrame({"category": list(names), "markdown": list(markdown), "item_ids": [list(c) for c in cited]},
                        schema={"category": pl.String, "markdown": pl.String, "item_ids": pl.List(pl.String)})


def _cite_report(frame: pl.DataFrame):
    return citations_report(frame, id_column="category", text_column="markdown", cited_column="item_ids",
                            item_ids=[r["id"] for r in FACT_ROWS], max_chars=200, subject="category_summaries")


BAD_SUMMARIES = [
    ("cites an item that does not exist", _summaries(cited=(["wrx"], ["tool", "ghost"])), "cited_items_exist", "ghost"),
    ("empty summary", _summaries(markdown=("- WRX oil change [wrx]", "")), "text_within_size_cap", 0),
    ("over the size cap", _summaries(markdown=("x" * 201, "- Dealer quote [tool]")), "text_within_size_cap", 201),
    ("two summaries of one category", _summaries(names=("vehicle", "vehicle")), "category_unique", "vehicle"),
    ("credential", _summaries(markdown=("- WRX [wrx]", f"- key {SECRET} [tool]")), "no_credentials", "openai_key"),
    ("no summaries at all", _summaries().clear(), "not_empty", None),
]


def test_good_summaries_meet_every_expectation():
    assert _cite_report(_summaries()).passed


@pytest.mark.parametrize("case,frame,expectation,shown", BAD_SUMMARIES, ids=[c[0] for c in BAD_SUMMARIES])
def test_each_bad_summary_fails_its_expectation(case, frame, expectation, shown):
    report = _cite_report(frame)
    assert _failed(report) == {expectation}, report.summary()
    if shown is not None:
        assert shown in _examples(report, expectation)[0].values()
    assert SECRET not in repr(report.metadata())


def test_lessons_and_triggers_are_checked_like_documents():
    from memory_assets.lib.quality.citation_suite import lifecycle_report

    items = [r["id"] for r in FACT_ROWS]
    triggers = pl.DataFrame({"trigger_date": [date(2026, 10, 2)], "message": ["WRX oil change due"],
                             "item_ids": [["wrx"]]})
    assert lifecycle_report(["Don't force-push"], triggers, items).passed
    assert lifecycle_report([], triggers.clear(), items).passed  # a new store has none yet
    dangling = lifecycle_report([], triggers.with_columns(item_ids=pl.lit(["gone"])), items)
    assert _failed(dangling) == {"cited_items_exist"} and "gone" in _examples(dangling, "cited_items_exist")[0].values()
    leaked = lifecycle_report([f"Use the key {SECRET}"], triggers, items)
    assert _failed(leaked) == {"no_credentials"} and SECRET not in repr(leaked.metadata())


# --- the credential-scan ledger ---------------------------------------------------------

def test_the_ledger_scans_each_text_once_and_still_catches_new_credentials(tmp_path):
    texts = pl.Series([f"Aaron noted detail {i} about the WRX" for i in range(50)])
    first = ScanLedger.load(tmp_path)
    assert first.kinds(texts).null_count() == 50 and first.scanned == 50
    first.save()
    again = ScanLedger.load(tmp_path)
    planted = pl.concat([texts, pl.Series([f"the key is {SECRET}"])])
    kinds = again.kinds(planted)
    assert again.scanned == 1 and kinds.to_list()[-1] == "openai_key"


def test_gx_runs_ephemeral_without_progress_bars_or_analytics():
    import os

    rt = runtime()
    assert type(rt.context).__name__ == "EphemeralDataContext"
    assert rt.context.variables.progress_bars.globally is False
    assert os.environ["GX_ANALYTICS_ENABLED"] == "false"


# --- the Dagster checks -----------------------------------------------------------------

@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The personal-assistant sample through the real pipeline (checks included), published
    once; the instance keeps the checks' history."""
    root = tmp_path_factory.mktemp("quality") / "data"
    paths = DataRoot.resolve(root)
    with dg.instance_for_test() as instance:
        ingest_paths([SAMPLES / "personal-assistant.jsonl"], root, load_config())
        summary = materialize_pending(paths, extractor="offline", instance=instance)
        assert summary.items_materialized and not summary.failed, summary
        yield paths, instance


def _items_run(paths: DataRoot, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    """``memory_items`` → its checks → ``published_items``, as ``memory materialize`` runs them."""
    loaded = defs()
    targets = [a for a in loaded.assets if isinstance(a, dg.AssetsDefinition)] + list(loaded.asset_checks)
    return dg.materialize(targets, selection=["memory_items", "entities", "edges", "published_items"], instance=instance,
                          resources=default_resources(str(paths.root)), raise_on_error=False)


def _plant(monkeypatch, mutate):
    """Make ``memory_items`` write ``mutate(items, vectors)`` instead of what it computed.

    The last step before staging, so whatever consolidation and the lifecycle did, the
    planted row is what the checks audit.
    """
    real = publish.write_items

    def planted(paths, items, vectors, now, search_text=None, **kwargs):
        items, vectors = mutate(items, vectors)
        return real(paths, items, vectors, now, search_text=search_text, **kwargs)

    monkeypatch.setattr(publish, "write_items", planted)


def _first_active(items: pl.DataFrame) -> str:
    return items.filter(pl.col("status") == "active").sort("id")["id"][0]


def _on_row(items: pl.DataFrame, target: str, column: str, value) -> pl.DataFrame:
    return items.with_columns(
        pl.when(pl.col("id") == target).then(pl.lit(value, dtype=items.schema[column])).otherwise(pl.col(column))
        .alias(column))


def _served(paths: DataRoot) -> tuple:
    """What the agent gets: the published version, its items, a search, the publish record."""
    store = ItemStore(paths)
    hits = MemoryClient(paths.root).search("When is the WRX oil change due?", k=5)
    return (store.published_version(), store.items().select("id", "content", "importance", "supersedes").sort("id"),
            [h.id for h in hits], publish.current(paths))


def _shrunk(vectors: np.ndarray) -> np.ndarray:
    cut = vectors[:, :383]
    return cut / np.linalg.norm(cut, axis=1, keepdims=True)


PLANTED = [
    # (case, the blocking check, its failing expectation, mutate(items, vectors, target row), shown in metadata)
    ("credential in content", "items_valid", "no_credentials",
     lambda items, vectors, row: (_on_row(items, row, "content", f"Aaron's deploy key is {SECRET}"), vectors),
     "[REDACTED:openai_key]"),
    ("importance 1.7", "items_valid", "importance_in_range",
     lambda items, vectors, row: (_on_row(items, row, "importance", 1.7), vectors), 1.7),
    ("dangling supersedes", "items_valid", "supersedes_exists",
     lambda items, vectors, row: (_on_row(items, row, "supersedes", "no-such-item"), vectors), "no-such-item"),
    ("wrong vector dimension", "items_embeddings", "dimension_matches_model",
     lambda items, vectors, row: (items, _shrunk(vectors)), 383),
]


@pytest.mark.parametrize("case,check,expectation,mutate,shown", PLANTED, ids=[p[0] for p in PLANTED])
def test_a_planted_bad_row_fails_the_run_and_the_agent_keeps_the_previous_version(
        built, monkeypatch, case, check, expectation, mutate, shown):
    paths, instance = built
    before = _served(paths)
    target = _first_active(ItemStore(paths).items())
    _plant(monkeypatch, lambda items, vectors: mutate(items, vectors, target))

    result = _items_run(paths, instance)

    assert result.success is False
    failed = next(e for e in result.get_asset_check_evaluations() if e.check_name == check)
    assert failed.passed is False and failed.severity == dg.AssetCheckSeverity.ERROR
    assert expectation in failed.description
    metadata = {k: v.value for k, v in failed.metadata.items()}
    assert metadata["failing_counts"][expectation] >= 1
    examples = metadata[f"failed: {expectation}"]["examples"]
    # The planted row is named (every row has the wrong dimension: the first five are shown).
    if expectation != "dimension_matches_model":
        assert examples[0]["id"] == target
    assert str(shown) in repr(examples), examples
    # The run stopped before publishing, with the reason in the event log.
    assert not [e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey("published_items")]
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "blocking asset check failed" in failure.event_specific_data.error.message
    # A secret never reaches Dagster's event log.
    assert SECRET not in repr([e.event_specific_data for e in result.all_events])
    # The agent still reads exactly the previous version.
    after = _served(paths)
    assert (after[0], after[2], after[3]) == (before[0], before[2], before[3])
    assert after[1].equals(before[1])
    staged = publish.staged(paths)
    assert staged.version != before[0] and not audit.passed(paths, staged.version)


def test_a_clean_run_passes_every_check_and_publishes(built):
    paths, instance = built
    previous = ItemStore(paths).published_version()
    result = _items_run(paths, instance)
    assert result.success
    evaluations = result.get_asset_check_evaluations()
    assert {e.check_name for e in evaluations} == {
        "items_schema", "items_valid", "items_embeddings", "items_read_index", "graph_valid", "published_embeddings",
        "published_was_audited", "conflicts_resolved"}
    assert all(e.passed for e in evaluations), [(e.check_name, e.description) for e in evaluations if not e.passed]
    version = ItemStore(paths).published_version()
    assert version != previous and audit.passed(paths, version)
    # The graph is in the lineage with its counts, and published with the items.
    metadata = {e.asset_key.path[-1]: e.materialization.metadata for e in result.get_asset_materialization_events()}
    entities, edges = (pl.read_parquet(p) for p in published.graph_files(paths))
    assert metadata["entities"]["entities"].value == entities.height > 0
    assert metadata["edges"]["edges"].value == edges.height > 0


def test_the_nightly_check_reports_each_unresolved_conflict_and_not_a_settled_one():
    from memory_assets.lib.quality import conflicts_report

    items = pl.DataFrame({"id": ["vim", "neovim", "old-rent", "rent"], "namespace": ["bea"] * 4,
                          "content": ["Bea uses Vim.", "Bea switched to Neovim.", "Rent is 1,100.", "Rent is 1,250."],
                          "status": ["active", "active", "superseded", "active"],
                          "contradicts": [["neovim"], ["vim"], ["rent"], ["old-rent"]]})
    report = conflicts_report(items)
    assert not report.passed and report.severity == "WARN"
    examples = report.metadata()["failed: conflicts_resolved"]["examples"]
    assert {e["id"] for e in examples} == {"vim", "neovim"}  # the rent was settled: one side is retired
    assert conflicts_report(items.with_columns(status=pl.lit("active")).head(0)).passed


def test_the_pipeline_checked_every_session_it_ingested(built):
    _, instance = built
    for asset, check in (("resources", "resources_valid"), ("extracted_facts", "facts_valid")):
        records = instance.event_log_storage.get_asset_check_execution_history(
            dg.AssetCheckKey(dg.AssetKey(asset), check), limit=50)
        assert records and all(r.status.value == "SUCCEEDED" for r in records), (asset, check)
        # Sessions are ingested in batches (a range run): each check run names the sessions it covered.
        covered = {s for r in records
                   for s in r.event.dagster_event.event_specific_data.metadata["sessions"].value.split(", ")}
        assert covered == set(SESSIONS), (asset, check, covered)


def test_every_asset_from_resources_to_published_items_has_a_check():
    checks = {}
    for definition in defs().asset_checks:
        for spec in definition.check_specs:
            checks.setdefault(spec.asset_key.to_user_string(), {})[spec.name] = spec
    for asset in ("resources", "extracted_facts", "memory_items", "published_items"):
        assert checks.get(asset), f"no check on {asset}"
        assert all(spec.description for spec in checks[asset].values())
    assert all(spec.blocking for spec in checks["memory_items"].values())


def test_every_asset_retrieval_reads_has_a_check():
    """MemoryClient reads published items (LanceDB + Parquet), summaries (tier 1),
    archive insights, and the lifecycle's lessons and triggers."""
    checked = {spec.asset_key.to_user_string() for d in defs().asset_checks for spec in d.check_specs}
    assert {"published_items", "category_summaries", "archive_clusters", "lessons_and_triggers"} <= checked


def test_the_benchmark_reports_seconds_per_100k_items(tmp_path, capsys):
    from evals.bench.quality import main

    assert main(["--items", "300", "--repeat", "1", "--cache-dir", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["items"] == 300 and all(report["checks_passed"].values())
    assert report["seconds_per_100k"] > 0 and report["target_seconds_per_100k"] == 1.0
