"""The LLM extractor: a session's transcript in, schema-validated candidate facts out.

Talks to any OpenAI-compatible server: ``OPENAI_API_KEY`` is required and
``OPENAI_BASE_URL`` points the client at vLLM, Ollama or a llama.cpp server instead
of OpenAI (DESIGN principle 3). Two kinds of retry, kept apart on purpose:

- transport errors (timeouts, 429, 5xx) are retried by the ``openai`` client itself;
  when they survive those retries the session fails with the HTTP reason;
- a reply that is not JSON with a ``facts`` list is answered with a repair message,
  up to ``[llm] max_retries`` more times, then the session fails with the raw reply
  so the quarantine record shows exactly what came back (DESIGN principle 2).

Within a valid reply, a fact that fails validation is dropped and counted
(``LLMExtractionResult.invalid_facts``); a reply whose facts all fail is retried.
"""

from __future__ import annotations

import json
import re
from datetime import date
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from memory_assets.lib.extraction.base import ExtractionFailed, ExtractionResult, Segment, segments
from retrieval.config import MemoryConfig
from retrieval.llm import (
    InvalidReply,
    LLMOutputFailed,
    Prompt,
    Usage,
    chat_client,
    complete_validated,
    load_prompt,
)
from retrieval.schema import (
    EXTRACTED_PROVENANCE,
    KINDS,
    SENTIMENTS,
    STRENGTHS,
    TIERS,
    TRUST,
    UNTRUSTED_END,
    UNTRUSTED_START,
    Candidate,
    Turn,
)

PROMPT_NAME = "extract_facts"


@dataclass
class LLMExtractionResult(ExtractionResult):
    """An ``ExtractionResult`` plus what the LLM path alone knows.

    Attributes:
        invalid_facts: facts the model returned that failed validation and were dropped.
        invalid_reasons: one line per dropped fact, e.g. ``facts[2].category: ...``.
        raw_responses: every reply text, in request order (kept for audit).
        chunks: how many requests the transcript was split into.
        cost_usd: the cost of all attempts, from the ``[llm]`` prices.
    """

    invalid_facts: int = 0
    invalid_reasons: list[str] = field(default_factory=list)
    raw_responses: list[str] = field(default_factory=list)
    chunks: int = 0
    cost_usd: float = 0.0


# --- the reply schema -------------------------------------------------------------


def _word(value: Any) -> Any:
    return value.strip().lower() if isinstance(value, str) else value


def _one_of(value: Any, vocabulary: tuple[str, ...] | list[str], what: str) -> str:
    if value not in vocabulary:
        raise ValueError(f"unknown {what} {value!r}; expected one of {', '.join(vocabulary)}")
    return str(value)


_VOCABULARIES: dict[str, tuple[str, ...]] = {
    "kind": KINDS,
    "strength": STRENGTHS,
    "sentiment": SENTIMENTS,
    "source_trust": TRUST,
    "provenance": EXTRACTED_PROVENANCE,  # "migration" is never the model's claim
}


class _Fact(BaseModel):
    """One fact as the model must return it (see prompts/extract_facts.md).

    Validated with context ``{"categories": [...], "turns": {...}}``: the configured
    categories and the turn numbers the model was shown.
    """

    model_config = ConfigDict(extra="ignore")

    content: str
    category: str
    kind: str = "fact"
    tier: str | None = None
    strength: str = "explicit"
    sentiment: str = "neutral"
    tags: list[str] = []
    entities: list[str] = []
    source_turns: list[int]
    source_trust: str = "trusted"
    provenance: str = "user_stated"
    remember: bool = False
    action_required: bool = False
    supersedes: str | None = None
    # Optional structure (prompts/extract_facts.md); what is left out is read from the
    # wording once, in ``build_facts``.
    subject: str | None = None
    directive: str | None = None
    reported_by: str | None = None
    remind_on: list[date] | None = None
    relation: str | None = None
    value: str | None = None
    steps: list[str] = []
    prerequisites: list[str] = []
    warnings: list[str] = []
    trigger_patterns: list[str] = []

    @field_validator("content", mode="after")
    @classmethod
    def _content(cls, value: str) -> str:
        value = " ".join(value.split())
        if not value:
            raise ValueError("content is empty")
        return value

    @field_validator(
        "category", "kind", "tier", "strength", "sentiment", "source_trust", "provenance",
        mode="before",
    )
    @classmethod
    def _normalise_word(cls, value: Any) -> Any:
        return _word(value)

    @field_validator("category", mode="after")
    @classmethod
    def _category(cls, value: str, info: ValidationInfo) -> str:
        return _one_of(value, list((info.context or {})["categories"]), "category")

    @field_validator(*_VOCABULARIES, mode="after")
    @classmethod
    def _in_vocabulary(cls, value: str, info: ValidationInfo) -> str:
        return _one_of(value, _VOCABULARIES[info.field_name], info.field_name)

    @field_validator("tier", mode="after")
    @classmethod
    def _tier(cls, value: str | None) -> str | None:
        return _one_of(value, TIERS, "tier") if value else None

    @field_validator("relation", mode="after")
    @classmethod
    def _relation(cls, value: str | None) -> str | None:
        """``prefers``, ``lives_in``: lower case, words joined by "_"."""
        if value is None:
            return None
        value = "_".join(value.lower().replace("-", " ").split())
        return value or None

    @field_validator("tags", "entities", "steps", "prerequisites", "warnings", "trigger_patterns", mode="before")
    @classmethod
    def _words(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list):
            return [str(v).strip() for v in value if v is not None and str(v).strip()]
        return value

    @field_validator("source_turns", mode="before")
    @classmethod
    def _turn_list(cls, value: Any) -> Any:
        return [value] if isinstance(value, (int, str)) else value

    @field_validator("source_turns", mode="after")
    @classmethod
    def _turns_shown(cls, value: list[int], info: ValidationInfo) -> list[int]:
        shown: set[int] = (info.context or {})["turns"]
        if not value:
            raise ValueError("source_turns is empty; every fact must cite the turns it came from")
        unknown = sorted(set(value) - shown)
        if unknown:
            raise ValueError(
                f"source_turns {unknown} are not in the transcript (turns shown: {sorted(shown)})"
            )
        return sorted(set(value))

    @field_validator("remember", "action_required", mode="before")
    @classmethod
    def _flag(cls, value: Any) -> Any:
        return False if value is None else value

    @field_validator("supersedes", mode="before")
    @classmethod
    def _supersedes(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            return None
        return value.strip() if isinstance(value, str) else value


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


def _facts_in(raw: str) -> list[Any]:
    if not raw.strip():
        raise InvalidReply("the reply was empty")
    # Some local servers wrap JSON in a markdown fence despite response_format.
    fenced = _FENCE.match(raw)
    text = fenced.group(1) if fenced else raw
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidReply(
            f"the reply is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    if not isinstance(data, dict) or "facts" not in data:
        raise InvalidReply('the reply is JSON but has no "facts" key')
    if not isinstance(data["facts"], list):
        raise InvalidReply('"facts" in the reply is not a list')
    return data["facts"]


def _error_lines(index: int, exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "fact"
        message = str(err["msg"]).removeprefix("Value error, ")
        parts.append(f"facts[{index}].{where}: {message}")
    return "; ".join(parts)


def _repair_message(problem: str) -> str:
    return (
        f"Your reply could not be used: {problem}. Reply again with only one JSON object "
        'of the form {"facts": [...]}, following the field rules in the instructions. '
        "Cite only turn numbers shown in the transcript."
    )


# --- the transcript as the model sees it ------------------------------------------

# Text that could pass for our own framing is neutralised, so a pasted page cannot
# close its untrusted block early or forge a user turn.
_FORGED_HEADER = re.compile(r"\[turn\s+(\d+)\]", re.IGNORECASE)


def _neutralise(text: str) -> str:
    text = text.replace(UNTRUSTED_START, "(untrusted data)").replace(UNTRUSTED_END, "(end)")
    return _FORGED_HEADER.sub(r"(turn \1)", text)


@dataclass(frozen=True)
class _Piece:
    turn: Turn
    text: str
    trusted: bool

    @property
    def words(self) -> int:
        return len(self.text.split())


@dataclass
class _Chunk:
    pieces: list[_Piece] = field(default_factory=list)
    words: int = 0

    @property
    def turns(self) -> set[int]:
        return {p.turn.turn for p in self.pieces}


def _pieces(segs: list[Segment], budget: int) -> list[_Piece]:
    out = []
    for seg in segs:
        text = _neutralise(seg.text)
        words = text.split()
        if len(words) <= budget:
            out.append(_Piece(seg.turn, text, seg.trusted))
            continue
        for start in range(0, len(words), budget):
            out.append(_Piece(seg.turn, " ".join(words[start:start + budget]), seg.trusted))
    return out


def chunk_segments(segs: list[Segment], max_words: int) -> list[_Chunk]:
    """Pack segments into chunks of at most ``max_words`` transcript words each.

    A turn longer than the budget is split into word windows that keep its turn number.
    """
    budget = max(1, max_words)
    chunks: list[_Chunk] = []
    current = _Chunk()
    for piece in _pieces(segs, budget):
        if current.pieces and current.words + piece.words > budget:
            chunks.append(current)
            current = _Chunk()
        current.pieces.append(piece)
        current.words += piece.words
    if current.pieces:
        chunks.append(current)
    return chunks


def render_transcript(pieces: list[_Piece]) -> str:
    """Numbered turn blocks, ``[turn 3] Aaron (user): ...``, untrusted text marked."""
    blocks: list[str] = []
    last_turn: int | None = None
    for piece in pieces:
        body = (
            piece.text if piece.trusted
            else f"{UNTRUSTED_START}\n{piece.text}\n{UNTRUSTED_END}"
        )
        if piece.turn.turn == last_turn:
            blocks[-1] += "\n" + body
            continue
        speaker = piece.turn.speaker or piece.turn.role
        separator = " " if piece.trusted else "\n"
        blocks.append(f"[turn {piece.turn.turn}] {speaker} ({piece.turn.role}):{separator}{body}")
        last_turn = piece.turn.turn
    return "\n".join(blocks)


def _user_message(turns: list[Turn], chunk: _Chunk, index: int, total: int) -> str:
    first = turns[0]
    part = f", part {index} of {total}" if total > 1 else ""
    return (
        f"Session {first.session_id}, started {first.content_at.isoformat()}{part}.\n"
        "Extract the facts from this transcript.\n\n"
        f"{render_transcript(chunk.pieces)}"
    )


# --- the extractor ----------------------------------------------------------------


class LLMExtractor:
    """Extract candidate facts with a chat model behind an OpenAI-compatible API.

    Args:
        config: the memory config; ``[llm]`` gives model, timeout_seconds,
            max_retries (validation retries), temperature and prices, and optionally
            ``transport_retries`` and ``max_words_per_request``.
        client: an ``openai.OpenAI`` to use; when omitted one is built from
            ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``.
        model: overrides ``[llm] model``.
    """

    name = "llm"

    def __init__(
        self,
        config: MemoryConfig,
        client: Any = None,
        model: str | None = None,
    ) -> None:
        self.config = config
        self.prompt: Prompt = load_prompt(PROMPT_NAME)
        self.version: str = self.prompt.version
        self.model: str = model or str(config.llm.model)
        self.system_prompt: str = self.prompt.render(
            categories=", ".join(config.categories),
            kinds=", ".join(KINDS),
            tiers=", ".join(TIERS),
            strengths=", ".join(STRENGTHS),
            sentiments=", ".join(SENTIMENTS),
            provenance=", ".join(EXTRACTED_PROVENANCE),
        )
        self.client = client if client is not None else chat_client(config)

    def extract(self, turns: list[Turn]) -> LLMExtractionResult:
        """Extract candidates from one session's turns.

        Raises:
            ExtractionFailed: a request failed after the client's transport retries, or
                every reply failed validation; carries the last raw reply and the tokens
                spent so far.
        """
        segs = segments(turns, self.config.injection.header)
        max_words = int(
            self.config.llm.max_words_per_request
        )
        # The system prompt rides along with every chunk, so it spends part of the budget.
        budget = max(500, max_words - len(self.system_prompt.split()))
        chunks = chunk_segments(segs, budget)
        usage = Usage()
        invalid: list[str] = []
        candidates: list[Candidate] = []
        for index, chunk in enumerate(chunks, start=1):
            message = _user_message(turns, chunk, index, len(chunks))
            try:
                (kept, errors), spent = self._extract_chunk(message, chunk)
            except LLMOutputFailed as failed:
                spent = usage + failed.usage
                raise ExtractionFailed(failed.reason, raw_response=failed.raw_response, attempts=spent.attempts,
                                       prompt_tokens=spent.prompt_tokens,
                                       completion_tokens=spent.completion_tokens) from failed
            usage += spent
            invalid.extend(errors)
            candidates.extend(kept)
        return LLMExtractionResult(
            candidates=candidates,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            attempts=usage.attempts,
            model=self.model,
            invalid_facts=len(invalid),
            invalid_reasons=invalid,
            raw_responses=list(usage.replies),
            chunks=len(chunks),
            cost_usd=usage.cost_usd(self.config),
        )

    def _extract_chunk(self, user_message: str, chunk: _Chunk) -> tuple[tuple[list[Candidate], list[str]], Usage]:
        """The chunk's valid candidates and the reasons others were dropped; a reply whose
        facts all fail validation is repaired and retried like one that is not JSON."""

        def parse(raw: str) -> tuple[list[Candidate], list[str]]:
            facts = _facts_in(raw)
            kept, errors = self._validate(facts, chunk)
            if facts and not kept:
                raise InvalidReply(f"none of the {len(facts)} facts passed validation: " + "; ".join(errors[:5]))
            return kept, errors

        messages = [{"role": "system", "content": self.system_prompt}, {"role": "user", "content": user_message}]
        return complete_validated(
            self.client, messages, parse, _repair_message, model=self.model,
            temperature=self.config.llm.temperature, attempts=1 + self.config.llm.max_retries, json_mode=True)

    def _validate(self, facts: list[Any], chunk: _Chunk) -> tuple[list[Candidate], list[str]]:
        context = {"categories": list(self.config.categories), "turns": chunk.turns}
        # A tool turn or a turn ingested as untrusted stays untrusted whatever the model says.
        untrusted_turns = {
            p.turn.turn for p in chunk.pieces
            if p.turn.role == "tool" or p.turn.trust == "untrusted"
        }
        kept: list[Candidate] = []
        errors: list[str] = []
        for index, raw_fact in enumerate(facts):
            if not isinstance(raw_fact, dict):
                errors.append(f"facts[{index}]: not an object")
                continue
            try:
                fact = _Fact.model_validate(raw_fact, context=context)
            except ValidationError as exc:
                errors.append(_error_lines(index, exc))
                continue
            candidate = Candidate(**fact.model_dump())
            if untrusted_turns.intersection(candidate.source_turns):
                candidate.source_trust = "untrusted"
                if candidate.provenance in ("user_stated", "user_corrected"):
                    candidate.provenance = "observed"
            kept.append(candidate)
        return kept, errors
