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
