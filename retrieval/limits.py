"""One bound per input, one definition: every door checks these (the HTTP routes and MCP
tools through ``retrieval.service.requests``, the in-process client where it writes, the
CLI's transcript reader), and a refusal names the bound.
"""

from __future__ import annotations

MEMORY_MAX_CHARS = 4000  # a remembered or reworded memory, a search query
MESSAGE_MAX_CHARS = 100_000  # one message or turn field (a pasted log fits; a book does not)
MESSAGES_MAX = 2000  # messages in one flushed transcript
NESTING_MAX = 32  # depth of a turn's tool calls and internal state


class OverLimit(ValueError):
    """An input over its bound; the message names the bound."""


def within(text: str, limit: int, what: str, name: str) -> str:
    """``text`` when it is at most ``limit`` characters; else ``OverLimit`` naming ``name``."""
    if len(text) > limit:
        raise OverLimit(f"{what} is {len(text):,} characters; the limit is {limit:,} ({name})")
    return text


def memory(text: str, what: str = "the memory") -> str:
    return within(text, MEMORY_MAX_CHARS, what, "MEMORY_MAX_CHARS")


def message(text: str, what: str = "a message") -> str:
    return within(text, MESSAGE_MAX_CHARS, what, "MESSAGE_MAX_CHARS")
