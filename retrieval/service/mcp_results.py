"""What each MCP tool returns, declared: the ``outputSchema`` of every tool, and the
``structuredContent`` a client validates against it.

A tool answers twice, as MCP asks: ``structuredContent`` (an object of the declared shape,
for the client's code) and text content (for the model). For ``memory_inject`` and
``memory_export`` the text is the thing itself, the block to put in the context or the
export's JSON Lines, never JSON inside a string; for the others it is the object as JSON.

A memory's row has many fields, and the pipeline adds some over time: the models type the
ones a client relies on and let the rest through (``extra="allow"``), so the schema says
what is always there without refusing what is new.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


def plain(value: Any) -> Any:
    """``value`` as JSON types (times as ISO strings), as the HTTP API answers."""
    return json.loads(json.dumps(value, default=_iso, ensure_ascii=False))


def _iso(value: Any) -> str:
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Line(BaseModel):
    """One line of the block."""

    id: str = Field(description="The memory's id (a summary line: summary:<category>:<n>)")
    ref: str | None = Field(description="The short id its line shows ([m:4821]): pass it to the other tools")
    content: str
    category: str
    confidence: float
    importance: float
    source_trust: str = Field(description="trusted, or untrusted: from tool output or pasted text")
    flags: list[str] = Field(description="[pending], [conflict], [stale], [untrusted], [from: agent], …")


class Block(BaseModel):
    """``memory_inject``: the block (also the text content) and its lines."""

    text: str = Field(description="The block to put in your context; empty when nothing matched")
    tier: str = Field(description="What answered: items, summaries, profile, none or disabled")
    tokens: int
    items: list[Line]


class Found(BaseModel):
    """One memory ``memory_search`` found."""

    id: str
    ref: str | None
    content: str
    category: str
    confidence: float
    importance: float
    source_trust: str
    relevance: float
    score: float
    flags: list[str]


class Search(BaseModel):
    items: list[Found]


class Memory(_Open):
    """A memory with every field it has."""

    id: str
    content: str
    category: str
    status: str
    ref: str | None = Field(default=None, description="Its short id ([m:4821]) once published")


class Memories(BaseModel):
    items: list[Memory]


class History(_Open):
    """Where a memory came from and what happened to it."""

    item: dict[str, Any]
    sources: list[dict[str, Any]] = Field(description="The conversation turns it was read from")
    events: list[dict[str, Any]] = Field(description="The feedback it received")
    related: list[dict[str, Any]] = Field(description="The memories it replaced, merged or contradicts, and back")


class Changed(BaseModel):
    """A correction or feedback recorded: the memory's full id (and the action)."""

    id: str
    action: str | None = None
    applied: str = Field(default="now", description="now: the next inject and search reflect it; or by the next pipeline run")


class Used(BaseModel):
    used: dict[str, bool] = Field(description="memory id → whether the reply relied on it")


class TurnSaved(_Open):
    session_id: str
    turn: int
    signals: list[str] = Field(description="What the turn said worth keeping at once")
    flushed: bool = Field(description="A high signal handed the session to the pipeline")
    checkpointed_at: str


class Turn(BaseModel):
    turn: int
    record: dict[str, Any]
    project: str | None
    created_at: str
    flushed: bool


class Turns(BaseModel):
    turns: list[Turn]


class Flushed(BaseModel):
    written: bool = Field(description="False: the same transcript was handed over before")


class Lessons(BaseModel):
    lessons: list[str]


class Export(BaseModel):
    """``memory_export``: the text content is the export's JSON Lines."""

    namespace: str
    lines: int


class Imported(_Open):
    records: int
    errors: list[str]
    written: bool


class Triggers(BaseModel):
    due: list[dict[str, Any]]
