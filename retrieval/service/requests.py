"""One request model per operation, for every door of the service.

The HTTP routes take these models as their bodies; the MCP tools build the same model
from their arguments before anything runs, so a bound, a type, a nesting depth or a name
is checked once, the same way, whichever transport carries the call (a failure is a 422
on HTTP and a "422 Invalid" tool error on MCP). Names come from ``retrieval.names``, the
bounds from ``retrieval.limits`` (which the in-process client and the CLI check too).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from retrieval.ignored_files import PATH_MAX_CHARS
from retrieval.limits import MEMORY_MAX_CHARS, MESSAGE_MAX_CHARS, MESSAGES_MAX, NESTING_MAX
from retrieval.names import NAMESPACE, PROJECT, SESSION

ITEMS_MAX = 500  # rows one list call returns
PROJECT_READ = ("The project the agent works on: its memories and the global ones, never another project's "
                "(default: every memory)")
NO_NUL = r"^[^\x00]*$"
WORKSPACE = ("The agent's working directory (absolute): the text of a file its .gitignore or .secretsignore "
             "names, or [privacy] secret_files does, is withheld from tool calls and messages")


def depth(value: Any) -> int:
    """How deeply ``value`` (JSON: dicts and lists) nests, counted without recursion, so a
    value nested 100,000 deep is measured rather than overflowing the stack."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            node = list(node.values())
        if isinstance(node, (list, tuple)):
            deepest = max(deepest, level)
            if level > NESTING_MAX:
                return level
            stack.extend((child, level + 1) for child in node)
    return deepest


def _shallow(value: Any, what: str) -> Any:
    if depth(value) > NESTING_MAX:
        raise ValueError(f"{what} nests deeper than {NESTING_MAX} levels")
    return value


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Message(Body):
    role: Literal["user", "assistant", "tool", "system"]
    content: str = Field(max_length=MESSAGE_MAX_CHARS)
    turn: int | None = Field(default=None, ge=0, le=1_000_000)
    ts: str | None = Field(default=None, max_length=64)
    speaker: str | None = Field(default=None, max_length=128)
    trust: Literal["trusted", "untrusted"] | None = None
    file: str | None = Field(default=None, max_length=PATH_MAX_CHARS, pattern=NO_NUL,
                             description="The file this message holds (a tool's read): its text is withheld when "
                                         "the workspace's .gitignore or .secretsignore, or [privacy] secret_files, "
                                         "names it")


class NamespaceArg(Body):
    """The ``namespace`` every route and tool takes (default: the key's own)."""
    namespace: str | None = Field(default=None, pattern=NAMESPACE, description="Default: the key's own namespace")


class InjectBody(Body):
    context: str | list[Message] = Field(description="The recent conversation (the last 5 messages count) or plain text")
    max_items: int | None = Field(default=None, ge=1, le=50)
    token_budget: int | None = Field(default=None, ge=50, le=20000)
    budget_aware: bool | None = None
    session_id: str | None = Field(default=None, pattern=SESSION)
    as_of: datetime | None = None
    project: str | None = Field(default=None, pattern=PROJECT, description=PROJECT_READ)

    @field_validator("context")
    @classmethod
    def _bounded(cls, value: Any) -> Any:
        if isinstance(value, str) and len(value) > MESSAGE_MAX_CHARS:
            raise ValueError(f"context is over {MESSAGE_MAX_CHARS} characters")
        if isinstance(value, list) and len(value) > MESSAGES_MAX:
            raise ValueError(f"context holds over {MESSAGES_MAX} messages")
        return value


class SearchBody(Body):
    query: str = Field(min_length=1, max_length=MEMORY_MAX_CHARS)
    k: int = Field(default=10, ge=1, le=100)
    as_of: datetime | None = None
    project: str | None = Field(default=None, pattern=PROJECT, description=PROJECT_READ)


class ListQuery(Body):
    text: str | None = Field(default=None, max_length=200)
    category: str | None = Field(default=None, max_length=64)
    kind: str | None = Field(default=None, max_length=32)
    status: Literal["active", "candidate", "superseded", "archived", "cold", "purged", "pending", "any"] = "active"
    project: str | None = Field(default=None, pattern=PROJECT)
    tag: str | None = Field(default=None, max_length=64)
    limit: int = Field(default=100, ge=1, le=ITEMS_MAX)


class ItemRef(Body):
    item_id: str = Field(min_length=1, max_length=64)


class RememberBody(Body):
    content: str = Field(min_length=1, max_length=MEMORY_MAX_CHARS)
    project: str | None = Field(default=None, pattern=PROJECT)


class UpdateBody(Body):
    content: str = Field(min_length=1, max_length=MEMORY_MAX_CHARS)
    tags: list[str] | None = Field(default=None, max_length=50)


class ResponseBody(Body):
    item_ids: list[str] = Field(max_length=50, description="The ids (or short ids) of the items the block held")
    response_text: str = Field(max_length=MESSAGE_MAX_CHARS)
    session_id: str | None = Field(default=None, pattern=SESSION)


class TurnBody(Body):
    turn: int = Field(ge=0, le=1_000_000)
    user_input: str = Field(default="", max_length=MESSAGE_MAX_CHARS)
    tool_calls: list[Any] = Field(default_factory=list, max_length=200)
    llm_output: str = Field(default="", max_length=MESSAGE_MAX_CHARS)
    internal_state: dict[str, Any] = Field(default_factory=dict)
    project: str | None = Field(default=None, pattern=PROJECT)
    workspace: str | None = Field(default=None, max_length=PATH_MAX_CHARS, pattern=NO_NUL, description=WORKSPACE)

    @field_validator("tool_calls", "internal_state")
    @classmethod
    def _not_too_deep(cls, value: Any, info: Any) -> Any:
        return _shallow(value, info.field_name)


class EntityName(Body):
    name: str = Field(min_length=1, max_length=128, pattern=r"^[^\x00-\x1f]+$")


class SessionRef(Body):
    session_id: str = Field(pattern=SESSION)


class FlushBody(Body):
    messages: list[Message] | None = Field(default=None, min_length=1, max_length=MESSAGES_MAX,
                                           description="The transcript; omitted: the checkpointed turns")
    project: str | None = Field(default=None, pattern=PROJECT)
    workspace: str | None = Field(default=None, max_length=PATH_MAX_CHARS, pattern=NO_NUL, description=WORKSPACE)


class EraseBody(Body):
    confirm: Literal[True] = Field(description="Erasing every memory of the namespace cannot be undone")
