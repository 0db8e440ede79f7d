"""Issue 14: kinds that carry structure. A procedure keeps its steps, prerequisites and
warnings; a negative rule keeps trigger patterns and leads the block when the context
names them, whatever the query asks; the episode/note split follows the design's cues.

Real spaCy, the real MiniLM model, real Parquet and LanceDB, the pipeline's stage steps.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from memory_assets.lib.extraction import structure
from memory_assets.lib.extraction.kinds import memory_kinds, procedure_in, trigger_patterns
from retrieval import MemoryClient
from retrieval.agent.search import vectors_for
from retrieval.agent.triggers import NegativeRules
from retrieval.text import inflections as forms
from retrieval.config import load_config
from retrieval.paths import DataRoot
from retrieval.store import ItemStore

DEPLOY = ("Here's how we deploy the billing service: first run make test, then tag the release with git tag, "
          "then run ./deploy.sh prod. You need VPN access and the deploy key before you start. "
          "Careful: never deploy while a migration is running.")


# --- the pieces ------------------------------------------------------------------------

def test_a_sequenced_turn_is_a_procedure_with_its_steps_prerequisites_and_warnings():
    found = procedure_in(DEPLOY)
    assert found is not None and found.goal == "deploy the billing service"
    assert found.steps == ["run make test", "tag the release with git tag", "run ./deploy.sh prod"]
    assert found.prerequisites == ["You need VPN access and the deploy key before you start"]
    assert found.warnings == ["Careful: never deploy while a migration is running"]


@pytest.mark.parametrize("text", [
    "To restore a backup: 1. stop the API, 2. run pg_restore on the dump, 3. start the API again.",
    "Our onboarding checklist:\n- create the Okta account\n- add them to the on-call rota\n- order a laptop",
    "When you cut a release, start by bumping the version, then update CHANGELOG.md, and finally push the tag.",
])
def test_numbered_bulleted_and_sequenced_steps_are_read_in_order(text):
    found = procedure_in(text)
    assert found is not None and len(found.steps) == 3
    assert found.steps[0].split()[0] in ("stop", "create", "bump")


@pytest.mark.parametrize("text", [
    "First we went to the park, then we had lunch, then we watched a movie.",
    "First I need to finish the report, then I'll call you.",
    "I went to the store. First, I bought milk, then eggs.",
])
def test_a_story_told_in_order_is_not_a_procedure(text):
    assert procedure_in(text) is None


def test_a_negative_rule_triggers_on_the_action_and_what_it_acts_on():
    assert trigger_patterns("Aaron wants the assistant never to commit .env files to the repo.") == [".env", "commit", "repo"]
    patterns = trigger_patterns("Aaron wants the assistant not to deploy while a migration is running.")
    assert "deploy" in patterns and "migration" in patterns and "run" not in patterns
    assert "--force" in trigger_patterns("never use --force when pushing to main")
    assert {"committed", "committing", "commits"} <= forms("commit")


def test_episodes_are_what_happened_once_and_notes_what_stays_true():
    facts = ["Caroline went to a LGBTQ support group on May 7.", "Caroline prefers tea to coffee.",
             "Melanie painted a sunset last week.", "Jon is a dancer.", "Aaron wants the assistant to run make lint."]
    shapes = structure.read_all(facts, load_config(), ["Caroline", "Caroline", "Melanie", "Jon", "Aaron"])
    assert memory_kinds(facts, ["fact", "fact", "fact", "fact", "procedure"], shapes) == \
        ["episode", "note", "episode", "note", "note"]


def test_the_vectors_of_hits_the_graph_found_are_read_by_id(tmp_path):
    """Graph hits carry an id and no LanceDB row id: the conflict check reads them by id."""
    import lancedb

    db = lancedb.connect(tmp_path)
    table = db.create_table("items", data=[{"id": f"i{k}", "vector": [float(k), 1.0]} for k in range(4)])
    rowids = {r["id"]: r["_rowid"] for r in table.search().with_row_id(True).limit(10).to_list()}
    got = vectors_for(table, [rowids["i1"], None, None], ["i1", "i3", "i2"])
    assert np.allclose(got, [[1.0, 1.0], [3.0, 1.0], [2.0, 1.0]])


def test_rules_match_inflections_and_file_names_most_patterns_first():
    rules = NegativeRules()
    frame = pl.DataFrame([
        {"id": "r1", "kind": "negative", "status": "active", "trigger_patterns": [".env", "commit", "repo"]},
        {"id": "r2", "kind": "negative", "status": "active", "trigger_patterns": ["deploy", "migration"]},
        {"id": "r3", "kind": "negative", "status": "superseded", "trigger_patterns": ["commit"]},
        {"id": "f1", "kind": "fact", "status": "active", "trigger_patterns": ["commit"]},
    ])
    rules.load(1, frame)
    found = rules.matching("I'm committing the config changes, including .env, now", lambda row: True, 5)
    assert [(row["id"], patterns) for row, patterns in found] == [("r1", [".env", "commit"])]
    assert [r["id"] for r, _ in rules.matching("Deploying tonight after the migration", lambda row: True, 5)] == ["r2"]
    assert rules.matching("Deploying tonight", lambda row: row["id"] != "r2", 5) == []
    assert rules.matching("write the environment docs", lambda row: True, 5) == []  # ".env" is not "environment"


# --- through the pipeline ----------------------------------------------------------------

def _session(folder: Path, sid: str, namespace: str, day: str, lines: list[str]) -> Path:
    turns = []
    for i, line in enumerate(lines):
        turns += [{"session_id": sid, "namespace": namespace, "turn": 2 * i + 1, "role": "user", "speaker": "Aaron",
                   "content": line, "ts": f"{day}T09:{10 + 2 * i:02d}:00+00:00"},
                  {"session_id": sid, "namespace": namespace, "turn": 2 * i + 2, "role": "assistant",
                   "speaker": "assistant", "content": "Got it.", "ts": f"{day}T09:{11 + 2 * i:02d}:00+00:00"}]
    path = folder / f"{sid}.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def rules_root(tmp_path_factory) -> Path:
    from memory_assets.lib.extraction.session import choose_extractor, extract_session
    from memory_assets.lib.ingest.intake import ingest_paths, store_session
    from memory_assets.lib.items.staging import audit_staged, publish_staged, stage_items
    from retrieval.embeddings import Embedder

    tmp = tmp_path_factory.mktemp("kinds")
    folder, root = tmp / "in", tmp / "root"
    folder.mkdir()
    files = [
        _session(folder, "ops-1", "aaron", "2026-03-02", [
            DEPLOY,
            "Also, never commit .env files to the repo.",
            "I'm writing the Q2 roadmap for the payments team this week.",
            "I prefer short pull requests with one change each.",
        ]),
        _session(folder, "ops-2", "other", "2026-03-02", ["Never push directly to the main branch."]),
    ]
    ingest_paths(files, root, load_config())
    paths, config = DataRoot.resolve(root), load_config()
    impl, model = choose_extractor("offline", config), Embedder(config)
    when = datetime(2026, 3, 2, 10, tzinfo=timezone.utc)
    for sid in ("ops-1", "ops-2"):
        store_session(paths, sid, config, when)
        extract_session(paths, sid, impl, config, when)
    stage_items(paths, model, config, when)
    audit_staged(paths, config)
    publish_staged(paths, when)
    return root


def _items(root: Path) -> pl.DataFrame:
    return ItemStore(DataRoot.resolve(root)).items()


def test_a_procedure_is_stored_with_its_steps(rules_root):
    items = _items(rules_root).filter(pl.col("kind") == "procedure")
    row = items.filter(pl.col("content").str.contains("deploy the billing service")).row(0, named=True)
    assert row["steps"] == ["run make test", "tag the release with git tag", "run ./deploy.sh prod"]
    assert row["prerequisites"] and "VPN" in row["prerequisites"][0]
    assert row["warnings"] and "migration" in row["warnings"][0]
    assert row["memory_kind"] == "note" and row["status"] == "active"
    hits = MemoryClient(rules_root, namespace="aaron").search("How do we deploy the billing service?", 3)
    assert hits and hits[0].id == row["id"]


def test_a_negative_rule_leads_the_block_when_the_context_names_its_trigger(rules_root):
    client = MemoryClient(rules_root, namespace="aaron")
    rule = _items(rules_root).filter(pl.col("content").str.contains(".env", literal=True)).row(0, named=True)
    assert rule["kind"] == "negative" and "commit" in rule["trigger_patterns"]
    # The query is about the roadmap; the context says the agent is about to commit.
    block = client.inject([{"role": "user", "content": "Polish the Q2 roadmap doc and commit it when done."}],
                          record=False)
    lines = block.text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("~ "))
    assert ".env" in lines[first] and "[rule: commit]" in lines[first]
    assert any("roadmap" in line for line in lines[first + 1:])
    # Nothing names a trigger: no rule is put first (search may still find one on its merits).
    quiet = client.inject("Which team is the Q2 roadmap for?", record=False)
    assert "[rule:" not in quiet.text and "roadmap" in quiet.text.splitlines()[2]
    # Another namespace's rule is never triggered here.
    assert "main branch" not in client.inject("push the fix to main", record=False).text


# --- entity profiles ---------------------------------------------------------------------

def _round(root: Path, files: list[Path], sids: list[str], when: datetime) -> None:
    from memory_assets.lib.extraction.session import choose_extractor, extract_session
    from memory_assets.lib.ingest.intake import ingest_paths, store_session
    from memory_assets.lib.items.staging import audit_staged, publish_staged, stage_items
    from memory_assets.lib.summaries import update_summaries
    from retrieval.embeddings import Embedder

    ingest_paths(files, root, load_config())
    paths, config = DataRoot.resolve(root), load_config()
    impl, model = choose_extractor("offline", config), Embedder(config)
    for sid in sids:
        store_session(paths, sid, config, when)
        extract_session(paths, sid, impl, config, when)
    stage_items(paths, model, config, when)
    audit_staged(paths, config)
    publish_staged(paths, when)
    update_summaries(paths, model.embed, config, when)


def test_an_important_entity_gets_a_versioned_profile_that_answers_in_tier_1(tmp_path):
    folder, root = tmp_path / "in", tmp_path / "root"
    folder.mkdir()
    first = _session(folder, "p-1", "aaron", "2026-03-02", [
        "My sister Priya lives in Leeds.", "Priya works as a nurse at St James's hospital.",
        "Priya is allergic to peanuts.", "I use Neovim for all my Go work.",
    ])
    _round(root, [first], ["p-1"], datetime(2026, 3, 2, 10, tzinfo=timezone.utc))
    pages = sorted((root / "summaries" / "entities").glob("priya-*.md"))
    assert len(pages) == 1
    page = pages[0].read_text()
    assert page.startswith("# Priya") and "Leeds" in page and "nurse" in page and "peanuts" in page
    assert "Neovim" not in page

    client = MemoryClient(root, namespace="aaron")
    answer = client.inject("What do we know about Priya?", record=False)
    assert answer.tier == "profile"
    assert {"Leeds", "nurse", "peanuts"} <= {w for w in ("Leeds", "nurse", "peanuts") if w in answer.text}
    assert "Neovim" not in answer.text
    # A question about one thing of hers is not a question about her as a whole.
    assert client.inject("Who is Priya dating?", record=False).tier != "profile"
    # Another namespace does not see her.
    assert MemoryClient(root, namespace="someone-else").inject("What do we know about Priya?",
                                                               record=False).tier != "profile"

    later = _session(folder, "p-2", "aaron", "2026-04-20", ["Priya just adopted a greyhound called Biscuit."])
    _round(root, [later], ["p-2"], datetime(2026, 4, 20, 10, tzinfo=timezone.utc))
    assert "greyhound" in pages[0].read_text()
    archived = list((root / "summaries" / "archive").glob("priya-*.md"))
    assert len(archived) == 1 and archived[0].read_text() == page  # the earlier version, kept


# --- entity resolution: "my car" is the WRX when the session says so ---------------------------

def _graph_rows(facts: list[tuple[str, str, list[str]]], namespace: str = "aaron") -> pl.DataFrame:
    """Items as the graph gets them, with ``same_as`` read at extraction (``fields.same_as``)."""
    from memory_assets.lib.extraction.fields import same_as

    now = datetime(2026, 3, 1, tzinfo=timezone.utc)
    return pl.DataFrame([{
        "id": i, "namespace": namespace, "content": c, "entities": e, "same_as": same_as(c, e), "status": "active",
        "confidence": 0.9,
        "subject": None, "relation": None, "value": None, "created_at": now, "supersedes": None, "contradicts": [],
        "source_resource_ids": []} for i, c, e in facts])


def test_a_thing_someone_has_merges_into_the_name_the_session_gives_it(tmp_path):
    from memory_assets.lib.items.graph import build_graph
    from retrieval.agent.dual_search import GraphIndex

    config = load_config()
    now = datetime(2026, 3, 1, tzinfo=timezone.utc)
    rows = _graph_rows([
        ("i1", "Aaron's car is a 2019 Subaru WRX.", ["Aaron", "car", "Subaru WRX"]),
        ("i2", "Aaron's WRX oil change is due at 11,799 miles.", ["Aaron", "WRX", "oil change"]),
        ("i3", "Aaron's car needs new tires before winter.", ["Aaron", "car", "tire"]),
        ("i4", "Aaron's bike has a flat tyre.", ["Aaron", "bike", "tyre"]),
    ])
    vectors = np.ones((4, 4), dtype=np.float32) / 2.0
    assert rows["same_as"].to_list() == [["car = Subaru WRX"], [], [], []]  # read once, at extraction
    graph = build_graph(rows, vectors, None, config, now)
    wrx = graph.entities.filter(pl.col("name") == "Subaru WRX").row(0, named=True)
    assert set(wrx["aliases"]) == {"WRX", "car"} and wrx["facts"] == 3
    assert {(m["alias"], m["into"], m["reason"]) for m in graph.merges} >= {("car", "Subaru WRX", "stated"),
                                                                            ("WRX", "Subaru WRX", "short form")}
    graph.entities.write_parquet(tmp_path / "entities.parquet")
    graph.edges.write_parquet(tmp_path / "edges.parquet")
    index = GraphIndex(tmp_path / "entities.parquet", tmp_path / "edges.parquet")
    reached = [r["id"] for r in index.search("when is my car due for an oil change?", "aaron", config, 10)]
    assert "i2" in reached and "i4" not in reached  # "my car" reaches the WRX's facts, not the bike's

    # Two different things said to be "the car": nothing is merged.
    both = _graph_rows([("i1", "Aaron's car is a Subaru WRX.", ["Aaron", "car", "Subaru WRX"]),
                        ("i2", "Dana's car is a Tesla.", ["Dana", "car", "Tesla"])])
    unsure = build_graph(both, np.ones((2, 4), dtype=np.float32) / 2.0, None, config, now)
    assert not [m for m in unsure.merges if m["reason"] == "stated"]


# --- the answer's type ---------------------------------------------------------------------

def test_a_when_question_ranks_a_line_holding_a_time_above_an_equal_one_without():
    from retrieval import scoring
    from retrieval.agent import sufficiency

    config = load_config()
    question = "When is Jon planning to open his dance studio?"
    dated, undated = "Jon said: The official opening night is on June 20.", "Jon is still working on opening a dance studio."
    assert sufficiency.asked(question) == "time"
    assert sufficiency.answers(dated, "time", question) and not sufficiency.answers(undated, "time", question)
    plain = scoring.rank_score(config, 0.8, 0.5)
    assert scoring.rank_score(config, 0.8, 0.5, answer_match=True) == pytest.approx(plain * config.ranking.answer_match)
    assert config.ranking.answer_match > 1.0
    # Answer-type matching is for time and number questions only.
    assert sufficiency.asked("How many turtles does Nate have?") == "number"
    assert sufficiency.asked("What does Nate like?") == "open"


@pytest.mark.parametrize(("message", "name"), [
    ("What do we know about Priya?", "Priya"), ("Tell me about the WRX.", "WRX"), ("Who is Priya?", "Priya"),
    ("hey, what do you know about my sister Maya?", "sister Maya"), ("Who is Priya dating?", "Priya dating"),
    ("When did Priya move to Leeds?", None), ("Where does Bea live?", None),
])
def test_a_question_about_an_entity_as_a_whole_names_it(message, name):
    """What tier 1's profile path looks up; "Priya dating" then names no entity as a whole
    (``GraphIndex.named``), so a question about one thing of hers goes to search."""
    from retrieval.profiles import asked_about

    assert asked_about(message) == name


def test_a_night_re_embeds_only_the_pages_whose_text_or_model_changed(tmp_path):
    import lancedb

    from memory_assets.lib.summaries import update_summaries
    from retrieval.embeddings import Embedder

    folder, root = tmp_path / "in", tmp_path / "root"
    folder.mkdir()
    when = datetime(2026, 3, 2, 10, tzinfo=timezone.utc)
    first = _session(folder, "p-1", "aaron", "2026-03-02", [
        "My sister Priya lives in Leeds.", "Priya works as a nurse at St James's hospital.",
        "Priya is allergic to peanuts.", "I use Neovim for all my Go work.",
    ])
    _round(root, [first], ["p-1"], when)
    paths, config = DataRoot.resolve(root), load_config()
    model = Embedder(config)
    asked: list[str] = []

    def counting(texts):
        asked.extend(texts)
        return model.embed(texts)

    def pages() -> dict[str, list[float]]:
        rows = lancedb.connect(str(paths.lancedb)).open_table("summaries").to_arrow().to_pylist()
        return {r["content"]: r["vector"] for r in rows}

    update_summaries(paths, counting, config, when + timedelta(hours=1), model_id=model.model_id)
    texts = list(pages())
    assert len(texts) >= 2 and sorted(asked) == sorted(texts)  # the table had no model mark yet: all embedded
    asked.clear()
    update_summaries(paths, counting, config, when + timedelta(hours=2), model_id=model.model_id)
    assert asked == [] and list(pages()) == texts  # nothing changed: every vector kept
    held = pages()
    for text in texts:
        assert np.allclose(held[text], model.embed([text])[0], atol=1e-5)
    update_summaries(paths, counting, config, when + timedelta(hours=3), model_id="another-model")
    assert sorted(asked) == sorted(texts)  # another model: every page embedded again
