"""What an extractor may look at: the transcript minus injected memory, split by trust.

Both extractors call ``segments()`` so the rules below hold for both:
- system messages are never a source of facts (restated system prompts are junk);
- an injected memory block is removed before extraction (DESIGN principle 7);
- tool output and text inside [UNTRUSTED DATA]…[/UNTRUSTED DATA] are untrusted;
- what the user says about memory itself is never a fact: a turn withheld at ingest
  ("don't remember this") and a request to forget ("forget what I told you about my
  passport": ``memory_assets.lib.forgetting`` acts on it) are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from retrieval.privacy import WITHHELD, forget_request
from retrieval.schema import (
    INJECTION_END,
    INJECTION_START,
    UNTRUSTED_END,
    UNTRUSTED_START,
    Turn,
)

_MARKED_BLOCK = re.compile(
    re.escape(INJECTION_START) + r".*?(?:" + re.escape(INJECTION_END) + r"|\Z)", re.DOTALL
)
# The block's plain-text form, in case an agent pasted it without the markers:
# the header line and the "~ " lines under it.
_BARE_BLOCK = re.compile(
    r"^[ \t]*Known context from previous sessions:[ \t]*\n(?:[ \t]*~[^\n]*(?:\n|\Z))*",
    re.MULTILINE,
)
_UNTRUSTED = re.compile(
    re.escape(UNTRUSTED_START) + r"(.*?)(?:" + re.escape(UNTRUSTED_END) + r"|\Z)", re.DOTALL
)


@dataclass(frozen=True)
class Segment:
    turn: Turn
    text: str
    trusted: bool


def strip_injected(text: str) -> str:
    """Remove any injected memory block, marked or bare."""
    return _BARE_BLOCK.sub("", _MARKED_BLOCK.sub("", text))


def segments(turns: list[Turn]) -> list[Segment]:
    """Split each turn into trusted and untrusted segments, injected memory removed."""
    out: list[Segment] = []
    for turn in turns:
        if turn.role == "system" or turn.content.strip() == WITHHELD:
            continue
        if turn.role == "user" and turn.trust == "trusted" and forget_request(turn.content):
            continue
        text = strip_injected(turn.content)
        whole_untrusted = turn.role == "tool" or turn.trust == "untrusted"
        pos = 0
        for match in _UNTRUSTED.finditer(text):
            before = text[pos:match.start()].strip()
            if before:
                out.append(Segment(turn, before, not whole_untrusted))
            inner = match.group(1).strip()
            if inner:
                out.append(Segment(turn, inner, False))
            pos = match.end()
        rest = text[pos:].strip()
        if rest:
            out.append(Segment(turn, rest, not whole_untrusted))
    return out
