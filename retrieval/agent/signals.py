"""A quick local look at one turn: does it say something the memory should take at once?

``scan(text)`` names the signals a turn's text fires, by regular expressions only (a few
precompiled patterns and the credential rules' anchor test, so a turn costs well under
the 10 ms budget; the benchmarks measure it):

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
* ``date`` — a day is named: an explicit date (``retrieval.text.DATE``), a weekday or a
  relative day ("tomorrow", ``retrieval.text.WEEKDAYS`` / ``RELATIVE_DAYS``), "next week",
  "in 3 days", "in March".
* ``credential`` — a credential or personal number (``retrieval.credentials.has_credential``).

``high_signal(text)``: any of remember, correction, rule or credential. A date alone is
not: most turns name a day in passing, and the pipeline reads dates anyway.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from retrieval import credentials
from retrieval.text import DATE, MONTHS, RELATIVE_DAYS, WEEKDAYS, says_changed

SIGNALS: tuple[str, ...] = ("remember", "correction", "rule", "date", "credential")
HIGH_SIGNALS = frozenset({"remember", "correction", "rule", "credential"})

_I = re.IGNORECASE
# Where a request starts: the text's or a sentence's start, or after a softener.
_REQUEST_START = r"(?:^|[.!?;:\n]\s*|,\s*|\b(?:please|pls|and|also|just|so|oh|ok(?:ay)?|hey)\s+)"

REMEMBER = re.compile(
    _REQUEST_START + r"(?:remember\b(?!\s+when\b)|(?:don'?t|do\s+not|never)\s+forget\b|keep\s+in\s+mind\b|"
    r"make\s+a\s+note\b|note\s+(?:that|this)\b|note\s*:|remind\s+me\b)"
    r"|\b(?:want|need)\s+you\s+to\s+remember\b|\b(?:can|could|will|would)\s+you\s+(?:please\s+)?remember\s+(?:that|this|to)\b"
    r"|\bfor\s+future\s+reference\b", _I)

CORRECTION = re.compile(
    r"(?:^|[.!?;\n]\s*)(?:(?:no|nope|oh|wait|hmm+|um+|sorry)[,.!]*\s+)*actually\b"
    r"|\b(?:no|sorry|oops|wait)[,.!]*\s+I\s+meant\b|\bwhat\s+I\s+meant\s+(?:was|is)\b|\bI\s+meant\s+to\s+say\b"
    r"|\bthat(?:'s|\s+is|\s+was)\s+(?:wrong|incorrect|not\s+(?:right|correct|true|what\s+I\s+(?:said|meant)))\b"
    r"|\bcorrection\s*:|\bscratch\s+that\b|\bI\s+was\s+wrong\b|\bI\s+misspoke\b", _I)

RULE = re.compile(
    r"\b(?:always|never(?!\s+mind\b)|from\s+now\s+on|going\s+forward|(?:don'?t|do\s+not)\s+ever)\b", _I)

# The calendar words come from retrieval.text (one month and weekday table). A bare month
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
    if REMEMBER.search(text):
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
