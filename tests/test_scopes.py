"""Scopes that mean something: a project's work stays in the project, a person's life is global.

Two coding sessions, one on "atlas-web" and one on "quill", each say something about the
work and something personal. After a real pipeline run (Dagster, Parquet, LanceDB), a
reader of atlas-web gets atlas-web's work and both personal facts, never quill's work;
a reader that names no project gets everything. A transcript that names no project but
carries its working directory gets the project from it.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import dagster as dg
import polars as pl
import pytest

from memory_assets.cli.runner import materialize_pending
from memory_assets.lib.extraction.scopes import names_project, scope_of
from memory_assets.lib.ingest.intake import ingest_paths
from memory_assets.lib.ingest.transcripts import parse_transcript
from memory_assets.lib.items.dedup import exact_dedup
from memory_assets.lib.quality.items_suite import facts_report
from retrieval import MemoryClient, interchange
from retrieval.agent.view import View
from retrieval.config import load_config
from retrieval.paths import DataRoot
from retrieval.projects import check_project, project_from_metadata
from retrieval.schema import FACT_SCHEMA
from retrieval.store import ItemStore

CONFIG = load_config()
SAID = "2026-03-02T10:00:00+00:00"
ATLAS_WORK = "We deploy the frontend to production every Thursday after the smoke tests pass."
ATLAS_PERSONAL = "I'm allergic to peanuts."
QUILL_WORK = "The editor backend keeps its documents in a Postgres database on the staging cluster."
QUILL_PERSONAL = "My daughter's piano recital is on Friday evening."
ORBIT_WORK = "The export endpoint crashed in production yesterday because the PDF worker ran out of memory."
CONTEXT = ("When do we deploy to production? Which database does the editor backend use? "
           "Am I allergic to peanuts? When is the piano recital?")


def _session(first: str, second: str) -> list[dict]:
    return [{"role": "user", "content": first, "ts": SAID}, {"role": "assistant", "content": "Noted.", "ts": SAID},
            {"role": "user", "content": second, "ts": SAID}, {"role": "assistant", "content": "Got it.", "ts": SAID}]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Two project sessions flushed by the agent, two memories remembered in one, one
    transcript with only its cwd, materialized."""
    base = tmp_path_factory.mktemp("scopes")
    root = base / "data"
    client = MemoryClient(root)
    client.flush_session("atlas-1", _session(ATLAS_WORK, ATLAS_PERSONAL), project="atlas-web")
    client.flush_session("quill-1", _session(QUILL_WORK, QUILL_PERSONAL), project="quill")
    # Remembered memories follow the same rule: a standing rule of the project, a fact of the person.
    client.remember("Never force-push to the main branch", project="quill")
    client.remember("I'm vegetarian", project="quill")
    transcript = base / "orbit.jsonl"
    transcript.write_text("".join(json.dumps(line) + "\n" for line in [
        {"session_id": "orbit-1", "role": "user", "content": ORBIT_WORK, "ts": SAID,
         "cwd": "/home/sofia/src/orbit-api"},
        {"session_id": "orbit-1", "role": "assistant", "content": "I'll look at the worker.", "ts": SAID},
    ]))
    report = ingest_paths([transcript], root, load_config())
    assert not report.errors
    paths = DataRoot.resolve(root)
    with dg.instance_for_test() as instance:
        summary = materialize_pending(paths, extractor="offline", instance=instance)
    assert not summary.failed and summary.items_materialized
    return paths


def _item(paths: DataRoot, content_part: str) -> dict:
    rows = ItemStore(paths).items().filter(pl.col("content").str.contains(content_part, literal=True)).to_dicts()
    assert len(rows) == 1, [r["content"] for r in rows]
    return rows[0]


# --- the pipeline ------------------------------------------------------------------------------


@pytest.mark.parametrize("said, scope, project", [
    ("the frontend to production every Thursday", "project", "atlas-web"),
    ("allergic to peanuts", "global", None),
    ("Postgres database on the staging cluster", "project", "quill"),
    ("piano recital", "global", None),
    ("Never force-push to the main branch", "project", "quill"),
    ("vegetarian", "global", None),
])
def test_work_is_scoped_to_its_project_and_personal_facts_stay_global(built, said, scope, project):
    item = _item(built, said)
    assert (item["scope"], item["project"]) == (scope, project)


def test_a_project_reader_sees_its_work_and_every_personal_fact_never_another_projects_work(built):
    client = MemoryClient(built.root)
    block = client.inject(CONTEXT, project="atlas-web", record=False).text
    assert "deploys the frontend to production" in block
    assert "allergic to peanuts" in block and "piano recital" in block
    assert "Postgres" not in block
    found = " ".join(h.content for h in client.search("Postgres database staging cluster", project="atlas-web"))
    assert "Postgres" not in found


def test_a_reader_that_names_no_project_sees_every_project(built):
    block = MemoryClient(built.root).inject(CONTEXT, record=False).text
    assert "deploys the frontend to production" in block and "Postgres" in block
    assert "allergic to peanuts" in block


def test_the_working_directory_names_the_project_when_the_agent_did_not(built):
    item = _item(built, "PDF worker ran out of memory")
    assert (item["scope"], item["project"]) == ("project", "orbit-api")
    resources = pl.concat([pl.read_parquet(p) for p in built.resources.rglob("part-*.parquet")])
    assert set(resources.filter(pl.col("session_id") == "orbit-1")["project"].to_list()) == {"orbit-api"}


def test_lessons_of_a_project_reader_are_its_projects_and_the_global_ones(built):
    client = MemoryClient(built.root)
    assert any("force-push" in lesson for lesson in client.lessons())
    assert any("force-push" in lesson for lesson in client.lessons(project="quill"))
    assert not any("force-push" in lesson for lesson in client.lessons(project="atlas-web"))


def test_due_reminders_of_a_project_reader_are_its_projects_and_the_global_ones(built):
    from datetime import date

    from memory_assets.lib import lifecycle

    reminders = {"atlas": _item(built, "the frontend to production every Thursday")["id"],
                 "quill": _item(built, "Postgres database on the staging cluster")["id"],
                 "personal": _item(built, "piano recital")["id"]}
    pl.DataFrame([{"trigger_date": date(2026, 3, 6), "message": name, "item_ids": [item_id],
                   "source_created_at": datetime(2026, 3, 2, tzinfo=timezone.utc)}
                  for name, item_id in reminders.items()], schema=lifecycle.TRIGGER_SCHEMA).write_parquet(built.triggers)
    try:
        client, day = MemoryClient(built.root), datetime(2026, 3, 6, 8, tzinfo=timezone.utc)
        due = lambda **kw: sorted(t["message"] for t in client.due_triggers(day, mark_fired=False, **kw))  # noqa: E731
        assert due(project="atlas-web") == ["atlas", "personal"]
        assert due(project="quill") == ["personal", "quill"]
        assert due() == ["atlas", "personal", "quill"]
    finally:
        built.triggers.unlink()


def test_list_by_project_holds_only_that_projects_memories(built):
    rows = MemoryClient(built.root).list(project="quill")
    assert rows and {r["project"] for r in rows} == {"quill"}


def test_an_export_carries_the_project_and_reads_back(built):
    lines = list(interchange.export_lines(built, CONFIG, datetime.now(timezone.utc)))
    parsed = interchange.parse(lines, "export.jsonl")
    assert not parsed.errors
    scoped = {r.content: r.project for r in parsed.items if r.scope == "project"}
    assert any("Postgres" in c and p == "quill" for c, p in scoped.items())


# --- reading: the view -------------------------------------------------------------------------


def _row(scope: str, project: str | None) -> dict:
    return {"status": "active", "namespace": "default", "scope": scope, "project": project}


@pytest.mark.parametrize("reader, row, seen", [
    ("atlas-web", _row("global", None), True),
    ("atlas-web", _row("project", "atlas-web"), True),
    ("atlas-web", _row("project", "quill"), False),
    (None, _row("project", "quill"), True),
    (None, _row("global", None), True),
])
def test_a_view_shows_global_items_and_its_projects_only(reader, row, seen):
    view = View.of(CONFIG).for_project(reader)
    assert view.visible(row) is seen


def test_the_lancedb_filter_says_the_same_as_the_row_filter():
    assert "project" not in View.of(CONFIG).where()
    where = View.of(CONFIG).for_project("o'brien").where()
    assert "(scope IS NULL OR scope <> 'project' OR project = 'o''brien')" in where


def test_lancedb_filters_a_projects_reader_as_the_row_filter_does(built):
    view = View.of(CONFIG).for_project("atlas-web")
    table = ItemStore(built).table()
    filtered = {r["id"] for r in table.search().where(view.where(), prefilter=True).limit(100).to_list()}
    assert filtered == {r["id"] for r in ItemStore(built).items().to_dicts() if view.visible(r)}
    assert not any("Postgres" in r["content"] for r in ItemStore(built).items().filter(
        pl.col("id").is_in(list(filtered))).to_dicts())


def test_a_pending_write_of_another_project_is_not_shown(tmp_path):
    client = MemoryClient(tmp_path / "data")
    client.remember("The quill editor autosaves drafts every 30 seconds", project="quill")
    assert client.search("quill editor autosaves drafts", project="atlas-web") == []
    assert client.search("quill editor autosaves drafts", project="quill")
    assert client.search("quill editor autosaves drafts")


# --- writing: names and metadata ---------------------------------------------------------------


@pytest.mark.parametrize("metadata, project", [
    ({"repository": "github.com/acme/atlas-web.git"}, "atlas-web"),
    ({"repo": "https://github.com/acme/atlas-web"}, "atlas-web"),
    ({"git_remote": "git@github.com:acme/atlas-web.git"}, "atlas-web"),
    ({"cwd": "/home/sofia/src/atlas-web"}, "atlas-web"),
    ({"cwd": "/home/sofia/src/atlas-web/"}, "atlas-web"),
    ({"workspace": "C:\\Users\\sofia\\code\\Atlas Web"}, "Atlas-Web"),
    ({"metadata": {"cwd": "/srv/quill"}}, "quill"),
    ({"repository": {"name": "quill", "url": "https://example.com/x.git"}}, "quill"),
    ({"cwd": "/home/sofia/src/other", "repository": "acme/atlas-web"}, "atlas-web"),  # the repository first
    ({"cwd": "/home/sofia"}, None),  # a home folder is nobody's project
    ({"cwd": "/tmp"}, None),
    ({"cwd": "/"}, None),
    ({"cwd": 42}, None),
    ({}, None),
])
def test_the_project_is_derived_from_session_metadata(metadata, project):
    assert project_from_metadata(metadata) == project


def test_an_explicit_project_wins_over_the_metadata(tmp_path):
    file = tmp_path / "s.jsonl"
    file.write_text("".join(json.dumps(line) + "\n" for line in [
        {"session_id": "s", "role": "user", "content": "hi", "ts": SAID, "cwd": "/srv/orbit-api"},
        {"session_id": "s", "role": "user", "content": "there", "ts": SAID, "project": "atlas-web"},
    ]))
    parsed = parse_transcript(file)
    assert [m["project"] for m in parsed.messages] == ["atlas-web", "atlas-web"]


def test_an_openai_document_gives_its_metadata_to_every_message(tmp_path):
    file = tmp_path / "chat.json"
    file.write_text(json.dumps({"metadata": {"repository": "acme/quill"},
                                "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}))
    assert [m["project"] for m in parse_transcript(file).messages] == ["quill", "quill"]


@pytest.mark.parametrize("bad", ["", "   ", 42, ["atlas"], "-atlas", "atlas web", "atlas;rm", "x" * 129])
def test_a_malformed_project_names_the_file_and_the_line(tmp_path, bad):
    file = tmp_path / "s.jsonl"
    file.write_text("".join(json.dumps(line) + "\n" for line in [
        {"session_id": "s", "role": "user", "content": "fine", "ts": SAID},
        {"session_id": "s", "role": "user", "content": "not fine", "ts": SAID, "project": bad},
    ]))
    parsed = parse_transcript(file)
    assert len(parsed.messages) == 1
    assert [str(e) for e in parsed.errors] == [f'{file} line 2: "project": {_refusal(bad)}']


def _refusal(bad: object) -> str:
    with pytest.raises(ValueError) as caught:
        check_project(bad)
    return str(caught.value)


def test_flush_session_refuses_a_malformed_project(tmp_path):
    with pytest.raises(ValueError, match="not a project name"):
        MemoryClient(tmp_path / "data").flush_session("s", [{"role": "user", "content": "hi"}], project="a b")


# --- the scope rule ----------------------------------------------------------------------------


@pytest.mark.parametrize("category, content, project, expected", [
    ("process", "Always run make lint before committing", "atlas-web", ("project", "atlas-web")),
    ("incident", "The PDF worker ran out of memory", "atlas-web", ("project", "atlas-web")),
    ("health", "User is allergic to peanuts", "atlas-web", ("global", None)),
    ("relationships", "User's daughter's recital is Friday", "atlas-web", ("global", None)),
    ("preferences", "User wants the Atlas Web logo in dark blue", "atlas-web", ("project", "atlas-web")),
    ("process", "Always run make lint before committing", None, ("global", None)),
])
def test_a_fact_belongs_to_the_project_when_it_is_about_its_work_or_names_it(category, content, project, expected):
    assert scope_of(category, content, project, CONFIG) == expected


@pytest.mark.parametrize("content, named", [
    ("the atlas-web build is slow", True), ("atlas_web build", True), ("Atlas Web", True), ("atlasweb", True),
    ("atlas is a book of maps", False), ("the atlas-webhook fired", False),
])
def test_a_project_is_named_in_any_spelling(content, named):
    assert names_project(content, "acme/atlas-web") is named


def test_the_project_categories_are_config():
    only_work = CONFIG.replace(pipeline={"project_categories": ["work"]})
    assert scope_of("process", "Always run make lint", "atlas-web", only_work) == ("global", None)


# --- what may not mix ---------------------------------------------------------------------------


def _fact(fact_id: str, project: str | None) -> dict:
    return {"id": fact_id, "content": "Run make test before merging", "category": "process", "kind": "fact",
            "namespace": "default", "scope": "project" if project else "global", "project": project,
            "content_hash": "h", "created_at": datetime(2026, 3, 2, tzinfo=timezone.utc), "importance": 0.6,
            "confidence": 0.9, "tier": "standard", "source_trust": "trusted", "source_resource_ids": ["r1"],
            "tags": [], "entities": [], "source_turn_ids": [], "merged_from": [], "contradicts": []}


def test_two_projects_stating_the_same_rule_keep_an_item_each():
    facts = pl.DataFrame([_fact("a", "atlas-web"), _fact("b", "quill"), _fact("c", "quill")],
                         schema={**FACT_SCHEMA, "merged_from": pl.List(pl.String), "contradicts": pl.List(pl.String)})
    kept, merges = exact_dedup(facts)
    assert sorted(kept["project"].to_list()) == ["atlas-web", "quill"] and len(merges) == 1


@pytest.mark.parametrize("scope, project, problem", [
    ("project", None, "project scope without a project"),
    ("global", "atlas-web", "a project on a non-project scope"),
    ("project", "atlas web", "invalid project name"),
])
def test_the_facts_suite_refuses_a_scope_that_does_not_match_the_project(scope, project, problem):
    row = {**_fact("a", None), "scope": scope, "project": project}
    report = facts_report(pl.DataFrame([row], schema={**FACT_SCHEMA, "merged_from": pl.List(pl.String),
                                                     "contradicts": pl.List(pl.String)}),
                          CONFIG, resource_ids=["r1"])
    failed = {f.expectation: f for f in report.findings if not f.success}
    assert "project_matches_scope" in failed and failed["project_matches_scope"].severity == "ERROR"
