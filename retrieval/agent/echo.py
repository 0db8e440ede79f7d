"""Which injected items an agent's reply used (echo) and which it ignored (fizzle), for
``MemoryClient.record_response`` (``record``: a ``referenced`` and an ``ignored`` event).
Neither is a user-confirmed reference, so neither reinforces; the pipeline moves each
item's retrieval priority a little."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path

import numpy as np

from retrieval import events
from retrieval.agent.injection import Injection
from retrieval.agent.rewrite import keywords
from retrieval.agent.search import Hit
from retrieval.agent.trust import item_ids
from retrieval.config import MemoryConfig
from retrieval.text import QUERY_STOPWORDS

# Where a reply's sentences end, for the paraphrase test.
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def used(injection: Injection, reply: str, config: MemoryConfig,
         embed: Callable[[list[str]], np.ndarray]) -> dict[str, bool]:
    """Hit id → whether ``reply`` states it: ``[feedback] echo_overlap`` of its content
    words or one of its numbers, or a reply sentence at cosine ≥ ``[feedback]
    echo_similarity`` (the same fact in other words)."""
    said = {w.lower() for w in keywords(reply)}
    out: dict[str, bool] = {}
    for hit in injection.items:
        terms = {w.lower() for w in keywords(hit.content)} - QUERY_STOPWORDS
        numbers = {t for t in terms if t[:1].isdigit()}
        overlap = len(terms & said) / max(len(terms), 1)
        out[hit.id] = overlap >= config.feedback.echo_overlap or bool(numbers & said)
    unsure = [h for h in injection.items if not out[h.id]]
    sentences = [s.strip() for s in _SENTENCE.split(reply) if len(s.split()) >= 3]
    if unsure and sentences:
        vectors = embed([h.content for h in unsure] + sentences)
        similarity = vectors[:len(unsure)] @ vectors[len(unsure):].T
        threshold = float(config.feedback.echo_similarity)
        for hit, best in zip(unsure, similarity.max(axis=1)):
            out[hit.id] = bool(best >= threshold)
    return out


def cited(hits: Sequence[Hit]) -> list[str]:
    """The items ``hits`` stand for, once each in order: a summary line counts for the
    items it cites."""
    return list(dict.fromkeys(i for hit in hits for i in item_ids(hit)))


def record(injection: Injection, reply: str, config: MemoryConfig, embed: Callable[[list[str]], np.ndarray],
           events_dir: Path, now: datetime, *, session_id: str | None, pii: Iterable[str]) -> dict[str, bool]:
    """``used``, recorded: a ``referenced`` event for the items the reply used and an
    ``ignored`` one for the rest (an event only when it names an item)."""
    found = used(injection, reply, config, embed)
    by_id = {h.id: h for h in injection.items}
    for type, wanted in (("referenced", True), ("ignored", False)):
        if ids := cited([by_id[h] for h, u in found.items() if u is wanted]):
            events.record(events_dir, type, ids, now, session_id=session_id, pii=pii)
    return found
