"""A quick local look at one turn: does it say something the memory should take at once?

``scan(text)`` names the signals a turn's text fires, by regular expressions only (a few
precompiled patterns and the credential rules' anchor test, so a turn costs well under
the 10 ms budget; the benchmarks measure it). The cues are ``retrieval.intent``'s, the ones
the offline extractor and the query rewrite read:

* ``remember`` — a request to keep something: "remember that…", "don't forget…",
  "keep in mind…", "note that…", "make a note", "remind me…". Only the request counts,
  at the start of a sentence or after "please", "and", "so"…: "I remembered the keys"
  and "I remember when we met" tell a story, "do you remember…?" asks the memory, and
  "remember when…" reminisces; none of them asks to keep anything.
* ``correction`` — the user takes back what was said: "Actually, …" opening a sentence,
  "no, I meant…", "that's wrong", "correction:", "scratch that", and wording that marks a
  new state replacing an old one ("no longer", "not … anymore": ``retrieval.text.says_changed``).
* ``rule`` — a standing instruction or habit: "always", "never" ("never mind" aside),
  "from now on", "going forward", "don't ever". Whole words only: "hallways" is no rule.
* ``date`` — a day is named: an explicit date (``retrieval.dates.DATE``), a weekday or a
  relative day ("tomorrow", ``retrieval.dates.WEEKDAYS`` / ``RELATIVE_DAYS``), "next week",
  "in 3 days", "in March".
* ``credential`` — a credential or personal number (``retrieval.credentials.has_credential``).

``high_signal(text)``: any of remember, correction, rule or credential. A date alone is
not: most turns name a day in passing, and the pipeline reads dates anyway.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from retrieval import credentials
from retrieval.intent import ASKS_TO_KEEP, CORRECTION, RULE
from retrieval.dates import DATE, MONTHS, RELATIVE_DAYS, WEEKDAYS
from retrieval.text import says_changed

SIGNALS: tuple[str, ...] = ("remember", "correction", "rule", "date", "credential")
HIGH_SIGNALS = frozenset({"remember", "correction", "rule", "credential"})

_I = re.IGNORECASE

# The calendar words come from retrieval.dates (one month and weekday table). A bare month
# counts after a preposition and capitalised ("in March", "by May"): "may" and "march"
# are verbs far more often than months.
_CALENDAR = re.compile(
    r"\b(?:" + "|".join((*WEEKDAYS, *RELATIVE_DAYS)) + r")s?\b"
    r"|\b(?:next|this|last|coming)\s+(?:week|weekend|month|year)\b"
    r"|\bin\s+(?:a|an|\d+)\s+(?:day|week|month|year)s?\b|\b\d+\s+(?:day|week|month|year)s?\s+ago\b"
    r"|\b(?:in|by|until|since|before|after|early|mid|late|next|last|this|of)\s+(?-i:"
    + "|".join(m.capitalize() for m in MONTHS) + r")\b", _I)


def scan(text: str, *, pii: Iterable[str] = credentials.DEFAULT_PII) -> frozenset[str]:
    """The signals (of ``SIGNALS``) that ``text`` fires.

    Args:
        text: one turn's text (the user's input, a tool's output, the reply).
        pii: the personal-data kinds that count as ``credential`` besides credentials.
    """
    found = set()
    if ASKS_TO_KEEP.search(text):
        found.add("remember")
    if CORRECTION.search(text) or says_changed(text):
        found.add("correction")
    if RULE.search(text):
        found.add("rule")
    if DATE.search(text) or _CALENDAR.search(text):
        found.add("date")
    if credentials.has_credential(text, pii=pii):
        found.add("credential")
    return frozenset(found)


def high_signal(text: str, *, pii: Iterable[str] = credentials.DEFAULT_PII) -> bool:
    """Whether ``text`` should go to the pipeline at once: it fires a signal of ``HIGH_SIGNALS``."""
    return not HIGH_SIGNALS.isdisjoint(scan(text, pii=pii))
