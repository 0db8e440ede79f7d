"""What every extractor promises: turns of one session in, candidate facts out."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from retrieval.schema import Candidate, Turn


@dataclass
class ExtractionResult:
    candidates: list[Candidate]
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: int = 1
    model: str | None = None


class ExtractionFailed(Exception):
    """LLM output failed validation on every attempt; the session goes to quarantine.

    Carries the raw response so the quarantine record shows exactly what came back.
    """

    def __init__(self, reason: str, raw_response: str | None = None, attempts: int = 0,
                 prompt_tokens: int = 0, completion_tokens: int = 0):
        super().__init__(reason)
        self.reason = reason
        self.raw_response = raw_response
        self.attempts = attempts
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens


class Extractor(Protocol):
    name: str      # "offline" | "llm"
    version: str   # rule-set version or prompt hash; recorded on every fact

    def extract(self, turns: list[Turn]) -> ExtractionResult: ...
