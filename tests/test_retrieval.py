"""The agent's side: tiered, decayed, trust-tagged injection over real LanceDB."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import dagster as dg
import lancedb
import polars as pl
import pytest

from memory_assets.lib.items import publish
from retrieval import ids
from retrieval.ids import content_hash
from memory_assets.lib.items.consolidation import facts_to_items
from memory_assets.cli.runner import materialize_pending
from retrieval import MemoryClient
from retrieval import published
from retrieval.agent.options import RetrievalOptions
from retrieval.agent.retrieve import rank
from retrieval.agent.rewrite import keyword_query, rewrite
from retrieval.agent.tokens import count_tokens
from retrieval.config import load_config
from retrieval.embeddings import Embedder
from retrieval.paths import DataRoot
from retrieval.schema import FACT_SCHEMA, INJECTION_END, INJECTION_START
from retrieval.store import ItemStore

NOW = datetime(2026, 10, 1, tzinfo=timezone.utc)


def _row(fid, content, *, category="vehicle", kind="fact", confidence=0.9, trust="trusted", status="active",
         days_old=3, namespace="default", tier="standard", contradicts=None):
    return {
        "id": fid, "content": content, "category": category, "kind": kind, "memory_kind": "note",
        "tags": [], "entities": [], "importance": 0.8 if trust == "trusted" else 0.4, "confidence": confidence,
        "strength": "explicit", "sentiment": "neutral", "tier": tier, "scope": "global", "namespace": namespace,
        "source_trust": trust, "provenance": "user_stated", "source_session": "s1",
        "source_resource_ids": [f"r-{fid}"], "source_turn_ids": [f"D1:{fid}"], "supersedes_hint": None,
        "content_hash": content_hash(content), "created_at": NOW - timedelta(days=days_old),
        "prompt_version": "test", "extractor": "offline", "_status": status, "_contradicts": contradicts or [],
    }


ROWS = [
    _row("wrx", "Aaron's WRX oil change is due at 11,799 miles"),
    _row("wrx-old", "Aaron's WRX oil change was due at 6,000 miles", status="superseded", days_old=200),
    _row("allergy", "Aaron is allergic to penicillin", category="health"),
    _row("phish", "Aaron's warranty renewal of $499 is authorised", trust="untrusted", category="vehicle"),
    _row("guess", "Aaron probably likes rally racing", confidence=0.25, category="hobbies"),
    _row("old", "Aaron rotated the WRX tires at 6,000 miles", days_old=400),
    _row("meet-a", "Aaron's standup meeting is at 9:00 on weekdays", category="work", contradicts=["meet-b"]),
    _row("meet-b", "Aaron's standup meeting is at 14:00 on weekdays", category="work", contradicts=["meet-a"],
         days_old=1),
    _row("other-ns", "Aaron's WRX is blue", namespace="agent-b"),
    *[_row(f"filler-{i}", f"Aaron noted vehicle detail number {i} about the WRX service history and parts")
      for i in range(12)],
]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """A data root with hand-made published items (the read side, without extraction)."""
    paths = DataRoot.resolve(tmp_path_factory.mktemp("retrieval") / "data")
    facts = pl.DataFrame([{k: v for k, v in r.items() if not k.startswith("_")} for r in ROWS], schema=FACT_SCHEMA)
    items = facts_to_items(facts, NOW).with_columns(
        status=pl.Series([r["_status"] for r in ROWS]),
        contradicts=pl.Series([r["_contradicts"] for r in ROWS], dtype=pl.List(pl.String)),
        embedding_model=pl.lit("local:all-MiniLM-L6-v2"),
    ).drop("supersedes_hint", "source_session")
    from retrieval.schema import ITEM_SCHEMA

    items = items.select(list(ITEM_SCHEMA))
    vectors = Embedder(load_config()).embed(items["content"].to_list())
    publish.publish(paths, publish.write_items(paths, items, vectors, NOW))
    return paths


def _client(paths, **options):
    return MemoryClient(paths.root, options=RetrievalOptions(**options) if options else None)


def test_block_has_the_header_and_one_line_per_item(root):
    injection = _client(root).inject("When is the WRX oil change due?", now=NOW, record=False)
    lines = injection.text.splitlines()
    assert lines[0] == INJECTION_START and lines[-1] == INJECTION_END
    assert lines[1] == "Known context from previous sessions:"
    short = ids.ShortIds(ItemStore(root).items()["id"].to_list()).short("wrx")
    assert lines[2] == f"~ [{short}] Aaron's WRX oil change is due at 11,799 miles (confidence: 0.9; age: 3d; vehicle)"
    assert len(lines) - 3 == len(injection.items) <= 10
    assert injection.tier == "items"


def test_superseded_items_are_never_injected_or_found(root):
    client = _client(root)
    for query in ("WRX oil change was due at 6,000 miles", "oil change 6,000"):
        assert "wrx-old" not in {h.id for h in client.search(query, k=20, now=NOW)}
        assert "wrx-old" not in {h.id for h in client.inject(query, now=NOW, record=False).items}


def test_untrusted_item_is_tagged(root):
    injection = _client(root).inject("warranty renewal $499", now=NOW, record=False)
    line = next(x for x in injection.text.splitlines() if "warranty" in x)
    assert line.endswith("[untrusted]")
    assert injection.flags["phish"] == ["[untrusted]"]


def test_conflicting_pair_is_flagged_on_both_sides_the_newer_first(root):
    injection = _client(root).inject("When is Aaron's standup meeting?", now=NOW, record=False)
    assert {"meet-a", "meet-b"} <= {h.id for h in injection.items}
    flags = sorted(f for h in ("meet-a", "meet-b") for f in injection.flags[h] if f.startswith("[conflict"))
    assert flags == ["[conflict]", "[conflict]"]
    assert [h.id for h in injection.items if h.id.startswith("meet-")] == ["meet-b", "meet-a"]


def _hit(item_id: str, confidence: float, contradicts=(), created_days_ago: int = 1):
    from retrieval.agent.search import Hit

    return Hit(id=item_id, content=item_id, category="personal", importance=0.5, confidence=confidence,
               source_trust="trusted", session_id="s", source_resource_ids=[], source_turn_ids=[],
               relevance=1.0, score=1.0,
               row={"contradicts": list(contradicts), "created_at": NOW - timedelta(days=created_days_ago)})


def test_the_higher_confidence_side_of_a_conflict_ranks_first_and_the_other_is_tagged():
    from retrieval.agent import trust

    hits = [_hit("birthday-12", 0.6, ["birthday-14"]), _hit("filler", 0.9), _hit("birthday-14", 0.9, ["birthday-12"])]
    pairs = trust.conflicts(hits, None, 0.8)
    ordered = trust.order(hits, pairs)
    assert [h.id for h in ordered] == ["birthday-14", "filler", "birthday-12"]
    flags = trust.flags(ordered, load_config(), NOW, pairs=pairs)
    assert flags["birthday-14"] == ["[conflict]"]
    assert flags["birthday-12"][:2] == ["[conflict: lower confidence]", "[uncertain]"]
    # On equal confidence both are plain conflicts, the later statement first (newest first).
    tie = [_hit("older", 0.9, ["newer"], created_days_ago=30), _hit("newer", 0.9, ["older"], created_days_ago=2)]
    tied = trust.conflicts(tie, None, 0.8)
    assert [h.id for h in trust.order(tie, tied)] == ["newer", "older"]
    assert trust.flags(tie, load_config(), NOW, pairs=tied) == {"older": ["[conflict]"], "newer": ["[conflict]"]}


def test_low_confidence_is_uncertain_and_old_is_stale(root):
    client = _client(root)
    guess = client.inject("does Aaron like rally racing", now=NOW, record=False)
    assert "[uncertain]" in guess.flags["guess"]
    old = client.inject("when were the WRX tires rotated", now=NOW, record=False)
    assert "[stale]" in old.flags["old"]


def test_hits_carry_every_attribute_and_their_stored_vectors(root):
    """Search reads ids from LanceDB and attributes from the published snapshot: a hit
    has the same row as the Parquet snapshot, and the vectors used for conflict checks
    are the stored ones."""
    client = _client(root)
    hits, read_vectors = rank(client.stores, client.view, client.config, client.options,
                              "When is the WRX oil change due?", 5, NOW)
    snapshot = {r["id"]: r for r in ItemStore(root).items().to_dicts()}
    vectors = read_vectors(list(range(len(hits))))
    assert hits and vectors.shape == (len(hits), 384)
    assert abs(read_vectors([2, 0]) - vectors[[2, 0]]).max() < 1e-6  # any positions, in the order asked
    for hit in hits:
        assert {k: v for k, v in hit.row.items() if not k.startswith("_")} == snapshot[hit.id]
    stored = lancedb.connect(str(root.lancedb)).open_table("items").to_arrow()
    by_id = dict(zip(stored.column("id").to_pylist(), stored.column("vector").to_pylist()))
    assert all(abs(vectors[i] - by_id[h.id]).max() < 1e-6 for i, h in enumerate(hits))


def test_items_missing_from_the_snapshot_are_read_from_lancedb(root, tmp_path, monkeypatch):
    """Ids the in-memory snapshot does not hold come from the Lance table, with every attribute."""
    import shutil

    copy = DataRoot.resolve(tmp_path / "data")
    shutil.copytree(root.root, copy.root)
    stale = ItemStore(copy).items().filter(~pl.col("id").str.starts_with("wrx"))
    stale.write_parquet(published.items_file(copy))
    hits = _client(copy).search("When is the WRX oil change due?", k=3, now=NOW)
    assert hits[0].id == "wrx" and hits[0].row["category"] == "vehicle"
    assert hits[0].source_turn_ids == ["D1:wrx"] and hits[0].row["status"] == "active"


def _without_read_index(root, tmp_path):
    """A copy of ``root`` whose pointer names no read index: a version written before them."""
    import shutil

    copy = DataRoot.resolve(tmp_path / "no-index")
    shutil.copytree(root.root, copy.root)
    pointer = json.loads(published.pointer_path(copy).read_text())
    pointer["index"] = None
    published.pointer_path(copy).write_text(json.dumps(pointer))
    return copy


def test_a_filter_that_empties_the_candidates_asks_lancedb_to_filter(root, tmp_path, monkeypatch):
    """Without a read index, candidates are fetched unfiltered (2 × candidates) from LanceDB
    and filtered from the snapshot; when the filter leaves too few, the query runs again
    with the filter in LanceDB."""
    from retrieval.agent import candidates as module

    root = _without_read_index(root, tmp_path)
    config = tmp_path / "memory.toml"
    config.write_text("[ranking]\ncandidates = 2\n")
    calls = []
    real, real_nearest = module.vector_list, module.nearest

    async def nearest(*a, **kw):  # the first, unfiltered query (LanceDB's async API)
        calls.append(None)
        return await real_nearest(*a, **kw)

    monkeypatch.setattr(module, "nearest", nearest)
    monkeypatch.setattr(module, "vector_list", lambda *a, **kw: (calls.append(kw["where"]), real(*a, **kw))[1])
    client = MemoryClient(root.root, config_path=str(config), namespace="agent-b")
    assert client.stores.read_index() is None
    hits = client.search("WRX oil change service history", k=2, now=NOW)
    assert [h.id for h in hits] == ["other-ns"]
    assert calls == [None, "status IN ('active', 'archived', 'cold') AND namespace IN ('agent-b')"]
    everyone = MemoryClient(root.root, config_path=str(config)).search("WRX oil change", k=2, now=NOW)
    assert "wrx" in {h.id for h in everyone} and "other-ns" not in {h.id for h in everyone}


def test_a_filter_that_empties_the_candidates_filters_the_read_index_in_process(root, tmp_path, monkeypatch):
    """With the version's read index, the same shortfall is searched again in process: the
    rows LanceDB's predicate holds (evaluated by polars on the snapshot) as a mask, and
    LanceDB is never opened."""
    from retrieval.read_index import ReadIndex

    config = tmp_path / "memory.toml"
    config.write_text("[ranking]\ncandidates = 2\n")
    masks = []
    real = ReadIndex.nearest

    def nearest(self, vector, k, mask=None):
        masks.append(None if mask is None else int(mask.sum()))
        return real(self, vector, k, mask)

    monkeypatch.setattr(ReadIndex, "nearest", nearest)
    client = MemoryClient(root.root, config_path=str(config), namespace="agent-b")
    monkeypatch.setattr(client.stores, "table", lambda *a, **kw: pytest.fail("LanceDB was opened"))
    hits = client.search("WRX oil change service history", k=2, now=NOW)
    assert [h.id for h in hits] == ["other-ns"]
    assert masks == [None, 1]  # unfiltered, then only agent-b's one recallable row
    everyone = MemoryClient(root.root, config_path=str(config)).search("WRX oil change", k=2, now=NOW)
    assert "wrx" in {h.id for h in everyone} and "other-ns" not in {h.id for h in everyone}


def test_an_injected_event_is_written_without_fsync_and_feedback_with_it(root, tmp_path, monkeypatch):
    import os
    import shutil

    copy = DataRoot.resolve(tmp_path / "data")
    shutil.copytree(root.root, copy.root)
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    client = _client(copy)
    injection = client.inject("When is the WRX oil change due?", now=NOW)
    assert injection.items and not synced
    client.reinforce(injection.items[0].id, now=NOW)
    assert len(synced) == 1 and len(list(copy.events.glob("*.json"))) == 2


def test_a_new_pointer_is_reloaded(tmp_path):
    """The rows follow the publish pointer: a new generation naming another file is loaded,
    a pointer gone (nothing published) empties them."""
    from retrieval.store import PublishedRows

    paths = DataRoot.resolve(tmp_path / "data")
    versions = paths.items_dir / "versions"
    versions.mkdir(parents=True)

    def publish(generation: int, frame: pl.DataFrame) -> None:
        file = versions / f"items-{generation}.parquet"
        frame.write_parquet(file)
        pointer = published.Pointer(generation=generation, version=generation, items=paths.relative(file))
        tmp = published.pointer_path(paths).with_suffix(".tmp")
        tmp.write_text(json.dumps(pointer.to_json()))
        tmp.replace(published.pointer_path(paths))

    publish(1, pl.DataFrame({"id": ["a", "b"], "content": ["one", "two"]}))
    rows = PublishedRows(paths)
    rows.refresh()
    assert rows.rows(["b", "zz"]) == {"b": {"id": "b", "content": "two"}}
    publish(2, pl.DataFrame({"id": ["b"], "content": ["two, reworded"]}))
    assert rows.refresh().generation == 2
    assert rows.rows(["a", "b"]) == {"b": {"id": "b", "content": "two, reworded"}}
    published.pointer_path(paths).unlink()
    rows.refresh()
    assert rows.rows(["b"]) == {}


def test_token_budget_is_a_hard_limit(root):
    injection = _client(root).inject("WRX service history parts vehicle detail", token_budget=90, now=NOW, record=False)
    assert 0 < injection.tokens <= 90 and count_tokens(injection.text) == injection.tokens
    assert len(injection.items) < 10


def test_hard_caps_ten_and_five_in_budget_aware_mode(root):
    query = "WRX service history parts vehicle detail"
    assert len(_client(root).inject(query, token_budget=4000, now=NOW, record=False).items) == 10
    frugal = _client(root).inject(query, token_budget=4000, now=NOW, budget_aware=True, record=False)
    assert len(frugal.items) == 5


def test_namespace_filters_items(root):
    mine = MemoryClient(root.root, namespace="default").search("what colour is the WRX", k=20, now=NOW)
    theirs = MemoryClient(root.root, namespace="agent-b").search("what colour is the WRX", k=20, now=NOW)
    assert "other-ns" not in {h.id for h in mine}
    assert {h.id for h in theirs} == {"other-ns"}


def test_raw_user_message_is_rewritten_before_search(root):
    context = [{"role": "user", "content": "I'm taking the WRX in on Saturday."},
               {"role": "user", "content": "Hey, do you remember when the oil change is due?"}]
    injection = _client(root).inject(context, now=NOW, record=False)
    # Embedded: the question as a sentence, without the greeting and the ask to remember,
    # with the earlier message's names; full text: the content words.
    assert injection.query == "when the oil change is due WRX Saturday?"
    assert injection.terms == keyword_query(context, load_config().injection.header) == "oil change due WRX Saturday"
    assert injection.items[0].id == "wrx"


def test_the_injected_block_never_reaches_the_query():
    block = f"{INJECTION_START}\nKnown context from previous sessions:\n~ Aaron is allergic to penicillin\n{INJECTION_END}"
    query = rewrite([{"content": block + "\nWhat was the WRX oil change about?"}], header=load_config().injection.header)
    assert "penicillin" not in query.text + query.terms
    assert query.text == "What was the WRX oil change about?" and query.terms == "WRX oil change"


def test_injection_writes_an_injected_event_that_is_not_a_reference(root, tmp_path):
    client = _client(root)
    injection = client.inject("WRX oil change", now=NOW, session_id="s9")
    files = sorted(root.events.glob("*.json"))
    event = json.loads(files[-1].read_text())
    assert event["type"] == "injected" and event["session_id"] == "s9"
    assert event["item_ids"] == [h.id for h in injection.items]
    for f in files:
        f.unlink()


@pytest.mark.parametrize("context", [
    "WRX oil change? my GitLab deploy token is gldt-riGp_58WAm_dX3a5IDnOdcdb",
    [{"role": "user", "content": "WRX oil change? my GitLab deploy token is gldt-riGp_58WAm_dX3a5IDnOdcdb"}],
])
def test_a_secret_in_the_context_is_redacted_before_the_query_is_rewritten(root, context):
    # The rewrite splits "a_b" into "a b", which no credential rule matches any more: the
    # context has to be redacted where it enters, not the query on its way to the log.
    client = _client(root)
    injection = client.inject(context, now=NOW, session_id="s-secret")
    files = sorted(root.events.glob("*.json"))
    logged = "".join(f.read_text() for f in files)
    for f in files:
        f.unlink()
    assert injection.items and "injected" in logged  # the event was written
    for part in ("riGp", "58WAm", "dX3a5IDnOdcdb"):
        assert part not in injection.query + injection.terms
        assert part not in logged


def test_record_response_writes_echo_and_fizzle(root):
    client = _client(root)
    injection = client.inject("WRX oil change due miles", now=NOW, record=False)
    used = client.record_response(injection, "Your oil change is due at 11,799 miles, about 500 miles from now.", now=NOW)
    assert used["wrx"] is True and not all(used.values())
    events = [json.loads(f.read_text()) for f in sorted(root.events.glob("*.json"))]
    by_type = {e["type"]: e["item_ids"] for e in events}
    assert "wrx" in by_type["referenced"] and "wrx" not in by_type["ignored"]
    for f in root.events.glob("*.json"):
        f.unlink()


def test_unknown_item_id_gets_a_clear_error(root):
    with pytest.raises(ItemStore.DoesNotExist, match="no published item with id 'nope'"):
        _client(root).reinforce("nope")


def _with_summaries(root, tmp_path, ids):
    """A copy of ``root`` whose summaries the pipeline wrote from the items ``ids``."""
    import shutil

    from memory_assets.lib import summaries

    paths = DataRoot.resolve(tmp_path / "data")
    shutil.copytree(root.root, paths.root)
    items = ItemStore(paths).items().filter(pl.col("id").is_in(ids))
    frame = summaries.summaries_frame(summaries.rebuild(items, load_config(), NOW))
    publish.publish_table(paths, "summaries", frame, Embedder(load_config()).embed(frame["content"].to_list()))
    return paths


def test_tier_one_answers_from_summaries_when_they_suffice(root, tmp_path):
    paths = _with_summaries(root, tmp_path, ["wrx", "old", "allergy"])
    client = MemoryClient(paths.root)
    answered = client.inject("WRX oil change due miles", now=NOW, record=False)
    assert answered.tier == "summaries" and "11,799" in answered.text
    fallback = client.inject("standup meeting time", now=NOW, record=False)
    assert fallback.tier == "items"
    without = MemoryClient(paths.root, options=RetrievalOptions(tiers=False)).inject("WRX oil change due miles", now=NOW, record=False)
    assert without.tier == "items"


def test_a_summary_line_carries_the_items_it_cites_and_their_source_turns(root, tmp_path):
    paths = _with_summaries(root, tmp_path, ["wrx", "old", "other-ns"])
    answered = MemoryClient(paths.root).inject("WRX oil change due miles", now=NOW, record=False)
    assert answered.tier == "summaries"
    oil = next(h for h in answered.items if "11,799" in h.content)
    assert oil.row["item_ids"] == ["wrx"] and oil.source_turn_ids == ["D1:wrx"]
    assert oil.source_resource_ids == ["r-wrx"]
    # The summary holds every namespace's items; a line is served only to who may see its item.
    everyone = MemoryClient(paths.root, namespace="*").inject("Aaron's blue WRX", now=NOW, record=False)
    assert everyone.tier == "summaries" and everyone.items[0].row["item_ids"] == ["other-ns"]
    scoped = MemoryClient(paths.root, namespace="default").inject("Aaron's blue WRX", now=NOW, record=False)
    assert "blue" not in scoped.text


def test_tier_one_needs_one_summary_line_that_states_the_query(root, tmp_path):
    """Terms spread over a page are not an answer: the name is on every line."""
    paths = _with_summaries(root, tmp_path, ["wrx", "old", "allergy"])
    question = "Aaron's WRX oil and tires, and his penicillin allergy"  # each line holds half the terms
    assert MemoryClient(paths.root).inject(question, now=NOW, record=False).tier == "items"
    lenient = tmp_path / "lenient.toml"
    lenient.write_text("[injection]\nsummary_coverage = 0.3\n")
    assert MemoryClient(paths.root, config_path=str(lenient)).inject(question, now=NOW, record=False).tier == "summaries"


def test_a_question_is_answered_by_tier_one_only_with_an_answer_of_the_kind_asked(root, tmp_path):
    paths = _with_summaries(root, tmp_path, ["wrx", "old", "allergy"])
    client = MemoryClient(paths.root)
    counted = client.inject("How many miles until the WRX oil change is due?", now=NOW, record=False)
    assert counted.tier == "summaries" and "11,799" in counted.text
    # Every word of it is on the oil-change line, but the line does not say why.
    assert client.inject("Why is the WRX oil change due at 11,799 miles?", now=NOW, record=False).tier == "items"


@pytest.mark.parametrize(("message", "line", "kind", "answered"), [
    ("When did Jon start the gym?", "Jon started hitting the gym last week", "time", True),
    ("When did Jon start the gym?", "Jon started hitting the gym", "time", False),
    ("How many kids does Ana have?", "Ana has three kids", "number", True),
    ("How many kids does Ana have?", "Ana has kids", "number", False),
    ("Who is Jon's mentor?", "Gina is Jon's mentor", "name", True),
    ("Who is Jon's mentor?", "Jon has a mentor", "name", False),
    ("Why did John run for office again?", "John decided to run for office again", "open", False),
    ("Hey. I'm taking the WRX in on Saturday.", "Aaron's WRX oil change is due at 11,799 miles", None, True),
])
def test_sufficiency_wants_the_kind_of_answer_a_question_asks(message, line, kind, answered):
    from retrieval.agent import sufficiency

    assert sufficiency.asked(message) == kind
    assert sufficiency.answers(line, kind, message) is answered


def test_each_further_item_from_an_already_ranked_turn_counts_half():

    from retrieval import scoring

    config = load_config()
    scored = [(1.0, "a1"), (0.9, "a2"), (0.8, "b"), (0.3, "a3"), (0.2, "none")]
    turns = [["A"], ["A", "C"], ["B"], ["A"], []]
    picked = scoring.diversify(config, scored, turns, 4)
    # a2 shares turn A with a1: 0.9 × 0.5 = 0.45 falls below b; a3 repeats A twice: 0.3 × 0.25.
    assert picked == [(1.0, "a1"), (0.8, "b"), (0.45, "a2"), (0.2, "none")]
    assert scoring.diversify(config, scored, turns, 2) == picked[:2]
    neutral = config.replace(ranking={"same_source_penalty": 1.0})
    assert scoring.diversify(neutral, scored, turns, 5) == scored


def test_feedback_is_folded_by_the_pipeline(tmp_path, samples):
    """reinforce, demote, update, forget, injected: appended by the agent, folded by a run."""
    from memory_assets.lib.ingest.intake import ingest_paths

    paths = DataRoot.resolve(tmp_path / "data")
    ingest_paths([samples / "personal-assistant.jsonl"], paths.root, load_config())
    with dg.instance_for_test() as instance:
        materialize_pending(paths, extractor="offline", instance=instance)
        client = MemoryClient(paths.root)
        items = ItemStore(paths).items()
        allergy = items.filter(pl.col("content").str.contains("penicillin"))["id"][0]
        wrx = items.filter(pl.col("content").str.contains("2019 Subaru WRX"))["id"][0]
        bouldering = items.filter(pl.col("content").str.contains("(?i)boulder"))["id"][0]
        client.inject("penicillin allergy", session_id="s")
        client.reinforce(allergy)
        client.demote(wrx)
        client.update(bouldering, "Aaron boulders at Momentum three times a week", ["hobby"])
        client.forget(wrx)
        materialize_pending(paths, extractor="offline", instance=instance, force_items=True)
    after = {r["id"]: r for r in ItemStore(paths).items().to_dicts()}
    assert after[allergy]["reference_count"] == 1 and after[allergy]["reinforcement"] == 3.0
    assert after[allergy]["injected_count"] >= 1 and after[allergy]["last_referenced_at"] is not None
    assert after[wrx]["status"] == "purged" and after[wrx]["reinforcement"] == -1.0
    assert after[bouldering]["content"] == "Aaron boulders at Momentum three times a week"
    assert after[bouldering]["provenance"] == "user_corrected"
    assert not list(paths.events.glob("*.json"))  # folded into the event log
    found = MemoryClient(paths.root).search("how often does Aaron boulder at Momentum", k=3)
    assert bouldering in [h.id for h in found]
    assert next(h for h in found if h.id == bouldering).content.endswith("three times a week")
    assert wrx not in {h.id for h in MemoryClient(paths.root).search("Subaru WRX 2019", k=20)}


def test_an_item_about_the_person_a_query_names_ranks_first(tmp_path):

    from retrieval import scoring

    assert scoring.subject_of("Nate's turtles love the sun.") == "nate"
    assert scoring.subject_of("Gina said: The studio looks amazing.") == "gina"
    assert scoring.names_in(["Nate", "turtles", "Joanna"]) == {"nate", "joanna"}
    config = load_config()
    assert scoring.rank_score(config, 0.8, 0.5, subject_match=True) == pytest.approx(
        scoring.rank_score(config, 0.8, 0.5) * config.ranking.subject_match)

    # Two facts that both name Priti and Daniel: the one about Priti answers "what did Priti…".
    rows = [_row("daniel", "Daniel signed up for the ceramics class that Priti recommended", category="hobbies"),
            _row("priti", "Priti signed up for the ceramics class that Daniel recommended", category="hobbies")]
    paths = DataRoot.resolve(tmp_path / "data")
    facts = pl.DataFrame([{k: v for k, v in r.items() if not k.startswith("_")} for r in rows], schema=FACT_SCHEMA)
    from retrieval.schema import ITEM_SCHEMA

    items = facts_to_items(facts, NOW).select(list(ITEM_SCHEMA))
    publish.publish(paths, publish.write_items(paths, items, Embedder(load_config()).embed(items["content"].to_list()), NOW))
    client = MemoryClient(paths.root)
    order = {}
    for name in ("Priti", "Daniel"):
        order[name] = [h.id for h in client.search(f"Which class did {name} sign up for?", k=2, now=NOW)]
    assert order == {"Priti": ["priti", "daniel"], "Daniel": ["daniel", "priti"]}
    # The modifier lifts exactly the item whose subject the query names, by its factor.
    def scores() -> dict[str, float]:
        return {h.id: h.score for h in client.search("Which class did Priti sign up for?", k=2, now=NOW)}

    boosted = scores()
    client.config = client.config.replace(ranking={"subject_match": 1.0})
    plain = scores()
    assert boosted["priti"] / boosted["daniel"] == pytest.approx(config.ranking.subject_match * plain["priti"] / plain["daniel"])


def test_a_conflict_check_reads_only_the_vectors_of_pairs_that_disagree():
    import numpy as np

    from memory_assets.lib.extraction.fields import said_fields
    from retrieval.agent import trust
    from retrieval.agent.search import to_hit

    def hit(fid, content):  # a published row: its numbers and polarity as extraction read them
        return to_hit({"id": fid, "content": content, "category": "vehicle", "importance": 0.8, "confidence": 0.9,
                       "source_trust": "trusted", "session_id": "s1", "contradicts": [], **said_fields(content)},
                      1.0, 1.0)

    hits = [hit("a", "The WRX oil change is due at 11,799 miles"), hit("b", "Aaron likes rally racing"),
            hit("c", "The WRX oil change is due at 6,000 miles"), hit("d", "Aaron walks the dog daily")]
    vectors = np.eye(4, dtype=np.float32)
    vectors[2] = vectors[0]  # a and c: the same statement with another number
    asked: list[list[int]] = []

    def read(positions: list[int]) -> np.ndarray:
        asked.append(positions)
        return vectors[positions]

    assert trust.conflicts(hits, read, 0.8) == {("a", "c")}
    assert asked == [[0, 2]]  # b and d disagree with nobody: their vectors are never read
    asked.clear()
    assert trust.conflicts([hits[1], hits[3]], read, 0.8) == set() and asked == []
    assert trust.conflicts(hits, vectors, 0.8) == {("a", "c")}  # an aligned array works too


def test_row_ids_name_the_ids_they_hold_and_none_for_others():
    import numpy as np
    import pyarrow as pa

    from retrieval.agent.search import RowIds

    held = RowIds(np.asarray([3, 7, 4294967296], dtype=np.uint64), pa.array(["a", "b", "c"]))
    assert held.lookup([7, 4, 4294967296, 99, 3]) == ["b", None, "c", None, "a"]
    assert held.lookup([]) == []
    assert RowIds(np.asarray([], dtype=np.uint64), pa.array([], pa.string())).lookup([1]) == [None]


def test_the_async_lists_are_the_sync_apis_lists(root):
    """The read path's vector and full-text lists (LanceDB's async API on the calling
    thread's loop, ids from the row id map) hold what the sync API's hold: the same
    ids, row ids and scores, in the same order."""
    from retrieval.agent.search import RowIds, async_table, fts_list, matching, nearest, run, vector_list

    table = ItemStore(root).table()
    inner = async_table(table)
    assert inner is not None
    row_ids = run(RowIds.read(inner))
    assert len(row_ids.row_ids) == table.count_rows()
    embedder = Embedder(load_config())
    for query in ("When is the WRX oil change due?", "Where does Arjun work?", "parking garage"):
        vector = embedder.embed_one(query)
        sync = vector_list(table, vector, limit=6, where=None)
        got = run(nearest(inner, vector, limit=6, row_ids=row_ids))
        assert [(r["id"], r["_rowid"]) for r in got] == [(r["id"], r["_rowid"]) for r in sync]
        assert [round(r["_distance"], 5) for r in got] == [round(r["_distance"], 5) for r in sync]
        words = run(matching(inner, query, limit=6, row_ids=row_ids))
        assert [(r["id"], round(r["_score"], 4)) for r in words] == \
            [(r["id"], round(r["_score"], 4)) for r in fts_list(table, query, limit=6, where=None)]
    assert run(matching(inner, "?!", limit=6, row_ids=row_ids)) == []


def test_run_inside_a_running_event_loop_uses_lancedbs_loop(root):
    """An agent calling from async code (a loop already running on its thread) is served
    on LanceDB's background loop instead of re-entering its own."""
    import asyncio

    from retrieval.agent.search import async_table, run

    inner = async_table(ItemStore(root).table())

    async def agent():
        return run(inner.count_rows())

    assert asyncio.run(agent()) == ItemStore(root).table().count_rows()


def test_a_blocks_token_count_is_its_lines_counts_summed():
    """``count_lines`` adds each line's count instead of tokenizing the block again: equal
    to tokenizing the joined text, for lines of words, punctuation, digits, accents,
    CJK, emoji, control characters and stray whitespace."""
    from retrieval.agent.tokens import count_lines

    lines = [INJECTION_START, "Known context from previous sessions:",
             "~ [m:4821] Aaron's WRX oil change is due at 11,799 miles (confidence: 0.9; age: 3d; vehicle)",
             "~ [m:17] Ünïcödé café — naïve résumé, 記憶 and 🚀 at 02:30 UTC [untrusted]",
             "  leading and trailing spaces\t", "", "tab\tinside and a bell\x07 and a-b_c/d.e",
             "didn't can't O'Brien's state-of-the-art x86_64 v2.3.1-rc1", INJECTION_END]
    for n in range(1, len(lines) + 1):
        assert count_lines(lines[:n]) == count_tokens("\n".join(lines[:n]))


def test_candidate_rows_leave_the_snapshot_only_until_a_list_is_full(root, tmp_path, monkeypatch):
    """Each list keeps its ``limit`` best visible rows in their order, as filtering every
    fetched row would; the rows converted are the first ``limit`` of each list and then
    only as many more as the filter dropped (agent-b's item and the superseded one)."""
    from retrieval.agent import candidates as module
    from retrieval.store import PublishedRows

    config = tmp_path / "memory.toml"
    config.write_text("[ranking]\ncandidates = 3\n")
    client = MemoryClient(root.root, config_path=str(config), namespace="default")
    converted = []
    real_rows = PublishedRows.rows
    monkeypatch.setattr(PublishedRows, "rows", lambda self, ids: (converted.append(list(ids)), real_rows(self, ids))[1])
    seen = {}
    real_lists = module._indexed

    def lists(*a, **kw):  # the unfiltered lists from the version's read index
        found = real_lists(*a, **kw)
        if not seen:
            seen.update(found)
        return found

    monkeypatch.setattr(module, "_indexed", lists)
    query = "WRX oil change was due at 6,000 miles, Aaron's WRX is blue"
    out = module.candidates(client.stores, client.view, client.options, query, 3)
    snapshot = {r["id"]: r for r in ItemStore(root).items().to_dicts()}
    for name in ("vector", "fts"):
        expected = [r["id"] for r in seen[name] if client.view.visible(snapshot[r["id"]], module.recallable_for(query))]
        assert [r["id"] for r in out[name]] == expected[:3]
        assert all(r["status"] == "active" and r["namespace"] == "default" for r in out[name])
    dropped = {"wrx-old", "other-ns"} & {r["id"] for name in ("vector", "fts") for r in seen[name][:3]}
    assert dropped  # the query reaches a row the filter drops, so a second round runs
    assert len(converted) >= 2 and all(converted)
    assert len({i for ids in converted for i in ids}) == sum(len(ids) for ids in converted)  # each row once
    fetched = {r["id"] for name in ("vector", "fts") for r in seen[name]}
    assert len({i for ids in converted for i in ids}) < len(fetched)


def test_the_topic_of_a_question_is_what_it_asks_besides_the_people_it_names():
    from retrieval.agent.retrieve import topic_of

    assert topic_of("coffee Aaron", frozenset({"aaron"})) == ("coff",)
    assert topic_of("Aaron July", frozenset({"aaron"})) == ("july",)  # "July" is no one
    assert topic_of("Aaron manager", frozenset({"aaron"}), {"manager": "reports_to"}) == (
        "mana", "repo")  # and the relation it is stored as
    assert topic_of("attributes describe Aaron", frozenset({"aaron"})) is None
    assert topic_of("oil change due", frozenset({"aaron"})) is None


def _root_with(tmp_path, rows) -> DataRoot:
    from retrieval.schema import ITEM_SCHEMA

    paths = DataRoot.resolve(tmp_path / "data")
    facts = pl.DataFrame([{k: v for k, v in r.items() if not k.startswith("_")} for r in rows], schema=FACT_SCHEMA)
    items = facts_to_items(facts, NOW).with_columns(status=pl.Series([r["_status"] for r in rows]),
                                                    embedding_model=pl.lit("local:all-MiniLM-L6-v2")).select(list(ITEM_SCHEMA))
    publish.publish(paths, publish.write_items(paths, items, Embedder(load_config()).embed(items["content"].to_list()), NOW))
    return paths


def test_an_archived_line_that_answers_outranks_active_lines_that_do_not(tmp_path):
    paths = _root_with(tmp_path, [*ROWS, _row("coffee", "Aaron's coffee order is a flat white with oat milk",
                                             category="preferences", status="archived", days_old=200)])
    injection = MemoryClient(paths.root).inject("What coffee does Aaron like?", now=NOW, record=False)
    assert injection.items[0].id == "coffee" and "[archived]" in injection.flags["coffee"]
    # Without a question naming its topic, an archived line still waits for a free place.
    assert "coffee" not in {h.id for h in MemoryClient(paths.root).inject(
        "When is Aaron's WRX service due?", now=NOW, record=False).items}


def test_a_later_stated_change_and_an_earlier_fact_about_the_same_person_are_a_conflict():
    """When the pipeline left both standing, a change stated later about someone and an earlier
    session's fact about them are served marked, both: by fields first, then by how alike."""
    from datetime import datetime, timezone

    import numpy as np

    from retrieval.agent import trust
    from retrieval.agent.search import to_hit

    def hit(fid, content, **row):
        base = {"id": fid, "content": content, "category": "work", "importance": 0.8, "confidence": 0.9,
                "source_trust": "trusted", "contradicts": [], "states_change": False, "tentative": False,
                "numbers": [], "denies": False, "entities": [], "session_id": "s1",
                "created_at": datetime(2026, 1, 5, tzinfo=timezone.utc)}
        return to_hit({**base, **row}, 1.0, 1.0)

    later = datetime(2026, 3, 1, tzinfo=timezone.utc)
    old = hit("a", "Gmail is Dmitri's main email.", subject_key="gmail", entities=["Dmitri", "Gmail"])
    new = hit("b", "Dmitri's mail lives in Proton now.", subject_key="dmitri's mail", states_change=True,
              session_id="s2", created_at=later)
    other = hit("c", "Lena's mail lives in Proton now.", subject_key="lena's mail", states_change=True,
                session_id="s2", created_at=later)
    same_session = hit("d", "Dmitri moved his mail to Proton.", subject_key="dmitri", states_change=True,
                       created_at=later)
    guess = hit("e", "Dmitri might move to Proton.", subject_key="dmitri", states_change=True, tentative=True,
                session_id="s2", created_at=later)
    assert trust.replaces(old.row, new.row) and not trust.replaces(new.row, old.row)  # the later one replaces
    assert not trust.replaces(old.row, other.row)  # about someone else
    assert not trust.replaces(old.row, same_session.row)  # said in the same session: the pipeline's to settle
    assert not trust.replaces(old.row, guess.row)  # a guess replaces nothing
    event = hit("f", "Dmitri went to a Proton meetup in Zurich on May 3.", subject_key="dmitri", states_change=True,
                session_id="s2", created_at=later, memory_kind="episode")
    assert not trust.replaces(old.row, event.row)  # a one-off event is no new value
    alike = np.ones((2, 4), dtype=np.float32) / 2  # cosine 1
    apart = np.eye(2, 4, dtype=np.float32)  # cosine 0
    assert trust.conflicts([old, new], alike, 0.8, 0.4) == {("a", "b")}
    assert trust.conflicts([old, new], apart, 0.8, 0.4) == set()
    assert trust.conflicts([old, new], alike, 0.8) == set()  # no change threshold: only numbers and polarity
