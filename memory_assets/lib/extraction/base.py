"""What every extractor promises: turns of one session in, candidate facts out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from retrieval.llm import LLMOutputFailed
from retrieval.schema import Candidate, Turn


@dataclass
class ExtractionResult:
    candidates: list[Candidate]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: int = 1
    model: str | None = None


class ExtractionFailed(LLMOutputFailed):
    """LLM output failed validation on every attempt; the session goes to quarantine."""


class Extractor(Protocol):
    name: str      # "offline" | "llm"
    version: str   # rule-set version or prompt hash; recorded on every fact

    def extract(self, turns: list[Turn]) -> ExtractionResult: ...
