"""What each HTTP route answers, as types: the OpenAPI schema's response bodies, from which
clients are generated (``clients/typescript``). Open models: a field added to a memory
row reaches the caller without a schema change, and the documented ones are always there.
The MCP tools' answers are ``retrieval.service.mcp_results`` (shared where the shape is
the same).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from retrieval.service.mcp_results import Changed, History, Imported, Memory, TurnSaved, Used

__all__ = ["REFUSALS", "Changed", "Erasing", "Flushed", "Found", "History", "Imported", "Injected", "KeyInfo", "Memory",
           "TurnSaved", "Turn", "Used"]


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Found(_Open):
    """One memory a search found."""

    id: str = Field(description="The memory's id (pending:… for a write not published yet)")
    content: str
    category: str
    importance: float
    confidence: float
    source_trust: str = Field(description="trusted, or untrusted: from tool output or pasted text")
    session_id: str | None = Field(default=None, description="The session it was read from")
    source_resource_ids: list[str] = Field(default_factory=list)
    source_turn_ids: list[str] = Field(default_factory=list)
    relevance: float = Field(description="How well it matches the query (0–1)")
    score: float = Field(description="Relevance weighted by importance, confidence and age: the rank")
    status: str | None = Field(default=None, description="active, archived, cold, pending …")


class Line(Found):
    """One line of the block."""

    flags: list[str] = Field(description="[pending], [conflict], [stale], [untrusted], [from: agent], …")
    ref: str | None = Field(description="The short id its line shows ([m:4821]): pass it to the other routes")


class Injected(_Open):
    """The memory block for the agent's next prompt."""

    text: str = Field(description="The block to put in the prompt; empty when nothing matched")
    tier: str = Field(description="What answered: items, summaries, profile, none or disabled")
    tokens: int
    query: str = Field(description="What was embedded (the rewritten query)")
    terms: str = Field(description="What full-text search was asked")
    items: list[Line]


class Turn(_Open):
    """One checkpointed turn, as replay gives it back."""

    turn: int
    record: dict
    project: str | None
    created_at: str
    flushed: bool


class Flushed(_Open):
    session_id: str
    written: bool = Field(description="False: the same transcript was handed over before")


class Erasing(_Open):
    namespace: str
    erased: str = Field(description="When: by the next pipeline run")


class KeyInfo(_Open):
    """The calling key (never its secret)."""

    key_id: str
    agent: str
    namespace: str
    grants: list[str]
    role: str | None
    writes_per_minute: int | None
    created_at: str | None


class Refusal(BaseModel):
    """Why a request was refused."""

    error: str


_WHY = {401: "No valid API key", 403: "Not this key's namespace, or a read-only grant", 404: "No such memory",
        409: "The turn is checkpointed already with other words", 413: "The body is over the limit",
        429: "Too many writes this minute (see Retry-After)"}
# Every route's refusals, as the schema documents them (``retrieval.service.http``).
REFUSALS = {status: {"model": Refusal, "description": why} for status, why in _WHY.items()}
