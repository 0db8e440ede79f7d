"""Which events the memory keeps: a life event is autobiography, an errand is not.

"Caroline went to an LGBTQ support group on 7 May" is still worth knowing months later;
"Aaron took a wheel-throwing class" with nothing ever coming back to it is not. An event
in a ``lasting`` category (personal, relationships, work) lands in the standard tier and
decays like any fact; elsewhere an event stays transient and is purged within weeks.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memory_assets.lib.extraction.facts import build_facts
from retrieval.config import load_config
from retrieval.embeddings import Embedder
from retrieval.schema import Candidate, Turn
from tests.test_lifecycle import Nights, _fact, _night, _row

CONFIG = load_config()


@pytest.mark.parametrize("kind, category, tier", [
    ("event", "personal", "standard"),
    ("event", "relationships", "standard"),
    ("event", "work", "standard"),
    ("event", "hobbies", "transient"),
    ("event", "health", "transient"),
    ("event", None, "transient"),
    ("decision", "personal", "permanent"),
    ("fact", "hobbies", "standard"),
])
def test_an_event_is_transient_unless_its_category_is_lasting(kind, category, tier):
    assert CONFIG.tier_for(kind, category) == tier


def test_a_missing_tier_follows_the_category_and_an_extractors_own_tier_is_kept():
    said = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    turn = Turn(session_id="s1", turn=1, role="user", content="I went to a LGBTQ support group yesterday.",
                content_at=said, speaker="Caroline", external_id="D1:3", resource_id="r1")
    candidates = [
        Candidate(content="Caroline went to a LGBTQ support group", category="personal", kind="event", source_turns=[1]),
        Candidate(content="Caroline went to a LGBTQ meetup downtown", category="personal", kind="event",
                  tier="transient", source_turns=[1]),
    ]
    facts = build_facts(candidates, [turn], CONFIG, session_id="s1", extractor="test", prompt_version="t", now=said).facts
    assert facts["tier"].to_list() == ["standard", "transient"]


@pytest.fixture(scope="module")
def embedder():
    return Embedder(CONFIG)


def test_a_life_event_outlives_twelve_weeks_while_an_unreferenced_errand_is_purged(embedder):
    life = _fact("group", "Caroline went to a LGBTQ support group", category="personal", kind="event",
                 tier=CONFIG.tier_for("event", "personal"))
    errand = _fact("pottery", "Aaron took a wheel-throwing class at the pottery studio", category="hobbies",
                   kind="event", tier=CONFIG.tier_for("event", "hobbies"))
    nights = Nights([life, errand], embedder)
    purged_on = None
    for day in range(1, 85):  # nightly, and the weekly archive pass on every seventh night
        items, report = nights.run(_night(day), weekly=day % 7 == 0)
        if "pottery" in report.ids["purged"]:
            purged_on = day
        assert _row(items, "group")["status"] == "active", f"night {day}"
    assert purged_on is not None and purged_on <= 50
    group = _row(items, "group")
    assert group["tier"] == "standard"
    # Decayed like any fact (× 0.95 per unreferenced week), far above the purge line.
    assert group["importance"] == pytest.approx(0.5 * 0.95 ** 11)
