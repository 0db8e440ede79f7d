"""The typed fields a fact carries besides its wording (``Candidate``, ``FACT_SCHEMA``).

An extractor may give them; what it leaves out is read here, once, from what was said:
the ``directive`` of a rule-like fact (below) and the future days it points to
(``remind_on``, ``retrieval.dates.future_dates``). The same reading runs when the agent rewords an item
(``update``), with the structure too (``reworded``), so the fields follow the words. Nothing later parses the wording back:
lessons read ``directive``, forward triggers read ``remind_on``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime
from functools import lru_cache
from typing import Any

import polars as pl

from retrieval.schema import FACT_SCHEMA, Candidate
from retrieval.lessons import LESSON_KINDS
from retrieval.dates import future_dates
from retrieval.text import PEOPLE_NOUNS, denies_or_ends, numbers, written_words

TYPED = ("subject", "directive", "reported_by", "remind_on")
# Structure columns added later (issue 14); a fact written before has them null or empty.
STRUCTURE = ("subject_key", "relation", "value", "states_change", "tentative", "change_cue", "slot", "valid_from",
             "steps", "prerequisites", "warnings", "trigger_patterns")
# Added with project scopes; a fact written before is global (its scope) with no project.
SCOPED = ("project",)


# --- directives ---------------------------------------------------------------------------
#
# Directives: a correction, negative rule, procedure or decision as the imperative the
# agent should follow, derived once at extraction (the fact's ``directive`` field).
#
# Rule-based and deterministic, over the fact's own wording: "Priya wants the assistant
# to always run make lint before committing" → "Always run make lint before committing";
# "Priya switched from black to ruff" → "Priya prefers ruff over black". The lifecycle's
# lessons read the stored field, never the wording.


_I = re.IGNORECASE
# Rewrites, first match wins; each maps a match to the lesson's text.
_ASKED = re.compile(r"^(?P<s>.+?) (?:wants|wanted|asked|told|needs) the assistant (?P<body>.+)$", _I)
_SWITCH = re.compile(r"^(?:to )?switch(?:ed)? from (?P<old>.+?) to (?P<new>.+)$", _I)
_SWITCHED = re.compile(r"^(?P<s>.+?) (?:switched|moved|migrated|changed) from (?P<old>.+?) to (?P<new>.+)$", _I)
_NO_LONGER = re.compile(r"^(?P<s>.+?) no longer (?:wants|likes|uses|prefers|needs|eats|drinks) (?P<thing>(?!to\b).+)$", _I)
_NOW_PREFERS = re.compile(r"^(?P<s>.+?) now prefers (?P<thing>.+)$", _I)
_DECIDED = re.compile(r"^.+? (?:decided|agreed|opted|chose|promised|committed) to (?P<vp>.+)$", _I)
_SETTLED = re.compile(r"^.+? (?:settled on|went with|is going with|are going with|chose|picked) (?P<np>.+)$", _I)
_DOES_NOT = re.compile(r"\b(does|do) not\b", _I)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _imperative(body: str) -> str:
    """What follows "wants the assistant": "not to X" → "Don't X", "to always X" → "Always X"."""
    body = re.sub(r"^to\s+", "", body, flags=_I)
    if m := re.match(r"^not (?:to )?(?P<vp>.+)$", body, _I):
        return f"Don't {m['vp']}"
    return _capital(body)


def _request_text(text: str) -> str:
    """A request's words as they read at the end of a fact: one space, no closing punctuation."""
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"[.!?]*$", "", text).rstrip(" ,;:-").rstrip(".!;: ")


def assistant_directive(person: str, request: str) -> str:
    """What ``person`` asks of the assistant, as the imperative it follows, made from the
    request's own words when the fact is made (never read back from the fact's sentence):
    "to always run make lint" → "Always run make lint", "not to push" → "Don't push",
    "to switch from black to ruff" → "Priya prefers ruff over black"."""
    body = _request_text(request)
    if s := _SWITCH.match(body):
        return f"{_capital(person)} prefers {s['new']} over {s['old']}"
    return _imperative(body)


def extended_directive(directive: str, details: str) -> str:
    """A directive with the details a later sentence or reply added ("…, Sundays at 4pm")."""
    return _request_text(f"{directive}, {details}")


def lesson_text(content: str) -> str:
    """A fact's wording as a lesson (the wording itself when no rewrite applies)."""
    text = content.strip().rstrip(".!;: ")
    if m := _ASKED.match(text):
        if s := _SWITCH.match(m["body"]):
            return f"{m['s']} prefers {s['new']} over {s['old']}"
        return _imperative(m["body"])
    if m := _SWITCHED.match(text):
        return f"{m['s']} prefers {m['new']} over {m['old']}"
    if m := _NO_LONGER.match(text):
        return f"Don't suggest {m['thing']} to {m['s']}"
    if m := _NOW_PREFERS.match(text):
        return f"{m['s']} prefers {m['thing']}"
    if m := _DECIDED.match(text):
        return _capital(m["vp"])
    if m := _SETTLED.match(text):
        return f"Go with {m['np']}"
    return _capital(_DOES_NOT.sub(lambda neg: f"{neg[1]}n't", text))


# --- reading the fields ---------------------------------------------------------------------


# "Siobhan's partner Niamh", "my brother Tom" (rendered "Aaron's brother Tom"): a relative and their name.
_RELATIVE = re.compile(r"\b([A-Z][\w-]*)['’]s (" + "|".join(sorted(PEOPLE_NOUNS)) + r") ([A-Z][\w-]+)")


def subject_name(content: str, subject_key: str | None) -> str | None:
    """The name a fact gives the relative it is about ("Siobhan's partner Niamh is a
    librarian": subject ``siobhan's partner`` → ``niamh``), lower case; None when it gives none.
    Validity reads it to know that "Niamh started a new job" is about the same person."""
    for owner, noun, name in _RELATIVE.findall(content or ""):
        if f"{owner.lower()}'s {noun}" == subject_key:
            return name.lower()
    return None


# "Aaron's car is a 2019 Subaru WRX", "the WRX is my car", "Aaron calls his car the Beast":
# the fact says a thing someone has and a name are one.
_POSSESSOR = r"(?:\b[\w'-]+'s|\b(?:my|his|her|their|our))"
# What every pattern of ``_one`` needs somewhere in the text: most facts have none of it.
_SAYS = re.compile(rf"{_POSSESSOR}.*\b(?:is|was|has been)\b|\b(?:is|was)\s+{_POSSESSOR}|\bcalls?\s+{_POSSESSOR}",
                   re.IGNORECASE | re.DOTALL)
# Between the two names of a ``same_as`` pair ("car = Subaru WRX").
SAME_AS = " = "


@lru_cache(maxsize=4096)
def _one(concept: str, name: str) -> re.Pattern[str]:
    cw, nw = re.escape(concept), re.escape(name)
    return re.compile("|".join((
        rf"{_POSSESSOR}\s+{cw}s?\s+(?:is|was|has been)\s+(?:a|an|the)?\s*(?:\d{{4}}\s+)?{nw}\b",
        rf"\b{nw}\s+(?:is|was)\s+{_POSSESSOR}\s+{cw}\b",
        rf"\bcalls?\s+{_POSSESSOR}\s+{cw}\s+(?:the\s+)?{nw}\b")), re.IGNORECASE)


def same_as(content: str, entities: Sequence[str] | None) -> list[str]:
    """The pairs of the fact's ``entities`` it says are one thing, each "thing = name"
    ("Aaron's car is a 2019 Subaru WRX" → "car = Subaru WRX"): the graph merges the two."""
    entities = [e for e in dict.fromkeys(entities or ()) if e.strip()]
    if len(entities) < 2 or not _SAYS.search(content or ""):
        return []
    return [f"{a}{SAME_AS}{b}" for a in entities for b in entities
            if a != b and SAME_AS not in a + b and _one(a, b).search(content)]


def said_fields(content: str, entities: Sequence[str] | None = ()) -> dict[str, Any]:
    """What later stages compare two statements of one subject by, read from the wording
    once: the numbers it writes in digits ("$1,200 by 9:30" → ["1,200", "9:30"]), whether
    it denies or ends a state ("doesn't drink coffee anymore") and its content words, a
    name's with its capital (``text.written_words``); with its ``entities``, the pairs of
    them it says are one (``same_as``)."""
    return {"numbers": sorted(numbers(content)), "denies": denies_or_ends(content), "words": written_words(content),
            "same_as": same_as(content, entities)}


def reworded(content: str, row: dict[str, Any], config) -> dict[str, Any]:
    """The structure of a fact reworded by its user (``update``): subject, relation, value,
    whether it states a change, its cue, slot and the relative's name, read from the new
    words as extraction reads them, so that validity compares what the fact now says."""
    from memory_assets.lib.extraction.structure import fields, read_all  # the parser, loaded on use

    person = (row.get("subject_key") or "").partition("'s ")[0]
    name = next((e for e in row.get("entities") or () if e.lower() == person), None)
    shape = read_all([content], config, [name])[0]
    read = fields(Candidate(content, row.get("category") or "general"), shape, row["created_at"])
    out = {c: read[c] for c in ("subject_key", "relation", "value", "states_change", "tentative", "change_cue", "slot")}
    return {**out, "subject_name": subject_name(content, out["subject_key"])}


def read_fields(content: str, kind: str, said_at: datetime, *, directive: str | None = None,
                remind_on: list[date] | None = None, entities: Sequence[str] | None = ()) -> dict[str, Any]:
    """``directive`` and ``remind_on`` for a fact, the given ones first. Only the kinds that
    make lessons (``LESSON_KINDS``) carry a directive."""
    if kind not in LESSON_KINDS:
        directive = None
    elif directive is None:
        directive = lesson_text(content)
    return {
        "directive": directive,
        "remind_on": list(remind_on) if remind_on is not None else future_dates(content, said_at),
        **said_fields(content, entities),
    }


def with_fields(facts: pl.DataFrame) -> pl.DataFrame:
    """``facts`` with every typed field: a fact written before facts carried them
    (``remind_on`` null, not an empty list) has them read from its wording now, once
    per run until it is extracted again."""
    missing = [pl.lit(None, dtype=FACT_SCHEMA[c]).alias(c) for c in (*TYPED, *SCOPED) if c not in facts.columns]
    facts = facts.with_columns(missing) if missing else facts
    absent = [c for c in STRUCTURE if c not in facts.columns]
    if absent:
        facts = facts.with_columns(
            [(pl.lit([], dtype=FACT_SCHEMA[c]) if isinstance(FACT_SCHEMA[c], pl.List) else
              pl.col("created_at") if c == "valid_from" else pl.lit(None, dtype=FACT_SCHEMA[c])).alias(c)
             for c in absent])
    facts = _said(facts)
    legacy = facts["remind_on"].is_null()
    if not legacy.any():
        return facts
    positions = pl.arg_where(legacy, eager=True).to_list()
    columns = {c: facts[c].to_list() for c in ("directive", "remind_on")}
    rows = facts.select("content", "kind", "created_at").rows()
    for pos in positions:
        content, kind, said_at = rows[pos]
        for column, value in read_fields(content, kind, said_at).items():
            if column in columns:
                columns[column][pos] = value
    return facts.with_columns(pl.Series(c, v, dtype=FACT_SCHEMA[c]) for c, v in columns.items())


def _said(facts: pl.DataFrame) -> pl.DataFrame:
    """``facts`` with ``numbers``, ``denies``, ``words``, ``same_as`` (``said_fields``) and
    ``subject_name``, read from the wording of a fact written before facts carried them (one null)."""
    facts = facts.with_columns(pl.lit(None, dtype=FACT_SCHEMA[c]).alias(c) for c in (*_SAID, "entities")
                               if c not in facts.columns)
    legacy = (facts["denies"].is_null() | facts["words"].is_null() | facts["same_as"].is_null()).to_list()
    if not any(legacy):
        return facts
    rows = facts.select("content", "subject_key", "entities", *_SAID).rows()
    read = [{**said_fields(text, names), "subject_name": subject_name(text, key)} if old else dict(zip(_SAID, kept))
            for old, (text, key, names, *kept) in zip(legacy, rows)]
    return facts.with_columns(pl.Series(c, [r[c] for r in read], dtype=FACT_SCHEMA[c]) for c in _SAID)


# The fields ``_said`` reads for a fact from before them.
_SAID = ("numbers", "denies", "words", "same_as", "subject_name")
