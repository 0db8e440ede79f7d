"""The one LLM helper: every chat-model call of the product goes through here.

Agent-safe (no dagster, nothing from ``memory_assets``), so query rewriting on the agent
side and extraction, summaries, insights and the eval's judge in the pipeline share it:

- ``chat_client(config)`` is the one place an ``openai.OpenAI`` is built. It reads
  ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` (vLLM, Ollama, llama.cpp) from the environment
  and ``[llm] timeout_seconds`` / ``transport_retries`` from the config.
- ``complete_validated(client, messages, parse, repair, ...)`` is the one loop:
  ask → parse and validate → on a bad reply, echo it back with a repair message and ask
  again → tally tokens → after the last attempt raise ``LLMOutputFailed``, which carries
  the reason, the raw reply and the tokens spent, so the caller can quarantine it.
  Callers keep only their own ``parse`` and ``repair`` text.
- ``Usage`` is what a step spent; ``Usage.cost_usd(config)`` is the one cost formula
  (``[llm] input_cost_per_mtok`` / ``output_cost_per_mtok``).
- ``load_prompt(name)`` reads ``prompts/<name>.md``, shipped as package data, versioned
  by the hash of its bytes: a prompt's version becomes the ``code_version`` of the asset
  that uses it, so editing a prompt marks that asset stale.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import openai

    from retrieval.config import MemoryConfig

T = TypeVar("T")

# A repair message echoes the bad reply; a runaway reply is cut so the retry stays small.
ECHO_LIMIT_CHARS = 8000


class LLMNotConfigured(RuntimeError):
    """The LLM path is chosen but ``OPENAI_API_KEY`` is not set."""


class InvalidReply(ValueError):
    """Raised by a ``parse`` function: the reply cannot be used, and why (sent back to the model)."""


class LLMOutputFailed(Exception):
    """An LLM step failed validation on every attempt, or its endpoint failed: what a
    quarantine record keeps. Carries the reason, the raw reply and the tokens spent, so
    the record shows exactly what came back and the cost is still counted."""

    def __init__(self, reason: str, raw_response: str | None = None, attempts: int = 0,
                 prompt_tokens: int = 0, completion_tokens: int = 0):
        super().__init__(reason)
        self.reason = reason
        self.raw_response = raw_response
        self.attempts = attempts
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens

    @property
    def usage(self) -> Usage:
        return Usage(self.attempts, self.prompt_tokens, self.completion_tokens)


@dataclass(frozen=True)
class Usage:
    """What LLM calls spent: attempts (not counting the client's transport retries) and tokens."""

    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    replies: tuple[str, ...] = field(default=(), compare=False, repr=False)

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.attempts + other.attempts, self.prompt_tokens + other.prompt_tokens,
                     self.completion_tokens + other.completion_tokens, self.replies + other.replies)

    def cost_usd(self, config: MemoryConfig) -> float:
        """USD, from ``[llm] input_cost_per_mtok`` and ``output_cost_per_mtok``."""
        return (self.prompt_tokens * config.llm.input_cost_per_mtok
                + self.completion_tokens * config.llm.output_cost_per_mtok) / 1_000_000


def llm_configured() -> bool:
    """Whether ``OPENAI_API_KEY`` is set and non-empty (the LLM path can be used)."""
    return bool(os.environ.get("OPENAI_API_KEY", "").strip())


def chat_client(config: MemoryConfig, *, timeout: float | None = None,
                max_retries: int | None = None) -> openai.OpenAI:
    """The ``openai.OpenAI`` every LLM step uses.

    Args:
        config: ``[llm] timeout_seconds`` and ``transport_retries`` (429, 5xx and timeouts,
            retried by the client itself).
        timeout, max_retries: override those two, e.g. a short timeout for query rewriting
            on the agent's hot path.

    Raises:
        LLMNotConfigured: ``OPENAI_API_KEY`` is not set.
    """
    if not llm_configured():
        raise LLMNotConfigured(
            "OPENAI_API_KEY is not set: set it (and OPENAI_BASE_URL for a local server) to use the LLM "
            "path, or set [llm] enabled = false (and [embedding] provider = \"local\") for the offline paths")
    import openai

    return openai.OpenAI(
        timeout=float(config.llm.timeout_seconds if timeout is None else timeout),
        max_retries=int(config.llm.transport_retries if max_retries is None else max_retries),
    )


def transport_failure(exc: Exception, client: Any, model: str) -> str:
    """Why a request failed, for a person: what, where, and after how many tries."""
    import openai

    tries = int(getattr(client, "max_retries", 0)) + 1
    where = f"{model} at {getattr(client, 'base_url', '?')}"
    if isinstance(exc, openai.APITimeoutError):
        return f"request to {where} timed out after {tries} attempts"
    if isinstance(exc, openai.APIConnectionError):
        return f"could not connect to {where} after {tries} attempts"
    if isinstance(exc, openai.RateLimitError):
        return f"rate limited (429) by {where} after {tries} attempts"
    if isinstance(exc, openai.APIStatusError):
        retried = exc.status_code in (408, 409) or exc.status_code >= 500
        return f"HTTP {exc.status_code} from {where}" + (f" after {tries} attempts" if retried else "") \
            + f": {exc.message}"
    return f"request to {where} failed: {exc}"


def complete_validated(
    client: Any,
    messages: list[dict[str, str]],
    parse: Callable[[str], T],
    repair: Callable[[str], str],
    *,
    model: str,
    temperature: float = 0.0,
    attempts: int = 1,
    json_mode: bool = False,
    what: str = "",
    echo_limit: int = ECHO_LIMIT_CHARS,
) -> tuple[T, Usage]:
    """Ask until ``parse`` accepts a reply, at most ``attempts`` times.

    Args:
        client: an ``openai.OpenAI`` (``chat_client``) or anything with its
            ``chat.completions.create``.
        messages: the conversation so far (system and user); not modified.
        parse: turns the raw reply into the value, or raises ``InvalidReply(problem)``.
        repair: the user message asking for a fix, given the problem.
        model, temperature: passed to the endpoint.
        attempts: total attempts (``1 + [llm] max_retries``).
        json_mode: ask for ``response_format={"type": "json_object"}``.
        what: names the step in failure reasons ("summary of 'vehicle'").

    Returns:
        the parsed value and the ``Usage`` of every attempt (its ``replies`` are the raw replies).

    Raises:
        LLMOutputFailed: the endpoint failed (after the client's own retries), or no reply
            parsed; carries the last raw reply and the tokens spent.
    """
    import openai

    conversation = list(messages)
    prefix = f"{what}: " if what else ""
    replies: list[str] = []
    prompt_tokens = completion_tokens = 0
    problem = ""
    extra: dict[str, Any] = {"response_format": {"type": "json_object"}} if json_mode else {}
    for _ in range(max(1, attempts)):
        try:
            response = client.chat.completions.create(
                model=model, messages=conversation, temperature=temperature, **extra)
        except openai.OpenAIError as exc:
            body = getattr(getattr(exc, "response", None), "text", None)
            raise LLMOutputFailed(
                prefix + transport_failure(exc, client, model),
                raw_response=body if body is not None else (replies[-1] if replies else None),
                attempts=len(replies) + 1, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            ) from exc
        if response.usage is not None:
            prompt_tokens += response.usage.prompt_tokens or 0
            completion_tokens += response.usage.completion_tokens or 0
        raw = (response.choices[0].message.content or "") if response.choices else ""
        replies.append(raw)
        try:
            value = parse(raw)
        except InvalidReply as exc:
            problem = str(exc)
        else:
            return value, Usage(len(replies), prompt_tokens, completion_tokens, tuple(replies))
        conversation.append({"role": "assistant", "content": raw[:echo_limit]})
        conversation.append({"role": "user", "content": repair(problem)})
    raise LLMOutputFailed(
        f"{prefix}{problem} (after {len(replies)} attempts with {model})",
        raw_response=replies[-1] if replies else None, attempts=len(replies),
        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
    )


# --- prompts ------------------------------------------------------------------------


# The ``prompts`` package's folder (a ``Traversable``: a directory in an editable install,
# inside the wheel otherwise); read at call time, so a test can point it elsewhere.
PROMPTS = resources.files("prompts")


class PromptNotFound(FileNotFoundError):
    """No prompt of that name ships in the ``prompts`` package."""


@dataclass(frozen=True)
class Prompt:
    """One prompt file.

    Attributes:
        name: the file name without ``.md``, e.g. ``"extract_facts"``.
        text: the file's text; ``{placeholders}`` are filled by ``render``.
        version: the first 12 hex digits of the sha256 of the file's bytes.
    """

    name: str
    text: str
    version: str

    def render(self, **values: Any) -> str:
        """The text with ``{placeholders}`` filled (``str.format``; ``{{`` is a literal brace)."""
        try:
            return self.text.format(**values)
        except (KeyError, IndexError) as exc:
            raise ValueError(f"prompt {self.name!r}: no value for placeholder {exc}") from None


def load_prompt(name: str) -> Prompt:
    """``prompts/<name>.md`` from the installed ``prompts`` package (editable or not).

    Args:
        name: the prompt's name, with or without the ``.md`` suffix.
    """
    stem = name.removesuffix(".md")
    folder = PROMPTS
    try:
        data = folder.joinpath(f"{stem}.md").read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        available = ", ".join(sorted(p.name.removesuffix(".md") for p in folder.iterdir()
                                     if p.name.endswith(".md"))) or "none"
        raise PromptNotFound(f"prompts/{stem}.md: no such prompt; available: {available}") from None
    return Prompt(name=stem, text=data.decode("utf-8"), version=hashlib.sha256(data).hexdigest()[:12])
