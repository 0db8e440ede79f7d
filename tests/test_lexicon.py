"""``retrieval.text``: the words every stage shares. Verb agreement comes from
lemminflect's lexicon, so a verb no suffix table listed still agrees."""

from __future__ import annotations

import pytest

from retrieval.text import third_person


@pytest.mark.parametrize("verb, expected", [
    ("prefer", "prefers"),
    ("try", "tries"),
    ("fix", "fixes"),
    ("go", "goes"),
    ("undergo", "undergoes"),
    ("have", "has"),
    ("do", "does"),
    ("don't", "doesn't"),
    ("haven't", "hasn't"),
    ("am", "is"),
    ("are", "is"),
    ("were", "was"),
    ("veto", "vetoes"),
    ("quiz", "quizzes"),
    ("Prefer", "Prefers"),
    ("rebase", "rebases"),  # not in the lexicon: inflected by its rules
])
def test_a_base_form_agrees_with_a_third_person_subject(verb, expected):
    assert third_person(verb) == expected


@pytest.mark.parametrize("verb", ["went", "retook", "used", "rebased", "spent", "should've", "to", "who", "with"])
def test_a_form_that_is_not_a_base_verb_is_left_as_it_is(verb):
    assert third_person(verb) == verb
