"""The nightly lifecycle, specified with a moving clock: what survives, decays, expires,
is purged, contradicted, superseded and promoted; lessons, forward triggers, MEMORY.md.

Multi-night tests run the pipeline's own path each night — ``consolidate`` from the
facts (base importance, feedback replayed, lifecycle fields carried) then
``lifecycle.apply`` — so they also pin down the contract between the two.
"""

from __future__ import annotations

import json
import math
from datetime import date, datetime, time, timedelta, timezone

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from memory_assets.lib.items import feedback
from memory_assets.lib import lifecycle
from retrieval.dates import future_dates
from memory_assets.lib.extraction.fields import with_fields
from memory_assets.lib.items.consolidation import consolidate, facts_to_items
from retrieval import scoring
from retrieval.config import load_config
from retrieval.embeddings import Embedder
from retrieval.schema import FACT_SCHEMA, ITEM_SCHEMA
from tests.factories import fact

UTC = timezone.utc
T0 = datetime(2026, 9, 1, 10, 0, tzinfo=UTC)  # a Tuesday
CONFIG = load_config()


def _night(day: int) -> datetime:
    """The nightly run at 02:00 UTC, ``day`` days after T0's date."""
    return datetime.combine(T0.date() + timedelta(days=day), time(2, 0), UTC)


def _fact(fid: str, content: str, *, at: datetime = T0, category: str = "vehicle", kind: str = "fact",
          tier: str | None = None, importance: float | None = None, trust: str = "trusted", **overrides) -> dict:
    return fact(fid, content, at=at, category=category, kind=kind, tier=tier or CONFIG.tier_for(kind), source_trust=trust,
                importance=importance if importance is not None else scoring.base_importance(CONFIG, category, source_trust=trust),
                **overrides)

def _items(*facts: dict, events: list[dict] | None = None) -> pl.DataFrame:
    """Items as consolidate leaves them (base scores), with ``events`` folded in."""
    items = facts_to_items(with_fields(pl.DataFrame(list(facts), schema=FACT_SCHEMA)), T0).select(list(ITEM_SCHEMA))
    if events:
        items, _ = feedback.fold(items, _events(events), CONFIG)
    return items


def _event(kind: str, item_id: str, at: datetime) -> dict:
    return {"id": f"{kind}-{item_id}-{at.isoformat()}", "type": kind, "item_ids": [item_id], "ts": at,
            "session_id": "agent", "payload": json.dumps({}), "source_file": "test.json"}


def _events(rows: list[dict]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=feedback.EVENT_SCHEMA).sort("ts")


def _apart(n: int) -> np.ndarray:
    """Vectors with no two alike: similarity plays no part."""
    return np.eye(n, 8, dtype=np.float32)


def _row(items: pl.DataFrame, fid: str) -> dict:
    return items.filter(pl.col("id") == fid).row(0, named=True)


@pytest.fixture(scope="module")
def embedder():
    return Embedder(CONFIG)


class Nights:
    """The nightly run as the pipeline does it: consolidate from facts, then apply;
    weekly ``archive_unaccessed`` and monthly ``to_cold`` when asked."""

    def __init__(self, facts: list[dict], embedder, events: list[dict] | None = None, config=CONFIG):
        self.facts = pl.DataFrame(facts, schema=FACT_SCHEMA)
        self.events = _events(events or [])
        self.embedder, self.config = embedder, config
        # The store has held each fact since it was said: decay counts from then.
        self.previous: pl.DataFrame | None = facts_to_items(self.facts, T0).with_columns(
            first_seen_at=pl.col("created_at")).select(list(ITEM_SCHEMA))
        self.known: dict[str, np.ndarray] = {}

    def run(self, now: datetime, *, weekly: bool = False, monthly: bool = False) -> tuple[pl.DataFrame, lifecycle.LifecycleReport]:
        events = self.events.filter(pl.col("ts") <= now)
        result = consolidate(self.facts, self.previous, self.known, self.embedder, self.config, now, events=events)
        self.known.update(zip(result.items["content_hash"].to_list(), result.vectors))
        items, report = lifecycle.apply(result.items, result.vectors, self.config, now)
        if weekly:
            items, _ = lifecycle.archive_unaccessed(items, self.config, now)
        if monthly:
            items, _ = lifecycle.to_cold(items, self.config, now)
        self.previous = items
        return items, report


# --- Survival, decay, purge ------------------------------------------------------------

POTTERY = ("pottery", "Aaron took a wheel-throwing class at the pottery studio", "hobbies", "event")


def test_a_weekly_referenced_transient_fact_survives_120_days(embedder):
    fid, content, category, kind = POTTERY
    weekly = [_event("reinforce", fid, T0 + timedelta(days=7 * k)) for k in range(1, 18)]
    nights = Nights([_fact(fid, content, category=category, kind=kind)], embedder, weekly)
    for day in range(1, 121):
        items, _ = nights.run(_night(day), weekly=day % 7 == 0, monthly=day % 30 == 0)
        assert _row(items, fid)["status"] == "active", f"night {day}"
    row = _row(items, fid)
    assert row["reference_count"] == 17 and row["importance"] == 1.0  # 0.5 × 1.1^17, capped
    assert row["promoted"] is True


def test_an_unreferenced_transient_fact_is_purged_after_seven_weeks(embedder):
    # 0.5 (hobbies) × 0.9 confidence × 0.80^weeks drops below 0.1 at 7 whole weeks:
    # created on day 0 at 10:00, that is the run on night 50 at 02:00.
    fid, content, category, kind = POTTERY
    nights = Nights([_fact(fid, content, category=category, kind=kind)], embedder)
    purged_on = None
    for day in range(1, 60):
        items, report = nights.run(_night(day))
        if report.counts["purged"]:
            assert report.ids["purged"] == [fid]
            purged_on = purged_on or day
    assert purged_on == 50
    row = _row(items, fid)
    assert row["status"] == "purged" and row["updated_at"] == _night(50)  # kept, never deleted
    assert row["importance"] == pytest.approx(0.5 * 0.8 ** 8)  # night 59: 8 whole weeks


def test_a_permanent_fact_never_decays_nor_expires():
    items = _items(
        _fact("rule", "Priya wants the assistant to never force-push to main", category="process", kind="negative"),
        _fact("plain", "Aaron drives a 2019 Subaru WRX"),
    )
    later = T0 + timedelta(days=400)
    out, report = lifecycle.apply(items, _apart(2), CONFIG, later)
    rule = _row(out, "rule")
    assert rule["tier"] == "permanent" and rule["importance"] == 0.6 and rule["status"] == "active"
    assert _row(out, "plain")["importance"] == pytest.approx(0.8 * 0.95 ** 57, abs=1e-6)
    assert report.ids["decayed"] == ["plain"]
    for transition in (lifecycle.archive_unaccessed, lifecycle.to_cold):
        assert _row(transition(out, CONFIG, later)[0], "rule")["status"] == "active"


# --- Expiry --------------------------------------------------------------------------------

@pytest.mark.parametrize("category, ttl_days", [("casual", 30), ("hobbies", 60), ("work", 90), ("preferences", 180)])
def test_an_unreferenced_item_is_archived_when_its_category_ttl_passes(category, ttl_days):
    items = _items(_fact("x", "Aaron mentioned a detail worth keeping for a while", category=category))
    before, _ = lifecycle.apply(items, _apart(1), CONFIG, T0 + timedelta(days=ttl_days - 1))
    assert _row(before, "x")["status"] == "active"
    after, report = lifecycle.apply(items, _apart(1), CONFIG, T0 + timedelta(days=ttl_days, hours=1))
    row = _row(after, "x")
    assert row["status"] == "archived" and row["expires_at"] == T0 + timedelta(days=ttl_days)
    assert report.ids["expired"] == ["x"]


def test_a_user_reference_restarts_the_ttl_clock():
    items = _items(_fact("x", "Aaron's lunch order today is a falafel wrap", category="casual"),
                   events=[_event("reinforce", "x", T0 + timedelta(days=20))])
    assert _row(lifecycle.apply(items, _apart(1), CONFIG, T0 + timedelta(days=45))[0], "x")["status"] == "active"
    late = _row(lifecycle.apply(items, _apart(1), CONFIG, T0 + timedelta(days=51))[0], "x")
    assert late["status"] == "archived" and late["expires_at"] == T0 + timedelta(days=50)


def test_a_category_with_ttl_zero_never_expires(tmp_path):
    override = tmp_path / "memory.toml"
    override.write_text("[categories.casual]\nttl_days = 0\n")
    config = load_config(override)
    items = _items(_fact("x", "Aaron's lunch order today is a falafel wrap", category="casual"))
    out, _ = lifecycle.apply(items, _apart(1), config, T0 + timedelta(days=100))
    assert _row(out, "x")["status"] == "active"


def test_a_speculative_fact_expires_after_30_days_unless_another_session_confirms_it():
    items = _items(
        _fact("guess", "Aaron might prefer aisle seats", category="preferences", confidence=0.3),
        _fact("seen-twice", "Aaron might prefer late flights", category="preferences", confidence=0.3,
              turns=["s1:4", "s2:9"]),
    )
    day29, _ = lifecycle.apply(items, _apart(2), CONFIG, T0 + timedelta(days=29))
    assert set(day29["status"]) == {"active"}
    day30, report = lifecycle.apply(items, _apart(2), CONFIG, T0 + timedelta(days=30))
    guess, confirmed = _row(day30, "guess"), _row(day30, "seen-twice")
    assert guess["status"] == "archived" and guess["expires_at"] == T0 + timedelta(days=30)
    assert report.ids["speculative_expired"] == ["guess"]
    assert confirmed["status"] == "active" and confirmed["confidence"] == pytest.approx(0.4)


@pytest.mark.parametrize("turn_ids, session_id, sessions", [
    (["conv-26-s3:4", "conv-26-s5:1"], "conv-26-s3", {"conv-26-s3", "conv-26-s5"}),
    (["D3:4", "D3:7"], "conv-26-s3", {"D3"}),            # LoCoMo dia_ids: one session
    (["D3:4", "D13:1"], "conv-26-s3", {"D3", "D13"}),
    (["custom-id"], "chat-42", {"chat-42"}),              # no session in the id: the item's own
])
def test_sessions_are_read_from_the_turn_ids_merged_items_keep(turn_ids, session_id, sessions):
    assert lifecycle.sessions_of({"source_turn_ids": turn_ids, "session_id": session_id}) == sessions


# --- Contradiction and supersession ----------------------------------------------------------

STANDUP_OLD = "Aaron's standup meeting is at 9:00 on weekdays"
STANDUP_NEW = "Aaron's standup meeting is at 14:00 on weekdays"


def test_contradicting_items_are_flagged_on_both_sides(embedder):
    items = _items(_fact("old", STANDUP_OLD, category="work"),
                   _fact("new", STANDUP_NEW, category="work", at=T0 + timedelta(days=2), session="s2"))
    out, report = lifecycle.apply(items, embedder.embed(items["content"].to_list()), CONFIG, T0 + timedelta(days=3))
    assert _row(out, "old")["contradicts"] == ["new"] and _row(out, "new")["contradicts"] == ["old"]
    assert set(out["status"]) == {"active"}
    assert out["confidence"].to_list() == [pytest.approx(0.7)] * 2  # 0.9 − 0.2 while unresolved
    assert sorted(report.ids["contradicted"]) == ["new", "old"] and report.counts["penalized"] == 2
    assert set(out["updated_at"]) == {T0 + timedelta(days=3)}


@pytest.mark.parametrize("how", ["correction", "supersedes"])
def test_a_newer_item_that_says_it_replaces_the_older_one_supersedes_it(embedder, how):
    items = _items(_fact("old", STANDUP_OLD, category="work"),
                   _fact("new", STANDUP_NEW, category="work", at=T0 + timedelta(days=2),
                         kind="correction" if how == "correction" else "fact"))
    if how == "supersedes":  # consolidate resolved the new fact's hint to some earlier item
        items = items.with_columns(supersedes=pl.when(pl.col("id") == "new").then(pl.lit("earlier")))
    out, report = lifecycle.apply(items, embedder.embed(items["content"].to_list()), CONFIG, T0 + timedelta(days=3))
    old, new = _row(out, "old"), _row(out, "new")
    assert old["status"] == "superseded" and old["superseded_by"] == "new"
    assert new["supersedes"] == ("old" if how == "correction" else "earlier")
    assert old["contradicts"] == [] and new["contradicts"] == [] and new["confidence"] == 0.9
    assert report.ids["superseded"] == ["old"] and report.counts["contradicted"] == 0


def test_only_the_given_neighbours_are_compared(embedder):
    items = _items(_fact("old", STANDUP_OLD, category="work"),
                   _fact("new", STANDUP_NEW, category="work", at=T0 + timedelta(days=2)))
    vectors = embedder.embed(items["content"].to_list())
    now = T0 + timedelta(days=3)
    _, none = lifecycle.apply(items, vectors, CONFIG, now, neighbors=[[], []])
    _, given = lifecycle.apply(items, vectors, CONFIG, now, neighbors={1: [0]})
    assert none.counts["contradicted"] == 0 and given.counts["contradicted"] == 2


def test_a_night_compares_only_new_and_changed_items(embedder):
    """``changed``: a pair of unchanged items was looked at when the newer one arrived;
    a night looks only around the items new or reworded since the last version."""
    items = _items(_fact("old", STANDUP_OLD, category="work"),
                   _fact("new", STANDUP_NEW, category="work", at=T0 + timedelta(days=2)),
                   _fact("gym", "Aaron goes to the gym at 7:00", category="work", at=T0 + timedelta(days=2)))
    vectors = embedder.embed(items["content"].to_list())
    now = T0 + timedelta(days=3)
    _, unchanged = lifecycle.apply(items, vectors, CONFIG, now, changed=[2])
    _, arrived = lifecycle.apply(items, vectors, CONFIG, now, changed=[1])
    _, everything = lifecycle.apply(items, vectors, CONFIG, now)
    assert unchanged.counts["contradicted"] == 0
    assert sorted(arrived.ids["contradicted"]) == sorted(everything.ids["contradicted"]) == ["new", "old"]


def test_consolidate_reports_the_new_and_reworded_rows(embedder):
    first_facts = pl.DataFrame([_fact("old", STANDUP_OLD, category="work")], schema=FACT_SCHEMA)
    first = consolidate(first_facts, None, {}, embedder, CONFIG, T0)
    assert first.changed is None  # no previous version: everything is new
    more = pl.concat([first_facts, pl.DataFrame([_fact("gym", "Aaron goes to the gym at 7:00", category="health",
                                                       at=T0 + timedelta(days=1))], schema=FACT_SCHEMA)])
    second = consolidate(more, first.items, {}, embedder, CONFIG, T0 + timedelta(days=1))
    assert [second.items["id"][i] for i in second.changed] == ["gym"]


def test_alike_items_in_different_categories_are_not_contradictions(embedder):
    items = _items(_fact("a", STANDUP_OLD, category="work"), _fact("b", STANDUP_NEW, category="process"))
    out, _ = lifecycle.apply(items, embedder.embed(items["content"].to_list()), CONFIG, T0 + timedelta(days=3))
    assert out["contradicts"].to_list() == [[], []]


def test_vectors_must_align_with_items():
    with pytest.raises(ValueError, match="2 vectors for 1 items"):
        lifecycle.apply(_items(_fact("a", "Aaron drives a WRX")), _apart(2), CONFIG, T0)


# --- Reinforcement, injection, promotion, priority -------------------------------------------

def _referenced(n: int, fid: str = "wrx", *, start: datetime = T0) -> list[dict]:
    return [_event("reinforce", fid, start + timedelta(hours=k + 1)) for k in range(n)]


@pytest.mark.parametrize("references, promoted", [(2, False), (3, True)])
def test_promotion_takes_three_user_references(references, promoted):
    items = _items(_fact("wrx", "Aaron's WRX oil change is due at 11,799 miles"), events=_referenced(references))
    out, report = lifecycle.apply(items, _apart(1), CONFIG, T0 + timedelta(days=2))
    row = _row(out, "wrx")
    assert row["importance"] == pytest.approx(min(1.0, 0.8 * 1.1 ** references))
    assert row["promoted"] is promoted and report.counts["promoted"] == int(promoted)


def test_untrusted_items_face_a_higher_bar_for_promotion(tmp_path):
    untrusted = _fact("wrx", "Aaron's WRX warranty renewal is due in March", trust="untrusted", importance=0.9)
    trusted = _fact("mine", "Aaron's WRX registration renewal is due in March", importance=0.9)
    # By default an untrusted item never reaches 0.9: importance is capped at 0.5.
    out, _ = lifecycle.apply(_items(untrusted, events=_referenced(5)), _apart(1), CONFIG, T0 + timedelta(days=1))
    assert _row(out, "wrx")["importance"] == 0.5 and _row(out, "wrx")["promoted"] is False
    override = tmp_path / "memory.toml"
    override.write_text("[importance]\nuntrusted_cap = 1.0\n")
    config = load_config(override)
    for references, promoted in ((3, False), (5, True)):
        events = _referenced(references) + _referenced(references, "mine")
        out, _ = lifecycle.apply(_items(untrusted, trusted, events=events), _apart(2), config, T0 + timedelta(days=1))
        assert _row(out, "wrx")["promoted"] is promoted, references
        assert _row(out, "mine")["promoted"] is True


def test_injection_never_reinforces_nor_promotes():
    shown = [_event("injected", "wrx", T0 + timedelta(minutes=k)) for k in range(50)]
    used = [_event("referenced", "wrx", T0 + timedelta(hours=1, minutes=k)) for k in range(10)]
    items = _items(_fact("wrx", "Aaron's WRX oil change is due at 11,799 miles"), events=shown + used)
    out, report = lifecycle.apply(items, _apart(1), CONFIG, T0 + timedelta(days=3))
    row = _row(out, "wrx")
    assert (row["injected_count"], row["echo_count"], row["reference_count"]) == (50, 10, 0)
    assert row["importance"] == 0.8 and row["promoted"] is False
    assert row["retrieval_priority"] == 0.5  # echoes lift priority (10 × 0.1), capped at 0.5
    assert report.counts["reinforced"] == 0


def test_todays_items_are_boosted_and_replies_move_priority():
    events = [_event("referenced", "old", T0)] * 2 + [_event("ignored", "old", T0)] * 3
    events = [{**e, "id": f"{e['id']}-{i}"} for i, e in enumerate(events)]
    items = _items(_fact("old", "Aaron drives a 2019 Subaru WRX"),
                   _fact("today", "Aaron booked the oil change", at=T0 + timedelta(days=5, hours=20)),
                   events=events)
    out, report = lifecycle.apply(items, _apart(2), CONFIG, T0 + timedelta(days=6))
    assert _row(out, "today")["retrieval_priority"] == 0.1
    assert _row(out, "old")["retrieval_priority"] == pytest.approx(2 * 0.1 - 3 * 0.05)
    assert report.ids["boosted"] == ["today"]


# --- Idempotency and the report -------------------------------------------------------------

def _a_busy_memory() -> tuple[list[dict], list[dict]]:
    facts = [
        _fact("coffee", "Aaron drinks coffee every morning", category="personal"),
        _fact("no-coffee", "Aaron never drinks coffee", category="personal", at=T0 + timedelta(days=1), session="s2"),
        _fact("pottery", POTTERY[1], category="hobbies", kind="event"),
        _fact("lunch", "Aaron's lunch order today is a falafel wrap", category="casual"),
        _fact("wrx", "Aaron's WRX oil change is due at 11,799 miles"),
        _fact("fresh", "Aaron booked a physio appointment", category="health", at=T0 + timedelta(days=59, hours=14)),
    ]
    return facts, _referenced(3, start=T0 + timedelta(days=58))


def test_running_the_same_night_twice_changes_nothing(embedder):
    facts, events = _a_busy_memory()
    nights = Nights(facts, embedder, events)
    first, report = nights.run(_night(60))
    assert report.counts["purged"] and report.counts["expired"] and report.counts["contradicted"]
    again, _ = nights.run(_night(60))
    assert_frame_equal(first, again)


def test_apply_on_its_own_output_changes_nothing_when_base_scores_are_kept():
    facts, events = _a_busy_memory()
    items = _items(*facts, events=events).with_columns(base_importance=pl.col("importance"),
                                                       base_confidence=pl.col("confidence"))
    once, _ = lifecycle.apply(items, _apart(items.height), CONFIG, _night(60))
    twice, _ = lifecycle.apply(once, _apart(items.height), CONFIG, _night(60))
    assert_frame_equal(once, twice)


def test_the_report_counts_every_action_and_names_the_items(embedder):
    facts, events = _a_busy_memory()
    _, report = Nights(facts, embedder, events).run(_night(60))
    assert report.ids["contradicted"] == ["coffee", "no-coffee"]
    assert report.ids["penalized"] == ["coffee", "no-coffee"]
    assert report.ids["confirmed"] == []
    assert report.ids["purged"] == ["pottery"] and report.ids["expired"] == ["lunch"]
    assert report.ids["promoted"] == ["wrx"] and report.ids["reinforced"] == ["wrx"]
    assert report.ids["boosted"] == ["fresh"]
    assert report.counts == {action: len(ids) for action, ids in report.ids.items()}
    assert set(report.counts) == set(lifecycle.ACTIONS)
    assert report.metadata()["counts"]["purged"] == 1 and "archived" not in report.metadata()["ids"]


# --- Weekly and monthly transitions --------------------------------------------------------

def test_items_unused_for_90_days_are_archived_even_when_injected_daily():
    injected = [_event("injected", "shown", T0 + timedelta(days=d)) for d in range(90)]
    items = _items(_fact("quiet", "Aaron drives a 2019 Subaru WRX"),
                   _fact("shown", "Aaron's WRX is blue"),
                   _fact("used", "Aaron's WRX has winter tires"),
                   events=injected + [_event("reinforce", "used", T0 + timedelta(days=10))])
    now = T0 + timedelta(days=91)
    out, report = lifecycle.archive_unaccessed(items, CONFIG, now)
    assert dict(zip(out["id"], out["status"])) == {"quiet": "archived", "shown": "archived", "used": "active"}
    assert sorted(report.ids["archived"]) == ["quiet", "shown"] and _row(out, "quiet")["updated_at"] == now


def test_items_unused_for_180_days_go_cold():
    items = _items(_fact("a", "Aaron drives a 2019 Subaru WRX"), _fact("b", "Aaron's WRX is blue"),
                   _fact("c", "Aaron's WRX has winter tires", at=T0 + timedelta(days=5)))
    items = items.with_columns(status=pl.Series(["active", "archived", "active"]))
    out, report = lifecycle.to_cold(items, CONFIG, T0 + timedelta(days=181))
    assert out["status"].to_list() == ["cold", "cold", "active"] and report.counts["cold"] == 2


# --- Lessons ------------------------------------------------------------------------------------

def test_lessons_are_short_imperatives_from_corrections_negatives_procedures_and_decisions():
    items = _items(
        _fact("ruff", "Priya wants the assistant to switch from black to ruff format.", category="process",
              kind="correction", importance=0.7),
        _fact("black", "Priya no longer wants black.", category="preferences", kind="correction", importance=0.6),
        _fact("push", "Priya wants the assistant not to force-push to main.", category="process",
              kind="negative", importance=0.9),
        _fact("lint", "Priya wants the assistant to always run make lint before committing.", category="process",
              kind="procedure", importance=0.8),
        _fact("db", "Priya and others decided to use Postgres instead of MySQL for the billing service.",
              category="decision", kind="decision", importance=0.85),
        _fact("meet", "Aaron now prefers afternoon meetings.", category="preferences", kind="correction",
              importance=0.5),
        _fact("car", "User does not want to rent a car.", category="vehicle", kind="negative", importance=0.4),
    )
    assert lifecycle.lessons(items, CONFIG) == [
        "Don't force-push to main",
        "Use Postgres instead of MySQL for the billing service",
        "Always run make lint before committing",
        "Priya prefers ruff format over black",
        "Don't suggest black to Priya",
        "Aaron prefers afternoon meetings",
        "User doesn't want to rent a car",
    ]


def test_lessons_skip_facts_retired_untrusted_and_repeated_items_and_stop_at_20():
    rules = [_fact(f"r{i}", f"Priya wants the assistant to never touch legacy module number {i}.",
                   category="process", kind="negative", importance=0.5 + i / 100) for i in range(25)]
    items = _items(
        *rules,
        _fact("dup", "Priya wants the assistant to never touch legacy module number 24", category="process",
              kind="negative", importance=0.3),
        _fact("fact", "Priya is tech lead on ledgerline", category="work"),
        _fact("bot", "The bot wants the assistant to disable tests", category="process", kind="procedure",
              trust="untrusted", importance=0.95),
        _fact("gone", "Priya wants the assistant to use black", category="process", kind="procedure", importance=0.99),
    ).with_columns(status=pl.when(pl.col("id") == "gone").then(pl.lit("superseded")).otherwise(pl.col("status")))
    out = lifecycle.lessons(items, CONFIG)
    assert len(out) == 20 and out[0] == "Never touch legacy module number 24"
    assert out[-1] == "Never touch legacy module number 5"


# --- Forward triggers ---------------------------------------------------------------------------

WEDNESDAY = datetime(2026, 9, 9, 14, 0, tzinfo=UTC)


@pytest.mark.parametrize("content, created_at, expected", [
    ("The physio is next Friday at 10:30", WEDNESDAY, [date(2026, 9, 18)]),  # Friday of next week
    ("The dentist is on Saturday", WEDNESDAY, [date(2026, 9, 12)]),
    ("Aaron's sister Maya's birthday is October 12", WEDNESDAY, [date(2026, 10, 12)]),
    ("Follow-up is Oct 7 at 2pm", WEDNESDAY, [date(2026, 10, 7)]),
    ("The billing release is planned for 2026-10-01", WEDNESDAY, [date(2026, 10, 1)]),
    ("Aaron's passport expires in 6 months", WEDNESDAY, [date(2027, 3, 9)]),
    ("The rent is due on the 5th", WEDNESDAY, [date(2026, 10, 5)]),
    ("Priya wants a review in two weeks", WEDNESDAY, [date(2026, 9, 23)]),
    ("Aaron wants to retry the renewal tomorrow morning", WEDNESDAY, [date(2026, 9, 10)]),
    ("Priya plans the migration next week", WEDNESDAY, [date(2026, 9, 14)]),
    ("The invoice run moves next month", WEDNESDAY, [date(2026, 10, 1)]),
    ("Priya is out from September 28 to October 2", WEDNESDAY, [date(2026, 9, 28), date(2026, 10, 2)]),
    ("Maya's birthday is January 5", datetime(2026, 11, 20, tzinfo=UTC), [date(2027, 1, 5)]),
    ("Maya's birthday is October 12", datetime(2026, 11, 20, tzinfo=UTC), []),  # just passed
    ("Aaron did the emissions test Saturday", WEDNESDAY, []),                     # the past tense
    ("The outage was on September 1", WEDNESDAY, []),
    ("Aaron goes climbing on Saturdays", WEDNESDAY, []),                           # a habit, not a date
])
def test_trigger_dates_land_on_the_right_day(content, created_at, expected):
    assert future_dates(content, created_at) == expected


def test_forward_triggers_have_one_row_per_item_and_date_and_drop_week_old_ones():
    items = _items(
        _fact("out", "Priya is out from September 28 to October 2", at=WEDNESDAY, category="work"),
        _fact("physio", "The physio is next Friday at 10:30", at=WEDNESDAY, category="health"),
        _fact("gone", "The dentist is on Saturday", at=WEDNESDAY, category="health"),
        _fact("none", "Aaron drives a 2019 Subaru WRX", at=WEDNESDAY),
    ).with_columns(status=pl.when(pl.col("id") == "gone").then(pl.lit("archived")).otherwise(pl.col("status")))
    triggers = lifecycle.forward_triggers(items, datetime(2026, 9, 26, tzinfo=UTC))
    assert triggers.schema == pl.Schema(lifecycle.TRIGGER_SCHEMA)
    assert triggers.select("trigger_date", "item_ids").rows() == [
        (date(2026, 9, 28), ["out"]), (date(2026, 10, 2), ["out"])]  # the physio date (18th) is over a week ago
    assert triggers["message"][0] == "Priya is out from September 28 to October 2"
    assert triggers["source_created_at"][0] == WEDNESDAY
    overdue = lifecycle.forward_triggers(items, datetime(2026, 9, 20, tzinfo=UTC))
    assert overdue["trigger_date"].to_list()[0] == date(2026, 9, 18)  # two days overdue: kept


# --- MEMORY.md --------------------------------------------------------------------------------

def test_memory_md_lists_active_promoted_items_by_category():
    items = _items(
        _fact("wrx", "Aaron's WRX oil change is due at 11,799 miles"),
        _fact("tires", "Aaron's WRX has winter tires", importance=0.9),
        _fact("allergy", "Aaron is allergic to penicillin", category="health"),
        _fact("warranty", "Aaron's warranty renewal is $499", trust="untrusted"),
        _fact("old", "Aaron's WRX oil change was due at 6,000 miles"),
        _fact("plain", "Aaron likes rally racing", category="hobbies"),
    ).with_columns(
        promoted=pl.col("id") != "plain",
        status=pl.when(pl.col("id") == "old").then(pl.lit("superseded")).otherwise(pl.col("status")),
    )
    assert lifecycle.memory_md(items) == "\n".join([
        "# MEMORY", "", lifecycle.housekeeping.INTRO, "",
        "## Health", "", "- Aaron is allergic to penicillin", "",
        "## Vehicle", "", "- Aaron's WRX has winter tires", "- Aaron's WRX oil change is due at 11,799 miles",
        "- Aaron's warranty renewal is $499 [untrusted]", "",
    ])
    assert "Nothing promoted yet" in lifecycle.memory_md(items.with_columns(promoted=pl.lit(False)))


def test_effective_score_is_importance_times_confidence_times_reinforcement():
    row = {"importance": 0.5, "confidence": 0.8, "reinforcement": 3.0}
    assert scoring.effective_score(CONFIG, row) == pytest.approx(0.5 * 0.8 * math.exp(0.2 * 3.0))


def test_two_standing_rules_that_disagree_are_compared_whatever_category_each_was_filed_under(embedder):
    items = _items(_fact("never", "Aaron wants the assistant to never force-push to main.", category="process",
                         kind="negative"),
                   _fact("do", "Aaron decided the assistant should force-push to main.", category="decision",
                         kind="decision", at=T0 + timedelta(days=2), session="s2"))
    out, report = lifecycle.apply(items, embedder.embed(items["content"].to_list()), CONFIG, T0 + timedelta(days=3))
    assert _row(out, "never")["contradicts"] == ["do"] and _row(out, "do")["contradicts"] == ["never"]
    # Facts of different categories are still not compared: a category is a subject's scope.
    facts = _items(_fact("a", STANDUP_OLD, category="work"),
                   _fact("b", STANDUP_NEW, category="personal", at=T0 + timedelta(days=2), session="s2"))
    out, _ = lifecycle.apply(facts, embedder.embed(facts["content"].to_list()), CONFIG, T0 + timedelta(days=3))
    assert _row(out, "a")["contradicts"] == [] and _row(out, "b")["contradicts"] == []
