"""Lessons: short, imperative rules the agent should follow, from what users corrected,
forbade, prescribed or decided.

Rule-based and deterministic: each active correction, negative, procedure or decision is
rewritten from its own wording ("Priya wants the assistant to always run make lint
before committing" → "Always run make lint before committing"), duplicates dropped,
most important first, at most 20. Untrusted items never become lessons (a tool's output
telling the agent what to do is exactly the injection the trust pass guards against),
nor do uncertain ones (below ``injection.uncertain_below``).
"""

from __future__ import annotations

import re

import polars as pl

from memory_assets.lib.items.dedup import normalize
from retrieval.config import MemoryConfig
from retrieval.spans import spanned

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
    """One item's wording as a lesson (the wording itself when no rewrite applies)."""
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


@spanned("lessons")
def lessons(items: pl.DataFrame, config: MemoryConfig, *, limit: int | None = None) -> list[str]:
    """Lessons from the active, trusted corrections, negatives, procedures and decisions.

    At most ``limit`` (default ``[lifecycle] max_lessons``), ordered by importance, then confidence, then the newest first; duplicates (same text
    after normalizing case, spacing and end punctuation) keep the first.
    """
    if items.is_empty():
        return []
    rows = items.filter(
        (pl.col("status") == "active") & pl.col("kind").is_in(list(LESSON_KINDS))
        & (pl.col("source_trust") != "untrusted")
        & (pl.col("confidence") >= float(config.injection.uncertain_below))
    ).sort(["importance", "confidence", "created_at", "id"], descending=[True, True, True, False])
    out: dict[str, str] = {}
    for content in rows["content"].to_list():
        text = lesson_text(content)
        key = normalize(text)
        if key and key not in out:
            out[key] = text
        if len(out) >= (config.lifecycle.max_lessons if limit is None else limit):
            break
    return list(out.values())
