"""When tier 1 answers alone: does a summary line hold what the user asked?

A line is on topic when it alone holds ``[injection] summary_coverage`` of the query's
terms (terms spread over a page do not count: a person's name is on every line of their
summaries). On topic is enough for a statement ("I'm taking the WRX in on Saturday"):
the agent needs what is known about it. A question asks for something its own words do
not say, so offline a line answers it only when it holds an answer of the kind asked —
a time for "when", a number for "how many", a name the question lacks for "who". Other
questions ("what", "why", "how", yes/no) cannot be checked without a model: tier 2 runs.
"""

from __future__ import annotations

import re

from retrieval.dates import MONTHS, WEEKDAYS
from retrieval.text import NUMBER, NUMBER_WORDS, tokens
from retrieval.text import QUERY_STOPWORDS as STOPWORDS

_TIME = re.compile(
    r"\b(?:\d{1,4}(?:st|nd|rd|th)?|yesterday|today|tonight|tomorrow|ago|recently|last|next|since|"
    r"weekend|week|weeks|month|months|year|years|morning|afternoon|evening|night|"
    r"spring|summer|autumn|fall|winter|" + "|".join(WEEKDAYS + MONTHS) + r")\b",
    re.IGNORECASE)
# A quantity: a number (``retrieval.text``), in words too, or a vague one ("a dozen", "twice").
_QUANTITY = re.compile(
    r"\b(?:" + NUMBER.pattern + "|" + "|".join(sorted(NUMBER_WORDS.keys() - {"a", "an"}, key=len, reverse=True))
    + r"|dozen|hundred|thousand|million|twice|once|several|a couple)\b", re.IGNORECASE)


def _names(text: str) -> list[str]:
    """Capitalised words of two letters or more: the names a line or message says."""
    return [t for t in tokens(text) if t[0].isupper() and len(t) > 1]
_ASKS = (
    ("time", re.compile(r"\b(?:when|what (?:time|date|day|year|month)|how long ago)\b", re.IGNORECASE)),
    ("number", re.compile(r"\bhow (?:many|much|old|long|often|far)\b", re.IGNORECASE)),
    ("name", re.compile(r"\b(?:who|whom|whose)\b", re.IGNORECASE)),
)


def asked(message: str) -> str | None:
    """What the message asks for: ``time``, ``number``, ``name``, ``open`` (another
    question) or None (not a question)."""
    questions = [s for s in re.split(r"(?<=[.!?])\s+", message.strip()) if s.rstrip().endswith("?")]
    if not questions:
        return None
    question = questions[-1]
    for kind, pattern in _ASKS:
        if pattern.search(question):
            return kind
    return "open"


def answers(line: str, kind: str | None, message: str) -> bool:
    """Whether an on-topic ``line`` holds an answer of the ``kind`` the message asked."""
    if kind is None:
        return True
    if kind == "time":
        return bool(_TIME.search(line))
    if kind == "number":
        return bool(_QUANTITY.search(line))
    if kind == "name":
        said = {_word(w) for w in _names(message)}
        return any(_word(w) not in said and _word(w) not in STOPWORDS for w in _names(line))
    return False


def _word(name: str) -> str:
    return name.lower().removesuffix("'s")


def on_topic(line: str, terms: re.Pattern[str], n_terms: int, coverage: float) -> float | None:
    """The share of the query's terms the line holds, or None below ``coverage``."""
    covered = len(set(terms.findall(line.lower()))) / n_terms
    return covered if covered >= coverage else None
