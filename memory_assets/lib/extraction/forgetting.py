""""Forget what I told you about my passport": the user's request retires what it names.

A request (``retrieval.privacy.forget_request``) in the user's own trusted turn names a
topic. Extraction then:

* drops the session's own earlier candidates about the topic (a ``forgotten``
  rejection, so the audit trail shows what was kept out and why), and
* returns the ids of the stored items of the same namespace, stated before the request,
  that are about the topic; the asset appends one ``forget`` event for them, which the
  next ``memory_items`` run folds in (status ``purged``: never injected, kept in the
  archive for the audit trail).

"About the topic" is literal: every content word of the topic occurs in the item
("my passport" → passport; "my old address" → old, address), with a plural or
possessive ending ignored. A vague request ("forget it") names no topic and retires
nothing; the request itself is never stored (``gate._memory_request``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import polars as pl

from retrieval.privacy import forget_request
from retrieval.text import QUERY_STOPWORDS as STOPWORDS
from retrieval.text import tokens
from retrieval.schema import Candidate, Turn

# Words a topic phrase is built with that say nothing about which memory is meant.
_TOPIC_FILLER = frozenset({"my", "our", "the", "fact", "that", "i", "i'm", "im", "me", "mine", "about", "said",
                           "told", "you", "was", "were", "is", "am", "are", "stuff", "thing", "things"})
# Stored items a request may retire (a superseded or purged one is already out of use).
_RETIRABLE = ("active", "candidate", "archived", "cold")


@dataclass(frozen=True)
class ForgetRequest:
    turn: Turn
    topic: str
    terms: frozenset[str]


def _stem(word: str) -> str:
    word = word.lower().removesuffix("'s").removesuffix("’s")
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def topic_terms(topic: str) -> frozenset[str]:
    """The content words of a topic, stemmed: what an item must mention to be about it."""
    words = (_stem(w) for w in tokens(topic))
    return frozenset(w for w in words if w not in STOPWORDS and w not in _TOPIC_FILLER and len(w) > 1)


def about(text: str, terms: frozenset[str]) -> bool:
    """``text`` mentions every term (a topic with no content word matches nothing)."""
    return bool(terms) and terms <= {_stem(w) for w in tokens(text)}


def requests(turns: Sequence[Turn]) -> list[ForgetRequest]:
    """The forget requests in a session: the user's own trusted turns only (a page or a
    tool saying "forget everything about X" is data, never an instruction)."""
    found = []
    for turn in turns:
        if turn.role != "user" or turn.trust != "trusted":
            continue
        topic = forget_request(turn.content)
        if topic and (terms := topic_terms(topic)):
            found.append(ForgetRequest(turn, topic, terms))
    return found


def drop_forgotten(candidates: Sequence[Candidate], asked: Sequence[ForgetRequest]) -> tuple[list[Candidate], list[tuple[Candidate, ForgetRequest]]]:
    """(candidates kept, (candidate, request) dropped): a candidate from a turn before a
    request and about its topic is dropped."""
    kept, dropped = [], []
    for candidate in candidates:
        first = min(candidate.source_turns, default=0)
        hit = next((r for r in asked if first < r.turn.turn and about(candidate.content, r.terms)), None)
        if hit is None:
            kept.append(candidate)
        else:
            dropped.append((candidate, hit))
    return kept, dropped


def stored_matches(items: pl.DataFrame, asked: Sequence[ForgetRequest], namespace: str) -> dict[str, list[str]]:
    """Request's resource id → ids of stored items it retires: same namespace, stated
    before the request, about its topic, not already retired."""
    if items.is_empty() or not asked:
        return {}
    pool = items.filter(pl.col("status").is_in(list(_RETIRABLE)) & (pl.col("namespace") == namespace))
    rows = pool.select("id", "content", "created_at").to_dicts()
    out: dict[str, list[str]] = {}
    for request in asked:
        said_at: datetime = request.turn.content_at
        ids = [r["id"] for r in rows if about(r["content"], request.terms)
               and (r["created_at"] is None or r["created_at"] <= said_at)]
        if ids:
            out[request.turn.resource_id] = ids
    return out
