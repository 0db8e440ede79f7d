"""Directives: a correction, negative rule, procedure or decision as the imperative the
agent should follow, derived once at extraction (the fact's ``directive`` field).

Rule-based and deterministic, over the fact's own wording: "Priya wants the assistant
to always run make lint before committing" → "Always run make lint before committing";
"Priya switched from black to ruff" → "Priya prefers ruff over black". The lifecycle's
lessons read the stored field, never the wording.
"""

from __future__ import annotations

import re

LESSON_KINDS = ("correction", "negative", "procedure", "decision")

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




def directive_of(content: str, kind: str) -> str | None:
    """The directive a fact of ``kind`` carries: its lesson text for the kinds that make
    lessons (``LESSON_KINDS``), else None."""
    return lesson_text(content) if kind in LESSON_KINDS else None
