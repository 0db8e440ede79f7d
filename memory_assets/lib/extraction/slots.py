"""What a fact is about without whom it is about: its slot text (issue 29).

"Camila keeps Slack in dark mode" and "Camila uses Slack in the light theme now" read
alike because both say "Camila", and so do "Lars's budget is around 150 euros" and "Lars
moved to Utrecht". Without the people's names the first pair is still alike ("keeps Slack
in dark mode" ~ "uses Slack in the light theme now") and the second is not: the slot text
is the fact's own words with the names of the people in it (and their "'s") left out,
which validity embeds to tell whether a stated change is about an earlier fact's slot
(``items.validity``). Written once at extraction, from the parse; later stages read the field.
"""

from __future__ import annotations


def _person(token, stand_in: str) -> bool:
    return token.text == stand_in or token.ent_type_ == "PERSON" or (
        token.pos_ == "PROPN" and token.dep_ in ("nsubj", "nsubjpass", "poss"))


def slot_text(doc, stand_in: str) -> str | None:
    """The parsed sentence without the people's names and their possessive "'s" (the
    known subject appears as ``stand_in``); None when nothing else is left."""
    dropped = {t.i for t in doc if _person(t, stand_in)}
    kept = [t for t in doc if t.i not in dropped and not (t.dep_ == "case" and t.head.i in dropped)]
    text = " ".join("".join(t.text_with_ws for t in kept).split())
    return text if any(t.is_alpha and not t.is_stop for t in kept) else None
