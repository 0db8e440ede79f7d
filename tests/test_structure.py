"""Structure before prose: extraction writes typed fields (``directive``, ``remind_on``,
``subject``, ``reported_by``) and later stages read them, never the wording."""

from __future__ import annotations

import json
from datetime import date, datetime, timezone

import polars as pl

from memory_assets.lib import lifecycle
from memory_assets.lib.extraction.facts import build_facts
from memory_assets.lib.extraction.fields import with_fields
from memory_assets.lib.extraction.offline import OfflineExtractor
from memory_assets.lib.items import feedback
from memory_assets.lib.items.consolidation import facts_to_items
from retrieval.config import load_config
from retrieval.schema import FACT_SCHEMA, ITEM_SCHEMA, Candidate, Turn

CONFIG = load_config()
WEDNESDAY = datetime(2026, 9, 9, 14, 0, tzinfo=timezone.utc)


def _turn(n: int, content: str, speaker: str = "Priya", role: str = "user") -> Turn:
    return Turn(session_id="s1", turn=n, role=role, content=content, content_at=WEDNESDAY, speaker=speaker,
                trust="trusted", external_id=None, resource_id=f"r{n}")


def _facts(candidates: list[Candidate], turns: list[Turn]) -> pl.DataFrame:
    return build_facts(candidates, turns, CONFIG, session_id="s1", extractor="test", prompt_version="t",
                       now=WEDNESDAY).facts


def _items(facts: pl.DataFrame) -> pl.DataFrame:
    return facts_to_items(with_fields(facts), WEDNESDAY).select(list(ITEM_SCHEMA))


def test_extraction_writes_the_directive_and_the_days_and_the_lifecycle_reads_them_not_the_wording():
    turns = [_turn(1, "Always run make lint before committing. The physio is next Friday at 10:30.")]
    facts = _facts(OfflineExtractor(CONFIG).extract(turns).candidates, turns)
    by_kind = {r["kind"]: r for r in facts.iter_rows(named=True)}
    rule = by_kind["procedure"]
    assert rule["directive"] == "Always run make lint before committing" and rule["subject"] == "Priya"
    dated = next(r for r in facts.iter_rows(named=True) if "physio" in r["content"])
    assert dated["remind_on"] == [date(2026, 9, 18)] and dated["directive"] is None

    # A directive and days that the wording does not say: the lifecycle follows the fields.
    items = _items(facts.with_columns(
        directive=pl.when(pl.col("kind") == "procedure").then(pl.lit("Never skip the linter"))
        .otherwise(pl.col("directive")),
        remind_on=pl.when(pl.col("content").str.contains("physio")).then(pl.lit([date(2026, 9, 25)]))
        .otherwise(pl.col("remind_on"))))
    assert lifecycle.lessons(items, CONFIG) == ["Never skip the linter"]
    triggers = lifecycle.forward_triggers(items, WEDNESDAY)
    assert triggers["trigger_date"].to_list() == [date(2026, 9, 25)]


def test_a_rule_for_the_assistant_carries_its_directive_from_the_request_not_from_its_sentence():
    """The offline extractor makes the rule's imperative from the request's own words and
    renders the sentence from the same words; a later sentence's details extend both."""
    said = ("Please don't force-push to main.", "Always use pnpm, not npm.")
    candidates = [c for text in said for c in OfflineExtractor(CONFIG).extract([_turn(1, text)]).candidates]
    rules = {c.content: c.directive for c in candidates if c.directive is not None}
    assert rules == {"Priya wants the assistant not to force-push to main.": "Don't force-push to main",
                     "Priya wants the assistant to always use pnpm, not npm.": "Always use pnpm, not npm"}
    # What stays a plain fact carries no directive, however it is worded.
    plain = [_turn(1, "My sister wants the assistant to stop calling her Mel.")]
    assert all(c.directive is None for c in OfflineExtractor(CONFIG).extract(plain).candidates)


def test_reported_speech_names_its_speaker_in_a_field():
    turns = [_turn(1, "Fitting into the new team's style of play was a challenge during pre-season.", "John"),
             _turn(2, "That sounds tough, John.", "Gina")]
    facts = _facts(OfflineExtractor(CONFIG).extract(turns).candidates, turns)
    reported = facts.filter(pl.col("reported_by").is_not_null())
    assert reported["reported_by"].to_list() == ["John"]
    assert reported["content"][0].startswith("John said: ")


def test_an_llm_fact_may_give_the_fields_and_what_it_leaves_out_is_read_once():
    given = Candidate(content="Priya wants the assistant to squash merges.", category="process", kind="procedure",
                      source_turns=[1], directive="Squash every merge", remind_on=[date(2026, 10, 1)])
    left_out = Candidate(content="The billing release is planned for 2026-10-01.", category="work",
                         source_turns=[1])
    facts = _facts([given, left_out], [_turn(1, "…")])
    rows = {r["content"]: r for r in facts.iter_rows(named=True)}
    assert rows[given.content]["directive"] == "Squash every merge"
    assert rows[given.content]["remind_on"] == [date(2026, 10, 1)]
    assert rows[left_out.content]["remind_on"] == [date(2026, 10, 1)] and rows[left_out.content]["directive"] is None


def test_facts_written_before_the_fields_get_them_read_and_an_update_rereads_them():
    legacy = pl.DataFrame([{
        "id": "f1", "content": "Priya wants the assistant to always rebase before pushing.", "category": "process",
        "kind": "procedure", "tags": [], "entities": [], "source_resource_ids": ["r1"], "source_turn_ids": ["s1:1"],
        "source_session": "s1", "created_at": WEDNESDAY, "importance": 0.8, "confidence": 0.9,
        "source_trust": "trusted", "tier": "standard", "namespace": "default", "scope": "global",
        "content_hash": "h", "strength": "explicit", "sentiment": "neutral",
    }])
    legacy = legacy.with_columns([pl.lit(None, dtype=t).alias(c) for c, t in FACT_SCHEMA.items()
                                  if c not in legacy.columns and c not in ("directive", "remind_on")])
    items = _items(legacy)  # no directive or remind_on column at all
    assert items["directive"].to_list() == ["Always rebase before pushing"]
    update = pl.DataFrame([{"id": "e1", "type": "update", "item_ids": ["f1"], "ts": WEDNESDAY, "session_id": None,
                            "payload": json.dumps({"content": "Priya wants the assistant to never rebase; "
                                                              "the freeze starts tomorrow."}),
                            "source_file": None}], schema=feedback.EVENT_SCHEMA)
    updated, _ = feedback.fold(items, update, CONFIG)
    row = updated.row(0, named=True)
    assert row["directive"].startswith("Never rebase") and row["remind_on"] == [date(2026, 9, 10)]


def test_a_reworded_fact_gets_the_structure_of_its_new_words():
    # "memory update" on "Kofi lives in Denver": what validity compares (subject, relation,
    # value, change, slot, numbers) follows the new words, not the old parse.
    fact = Candidate(content="Kofi lives in Denver.", category="personal", kind="fact", entities=["Kofi", "Denver"],
                     source_turns=[1])
    items = _items(_facts([fact], [_turn(1, "I live in Denver.", "Kofi")]))
    assert items.row(0, named=True)["value"] == "Denver"
    update = pl.DataFrame([{"id": "e1", "type": "update", "item_ids": [items["id"][0]], "ts": WEDNESDAY,
                            "session_id": None, "source_file": None,
                            "payload": json.dumps({"content": "Kofi switched to Neovim 0.10 for all his editing."})}],
                          schema=feedback.EVENT_SCHEMA)
    row = feedback.fold(items, update, CONFIG)[0].row(0, named=True)
    assert (row["subject_key"], row["value"], row["states_change"], row["change_cue"]) == ("kofi", "Neovim 0.10", True, "switch")
    assert "Denver" not in (row["slot"] or "") and "Neovim" in row["slot"] and row["numbers"] == ["0.10"]


def test_numbers_and_polarity_are_fields_read_once_and_a_fact_from_before_gets_them_from_its_wording():
    from memory_assets.lib.extraction.fields import said_fields

    from retrieval.text import written_words

    # A name written with a capital inside a sentence keeps it: "Black" the brand, "black" the colour.
    assert written_words("Kofi bought a bag from Black Diamond. Black is his colour.") == [
        "Black", "Diamond", "bag", "black", "bought", "colour", "kofi"]
    # Its numbers, its polarity and its content words in their compared form (no "'s", no stopwords).
    assert said_fields("Kofi's rent went up to $2,150 by 9:30") == {
        "numbers": ["2,150", "9:30"], "denies": False, "words": ["2,150", "9:30", "kofi", "rent", "went"], "same_as": []}
    assert said_fields("Kofi doesn't drink coffee anymore")["denies"] is True
    legacy = pl.DataFrame({"content": ["Kofi doesn't drink coffee anymore", "Kofi's rent is $1,900"],
                           "created_at": [WEDNESDAY, WEDNESDAY], "kind": ["fact", "fact"],
                           "remind_on": [[], []]}, schema_overrides={"remind_on": pl.List(pl.Date())})
    read = with_fields(legacy)  # no numbers or denies column at all
    assert read["numbers"].to_list() == [[], ["1,900"]] and read["denies"].to_list() == [True, False]
    assert read["words"].to_list() == [["anymore", "coffee", "drink", "kofi"], ["1,900", "kofi", "rent"]]
    # One written with them keeps them; only a missing one is read.
    mixed = with_fields(read.with_columns(pl.Series("denies", [None, True], dtype=pl.Boolean)))
    assert mixed["denies"].to_list() == [True, True]
