"""Whether a stated change gives a new value of the same kind as an earlier fact's: the
meaning of the values, not of the sentences (issue 29, item 3).

A change names its new value and an earlier fact names the old one, but the two facts
often share no word and read little alike as sentences: "Siobhan moved to Galway" after
"Siobhan is trying to find a running club in Dublin", "Ola traded her car in for a Kia
EV6" after "Ola's Skoda Octavia has an engine light on". What they share is the kind of
thing that changed: Galway and Dublin are both cities, a Kia EV6 and a Skoda Octavia both
cars, vegetarian and vegan both diets, $15 and $10 a week both amounts. The embedding of
a value phrase alone says that (MiniLM reads "Dublin" ~ "Galway" at 0.81, "vegan" ~
"vegetarian" 0.75), while a value and an unrelated phrase of the other fact stay apart
("Austin" ~ "December 3" 0.25, "Galway" ~ "running club" 0.26).

The phrases compared are each fact's ``value`` and its ``entities`` (what extraction wrote:
names and noun phrases), less the people's names (whom the facts are about, not what
changed) and less what both facts name, or one names within the other (the thing that
stayed: "Slack" in "keeps Slack in dark mode" → "uses Slack in the light theme", "party" in
"the birthday party is in a month" → "the party was a hit"). A pair of facts is as alike as its most
alike pair of phrases, one from each. Validity asks this only of a stated change, among
the same person's earlier facts (``validity._slot_change``).

Without the model, ``coarse`` tells a number from a name from a thing, and ``head`` names
the kind of thing a value is by its last word ("fraud detection team" → "team").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence

import numpy as np

from memory_assets.lib.extraction.structure import normal
from retrieval.text import CHANGE_ADVERBS, STOPWORDS, value_words

# Pronouns and placeholders extraction may leave as a value: they name no kind of thing.
_EMPTY = frozenset("it this that these those there here one something anything everything".split())


def phrases(row: dict, people: Collection[str]) -> list[str]:
    """The value phrases of a fact: its ``value`` and ``entities``, without the people's
    names (``people``, lower case, each name and each of its words) and words that say nothing."""
    out: dict[str, str] = {}
    for text in (row.get("value") or "", *(row.get("entities") or ())):
        text = " ".join(text.split())
        if text.lower() in _EMPTY or not value_words(text) - frozenset(people):
            continue
        out.setdefault(text.lower(), text)
    return list(out.values())


def most_alike(new: dict, older: Sequence[dict], people: Collection[str],
               embed: Callable[[list[str]], Sequence[Sequence[float]]]) -> np.ndarray:
    """For each fact of ``older``, how alike its most alike value phrase is to one of
    ``new``'s (cosine of the phrases' embeddings, in [-1, 1]; 0 when either has none left
    once the phrases both name are set aside). One ``embed`` call for all the phrases."""
    mine = phrases(new, people)
    theirs = [phrases(o, people) for o in older]
    texts = list(dict.fromkeys([*mine, *(p for ps in theirs for p in ps)]))
    out = np.zeros(len(older), dtype=np.float32)
    if not mine or not any(theirs):
        return out
    vectors = np.asarray(embed(texts), dtype=np.float32)
    at = {t: i for i, t in enumerate(texts)}
    for k, ps in enumerate(theirs):
        # A phrase both name, or one that names the other ("party" ~ "birthday party",
        # "Denver" ~ "Denver, Colorado"), is the thing that stayed, not a new value.
        shared = {p for p in ps if any(_names(p, q) for q in mine)} | {q for q in mine if any(_names(p, q) for p in ps)}
        a = [at[p] for p in mine if p not in shared]
        b = [at[p] for p in ps if p not in shared]
        if a and b:
            out[k] = float(np.max(vectors[a] @ vectors[b].T))
    return out


def _names(a: str, b: str) -> bool:
    """One phrase names the other: its content words (``value_words``) are all in the other's."""
    x, y = value_words(a), value_words(b)
    return bool(x and y) and (x <= y or y <= x)


# --- coarse kinds, without the model ---------------------------------------------------

def coarse(value: str | None) -> str | None:
    """What kind of value it is, coarsely: "number" ("12 km", "$49"), "name" ("PureGym",
    "Anytime Fitness"), "thing" ("oat flat white"); None for no value."""
    if not value or not value.strip():
        return None
    # Its head, before any preposition: "staff nurse at St. Luke's" is a thing, "new GP" a name.
    front = re.split(r"\s(?:at|on|in|for|of|with|from|to|by)\s", value, maxsplit=1)[0]
    words = [w for w in front.split() if w.lower() not in STOPWORDS]
    if any(any(c.isupper() for c in w) for w in words):
        return "name"  # "MySQL 8", "iPhone 13", "new GP"
    return "number" if any(c.isdigit() for c in value) else "thing"


def head(value: str | None) -> str | None:
    """The last content word of a value: what kind of thing it is ("fraud detection team"
    → "team", "90 minutes" → "minutes"); None for a bare number or name."""
    words = [w for w in (normal(value) or "").split() if w not in STOPWORDS and w not in CHANGE_ADVERBS and w.isalpha()]
    return words[-1] if words else None
