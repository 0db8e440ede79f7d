"""Items keep the words of the turns they came from, and full-text search reads them."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import polars as pl
import pytest

from memory_assets.lib.items import publish, source_text
from memory_assets.lib.items.consolidation import facts_to_items
from retrieval import MemoryClient
from retrieval.agent.options import RetrievalOptions
from retrieval.config import load_config
from retrieval.embeddings import Embedder
from retrieval.paths import DataRoot
from retrieval.schema import FACT_SCHEMA, ITEM_SCHEMA
from tests.factories import fact

NOW = datetime(2023, 5, 9, 12, 0, tzinfo=timezone.utc)
SAID = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)

RESOURCES = pl.DataFrame({
    "resource_id": ["r-metime", "r-group", "r-ask", "r-later"],
    "speaker": ["Melanie", "Caroline", "Melanie", "Caroline"],
    "content": [
        "So I'm carving out some me-time each day - running, reading, or playing my violin.",
        "I went to a LGBTQ support group yesterday and it was so powerful.",
        "Wow, what happened there?",
        "The transgender stories were so inspiring!",
    ],
    "content_at": [SAID, SAID, SAID, SAID + timedelta(days=30)],
})


def _fact(fid: str, content: str, resource_ids: list[str], turn_ids: list[str]) -> dict:
    return fact(fid, content, at=SAID, turns=turn_ids, category="personal", importance=0.5,
                source_resource_ids=resource_ids)

FACTS = [
    # The fact paraphrases its turn: "me-time" and "violin" are only in the turn.
    _fact("selfcare", "Melanie is starting to realize that self-care is really important", ["r-metime"], ["D2:5"]),
    _fact("group", "Caroline went to a LGBTQ support group", ["r-group", "r-later"], ["D1:3", "D5:2"]),
    _fact("orphan", "Caroline keeps a journal of her transition", ["r-unknown"], ["D9:9"]),
    *[_fact(f"filler-{i}", f"Melanie mentioned household detail number {i} about the garden and chores",
            [f"r-none-{i}"], [f"D3:{i}"]) for i in range(8)],
]


def _items() -> pl.DataFrame:
    items = facts_to_items(pl.DataFrame(FACTS, schema=FACT_SCHEMA), NOW).select(list(ITEM_SCHEMA))
    return source_text.attach(items, source_text.turn_texts(RESOURCES))


def _text(items: pl.DataFrame, fid: str) -> str | None:
    return items.filter(pl.col("id") == fid)["source_text"][0]


def test_source_text_is_the_items_own_turns_with_speaker_and_day():
    items = _items()
    assert _text(items, "selfcare") == (
        "[8 May 2023] Melanie: So I'm carving out some me-time each day - running, reading, or playing my violin.")
    # Every source of a merged item, in source order, and no neighbouring turn ("r-ask").
    assert _text(items, "group").splitlines() == [
        "[8 May 2023] Caroline: I went to a LGBTQ support group yesterday and it was so powerful.",
        "[7 June 2023] Caroline: The transgender stories were so inspiring!",
    ]
    assert _text(items, "orphan") is None  # no known resource: no text, and nothing made up
    assert items["id"].to_list() == [f["id"] for f in FACTS]
    assert items["source_turn_ids"].to_list() == [f["source_turn_ids"] for f in FACTS]


def test_a_long_merged_item_keeps_the_text_of_its_first_turns_only():
    many = pl.DataFrame({"resource_id": [f"r{i}" for i in range(20)], "speaker": ["Jon"] * 20,
                         "content": [f"turn {i}" for i in range(20)], "content_at": [SAID] * 20})
    items = pl.DataFrame({"id": ["x"], "source_resource_ids": [[f"r{i}" for i in range(20)]]},
                         schema={"id": pl.String, "source_resource_ids": pl.List(pl.String)})
    lines = source_text.attach(items, source_text.turn_texts(many))["source_text"][0].splitlines()
    assert len(lines) == source_text.MAX_TURNS and lines[0].endswith("Jon: turn 0")


def test_context_is_the_turns_around_each_source_in_its_own_session():
    turns = pl.DataFrame({
        "resource_id": ["a0", "a1", "a2", "a3", "a4", "a5", "b0"],
        "session_id": ["s1"] * 6 + ["s2"],
        "turn": [0, 1, 2, 3, 4, 5, 0],
        "speaker": ["John", "Tim", "John", "Tim", "John", "Tim", "Tim"],
        "content": ["Have you been to Universal Studios?", "Nope, first time.", "It's in Orlando.",
                    "I'm super stoked for the Harry Potter stuff.", "Nice!", "Bye.", "Another day."],
        "content_at": [SAID] * 7,
    })
    items = pl.DataFrame({"id": ["hp", "both"], "source_resource_ids": [["a3"], ["a3", "a4"]]},
                         schema={"id": pl.String, "source_resource_ids": pl.List(pl.String)})
    out = source_text.attach(items, source_text.turn_texts(turns))
    hp = out.row(0, named=True)
    assert hp["source_text"].endswith("Tim: I'm super stoked for the Harry Potter stuff.")
    # Two turns each side, in session order; nothing from session s2, never its own turn.
    assert [line.split(": ", 1)[1] for line in hp["context_text"].splitlines()] == [
        "Nope, first time.", "It's in Orlando.", "Nice!", "Bye."]
    both = out.row(1, named=True)
    assert len(both["source_text"].splitlines()) == 2
    # A turn that is a source of the item is not its context too; each neighbour once.
    assert [line.split(": ", 1)[1] for line in both["context_text"].splitlines()] == [
        "Nope, first time.", "It's in Orlando.", "Bye."]


def test_an_item_is_found_by_what_the_turn_before_it_asked(tmp_path):
    """"Universal Studios" is only in the question the fact's turn answered."""
    turns = pl.DataFrame({
        "resource_id": ["q", "a", "x"], "session_id": ["s1", "s1", "s9"], "turn": [0, 1, 0],
        "speaker": ["John", "Tim", "Tim"],
        "content": ["Have you been to Universal Studios before?",
                    "Nope, but I'm super stoked for the Harry Potter stuff.",
                    "Universal Studios tickets are pricey."],
        "content_at": [SAID] * 3,
    })
    facts = [_fact("hp", "Tim is super stoked for the Harry Potter stuff", ["a"], ["D10:11"]),
             _fact("other", "Tim collects Harry Potter wands", ["z"], ["D2:1"])]
    items = facts_to_items(pl.DataFrame(facts, schema=FACT_SCHEMA), NOW).select(list(ITEM_SCHEMA))
    search = source_text.search_texts(items, source_text.turn_texts(turns))
    paths = DataRoot.resolve(tmp_path / "data")
    publish.publish(paths, publish.write_items(paths, items, Embedder(load_config()).embed(items["content"].to_list()), NOW,
                                               search_text=search))
    hits = MemoryClient(paths.root, options=RetrievalOptions(fusion="fts")).search("Universal Studios", k=2, now=NOW)
    assert [h.id for h in hits] == ["hp"]
    injection = MemoryClient(paths.root).inject("What is Tim excited to see at Universal Studios?", now=NOW, record=False)
    assert injection.items[0].id == "hp" and "Universal" not in injection.text


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    paths = DataRoot.resolve(tmp_path_factory.mktemp("source-text") / "data")
    items = facts_to_items(pl.DataFrame(FACTS, schema=FACT_SCHEMA), NOW).select(list(ITEM_SCHEMA))
    vectors = Embedder(load_config()).embed(items["content"].to_list())
    search = source_text.search_texts(items, source_text.turn_texts(RESOURCES))
    publish.publish(paths, publish.write_items(paths, items, vectors, NOW, search_text=search))
    return paths


def test_an_item_is_found_by_a_word_only_its_source_turn_has(published):
    client = MemoryClient(published.root, options=RetrievalOptions(fusion="fts"))
    hits = client.search("me-time violin", k=3, now=NOW)
    assert hits and hits[0].id == "selfcare"
    assert hits[0].source_turn_ids == ["D2:5"]  # the turns it came from, exactly


def test_the_day_a_fact_was_said_is_searchable(published):
    hits = MemoryClient(published.root, options=RetrievalOptions(fusion="fts")).search("June 2023", k=3, now=NOW)
    assert [h.id for h in hits][:1] == ["group"]


def test_the_block_quotes_the_item_not_its_source_turns(published):
    injection = MemoryClient(published.root).inject("How does Melanie make me-time?", now=NOW, record=False)
    assert "selfcare" in {h.id for h in injection.items}
    assert "carving" not in injection.text and "self-care is really important" in injection.text
