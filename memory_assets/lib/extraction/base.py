"""What every extractor promises: turns of one session in, candidate facts out; and what
it may look at (``segments``).

What an extractor may look at: the transcript minus injected memory, split by trust.

Both extractors call ``segments()`` so the rules below hold for both:
- system messages are never a source of facts (restated system prompts are junk);
- an injected memory block is removed before extraction (DESIGN principle 7);
- tool output and text inside [UNTRUSTED DATA]…[/UNTRUSTED DATA] are untrusted;
- what the user says about memory itself is never a fact: a turn withheld at ingest
  ("don't remember this") and a request to forget ("forget what I told you about my
  passport": ``memory_assets.lib.extraction.forgetting`` acts on it) are skipped.
"""

from __future__ import annotations

import dataclasses
import re
import time
from dataclasses import dataclass
from typing import Protocol

from retrieval.llm import LLMOutputFailed
from retrieval.privacy import WITHHELD, forget_request
from retrieval.schema import UNTRUSTED_END, UNTRUSTED_START, Candidate, Turn
from retrieval.text import strip_injected


@dataclass
class ExtractionResult:
    candidates: list[Candidate]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: int = 1
    model: str | None = None


class ExtractionFailed(LLMOutputFailed):
    """LLM output failed validation on every attempt; the session goes to quarantine."""


class OverBudget(ExtractionFailed):
    """The session's extraction ran past ``[pipeline] extraction_seconds``: it is
    quarantined with the reason, its turns stay stored, and the run goes on."""


class Budget:
    """A session's time budget (``[pipeline] extraction_seconds``): ``check`` between
    sentences raises ``OverBudget`` once it is spent. Each check comes after a bounded
    step (a sentence is at most ``clauses.SENTENCE_MAX_CHARS``), so none runs on for long."""

    def __init__(self, seconds: float):
        self.seconds, self.deadline = seconds, time.monotonic() + seconds

    def check(self) -> None:
        if time.monotonic() > self.deadline:
            raise OverBudget(f"time budget: extraction ran past {self.seconds:g} s ([pipeline] extraction_seconds)")


_SPACES = re.compile(r"[^\S\n]+")
_BREAKS = re.compile(r" ?\n[\s]*")


def plain_spacing(turns: list[Turn]) -> list[Turn]:
    """The turns with each run of spaces and tabs as one space and each run of line breaks
    (with the blanks around them) as one: what the rules read. A run of 100,000 tabs
    says nothing a single space does not, and it made rules that scan for a space
    before a word take quadratic time."""
    return [dataclasses.replace(t, content=_BREAKS.sub("\n", _SPACES.sub(" ", t.content))) for t in turns]


class Extractor(Protocol):
    name: str      # "offline" | "llm"
    version: str   # rule-set version or prompt hash; recorded on every fact

    def extract(self, turns: list[Turn]) -> ExtractionResult: ...


# --- what an extractor may look at ---------------------------------------------------------

_UNTRUSTED = re.compile(
    re.escape(UNTRUSTED_START) + r"(.*?)(?:" + re.escape(UNTRUSTED_END) + r"|\Z)", re.DOTALL
)


@dataclass(frozen=True)
class Segment:
    turn: Turn
    text: str
    trusted: bool


def segments(turns: list[Turn], header: str) -> list[Segment]:
    """Split each turn into trusted and untrusted segments, injected memory removed
    (``header``: the block's header line, ``[injection] header``)."""
    out: list[Segment] = []
    for turn in turns:
        if turn.role == "system" or turn.content.strip() == WITHHELD:
            continue
        if turn.role == "user" and turn.trust == "trusted" and forget_request(turn.content):
            continue
        text = strip_injected(turn.content, header)
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
