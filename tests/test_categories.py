"""The offline extractor's category choice (memory_assets/lib/extraction/categories.py):
keywords as written and as lemmas, code-like words, and the nearest description when
no keyword matches."""

from __future__ import annotations

import numpy as np
import pytest

from memory_assets.lib.extraction.categories import Categorizer, phrases_of
from retrieval.config import load_config

CONFIG = load_config()


@pytest.fixture(scope="module")
def categorizer() -> Categorizer:
    return Categorizer(CONFIG)


@pytest.mark.parametrize("text, category, keyword", [
    ("We deployed the hotfix before lunch.", "process", "deploy"),   # "deploy" finds "deployed"
    ("I preferred the aisle seat on long flights.", "preferences", "prefer"),
    ("My grandmother's oil changes are done at the dealer.", "maintenance", "oil change"),  # a phrase of lemmas
])
def test_an_inflected_keyword_maps_to_its_category(categorizer, text, category, keyword):
    assert keyword not in [k for _, k in categorizer.hits(text)]  # not as written
    found, keywords = categorizer.best(text, "personal")
    assert found == category and keyword in keywords


def test_like_as_a_comparison_is_not_a_liking(categorizer):
    assert ("preferences", "like") not in categorizer.lemma_hits("It looks like rain.")
    assert ("preferences", "like") in categorizer.hits("I like rain.")


def test_a_surface_keyword_is_counted_once_not_again_as_its_lemma(categorizer):
    assert categorizer.lemma_hits("We decided to keep it.") == []


def test_a_fact_with_no_keyword_gets_the_nearest_category_by_meaning(categorizer):
    text = "Noor has a persistent cough and a fever."
    assert categorizer.hits(text) == [] and categorizer.lemma_hits(text) == []
    assert categorizer.best(text, "personal") == ("health", [])


def test_without_a_clearly_nearer_description_the_default_stands(categorizer):
    assert categorizer.best("Okay then.", "casual") == ("casual", [])


def test_code_like_words_make_a_fact_about_work(categorizer):
    assert categorizer.best("The runner sits in vpc-runners-3 now.", "casual")[0] == "work"
    assert categorizer.best("Anything under billing/ goes through Dana.", "personal")[0] == "work"
    # …but ordinary hyphenated words are not code.
    assert categorizer.best("I found a gluten-free bakery downtown.", "personal")[0] != "work"


def test_skipped_categories_are_never_chosen(categorizer):
    assert categorizer.best("The service status is green.", "personal", skip=("operational",))[0] != "operational"


def test_config_keywords_and_descriptions_are_honoured():
    config = CONFIG.replace(categories={
        "pets": {"weight": 0.5, "keywords": ["kibble", "vet"], "description": "Animals a person keeps: pets"},
    })
    vectors = {"Animals a person keeps": [1.0, 0.0], "pets": [1.0, 0.0], "Mochi naps all day.": [0.9, 0.1]}

    def embed(texts):
        return np.array([vectors.get(t, [0.0, 1.0]) for t in texts], dtype=np.float32)

    categorizer = Categorizer(config, embed=embed)
    categorizer.descriptions = {"pets": config.categories["pets"].description}  # only the new one is near
    assert categorizer.best("Mochi's vets said to switch food.", "personal") == ("pets", ["vet"])
    assert categorizer.best("Mochi naps all day.", "personal") == ("pets", [])


def test_a_category_without_description_is_chosen_by_keywords_only(categorizer):
    assert "casual" not in categorizer.descriptions
    assert "health" in categorizer.descriptions


def test_a_description_is_compared_phrase_by_phrase():
    assert phrases_of("Health: an illness, an injury; sleep.") == ["Health", "an illness", "an injury", "sleep"]


def test_in_a_session_about_code_a_fact_nothing_places_is_about_the_work():
    from datetime import datetime, timezone

    from memory_assets.lib.extraction.categories import technical_session
    from memory_assets.lib.extraction.offline import OfflineExtractor
    from retrieval.config import load_config
    from retrieval.schema import Turn

    t0 = datetime(2026, 3, 1, 9, tzinfo=timezone.utc)

    def session(*lines: str) -> list[Turn]:
        turns = []
        for i, line in enumerate(lines):
            turns += [Turn("s1", 2 * i + 1, "user", line, t0, "Ines"), Turn("s1", 2 * i + 2, "assistant", "OK.", t0, "assistant")]
        return turns

    coding = session("The build fails in src/billing/invoice.py after the bump to 2.4.1.",
                     "Run it with --no-cache first.", "I own the invoice rendering now.")
    chat = session("I own a small sailboat now.", "We keep it at the marina in Cascais.")
    assert technical_session(coding) and not technical_session(chat)
    extractor = OfflineExtractor(load_config())
    owned = [c for c in extractor.extract(coding).candidates if "invoice rendering" in c.content]
    assert owned and owned[0].category == "work"
    boat = [c for c in extractor.extract(chat).candidates if "sailboat" in c.content]
    assert boat and boat[0].category != "work"


def test_a_rule_for_the_assistant_is_how_work_is_done_at_work_and_a_preference_elsewhere():
    from datetime import datetime, timezone

    from memory_assets.lib.extraction.offline import OfflineExtractor
    from retrieval.config import load_config
    from retrieval.schema import Turn

    t0 = datetime(2026, 3, 1, 9, tzinfo=timezone.utc)

    def rule_in(*lines: str):
        turns = [Turn("s1", 1, "assistant", "How can I help?", t0, "assistant")]
        turns += [Turn("s1", i + 2, "user", line, t0, "Ines") for i, line in enumerate(lines)]
        return [c for c in OfflineExtractor(load_config()).extract(turns).candidates if c.directive][0]

    coding = rule_in("The linter fails on src/gen/models_pb2.py again.", "Never touch the generated/ folder by hand.")
    assert coding.kind == "negative" and coding.category == "process"
    personal = rule_in("Never book me flights that leave before 7am.")
    assert personal.category == "preferences"
