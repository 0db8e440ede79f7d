"""The memory data model shared by the pipeline and the agent (DESIGN.md, "Data model").

Vocabularies are tuples so a check, a prompt and a validator all read the same list.
Frames are polars; the column schemas below are the published contract.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime

import polars as pl

ROLES = ("user", "assistant", "tool", "system")
# How a turn reached the inbox (``Turn.source_format``).
SOURCE_FORMATS = ("jsonl", "remember", "checkpoint")
TRUST = ("trusted", "untrusted")
KINDS = (
    "fact", "preference", "decision", "correction", "commitment",
    "procedure", "negative", "event", "insight",
)
TIERS = ("permanent", "standard", "transient")
STRENGTHS = ("explicit", "implied", "inferred")
SENTIMENTS = ("frustrated", "excited", "uncertain", "neutral")
# A candidate is a fact below the gate's usefulness bar (gate.min_confidence): stored, never
# injected, active once another session confirms it.
STATUSES = ("active", "candidate", "superseded", "archived", "cold", "purged")
# Where a memory came from. An extractor claims one of the first five; "migration" is a
# memory brought over from flat files (MEMORY.md) by ``memory import --from-markdown``.
EXTRACTED_PROVENANCE = ("user_stated", "user_corrected", "observed", "inferred", "extracted")
# "agent_stated": written by another agent's key (``author``), never an extractor's claim:
# it ranks below what the user said, and its line says ``[from: agent]``.
AGENT_STATED = "agent_stated"
PROVENANCE = (*EXTRACTED_PROVENANCE, "migration", AGENT_STATED)
# Whose word a key's writes are: the user's own agent's, or another agent's.
AUTHOR_ROLES = ("user", "agent")


def author(role: str, agent: str, key_id: str) -> str:
    """Who wrote a turn or a correction through a key, as stored (``Turn.written_by``):
    ``<role>:<agent>:<key id>``."""
    return f"{role}:{agent}:{key_id}"


def agent_written(written_by: str | None) -> bool:
    """Whether ``written_by`` (``author``) is another agent's key: its words are its claim."""
    return bool(written_by) and str(written_by).startswith("agent:")
SCOPES = ("global", "project", "session")
EVENT_TYPES = (
    "injected", "referenced", "ignored", "reinforce", "demote", "update", "forget", "correction",
    # pin/unpin: the user marks an item permanent (or not); fired: a forward trigger was
    # delivered; erase: every item of a namespace is purged.
    "pin", "unpin", "fired", "erase",
)

# The markers around an injected block: the extractor strips everything between them,
# so recalled memory never becomes a new fact (DESIGN principle 7).
INJECTION_START = "<memory-context>"
INJECTION_END = "</memory-context>"
UNTRUSTED_START = "[UNTRUSTED DATA]"
UNTRUSTED_END = "[/UNTRUSTED DATA]"


@dataclass(frozen=True)
class Turn:
    """One message of a transcript: a resource once ingested (append-only)."""

    session_id: str
    turn: int
    role: str
    content: str
    content_at: datetime
    speaker: str
    trust: str = "trusted"
    external_id: str | None = None
    resource_id: str = ""
    namespace: str | None = None  # the user or agent it belongs to (None: [pipeline] namespace)
    # How it arrived: "jsonl" (a transcript), "remember" (a direct write: the turn is the
    # memory, stored as said), "checkpoint" (turns an agent checkpointed one by one).
    source_format: str = "jsonl"
    # The project the session was about (``retrieval.projects``); None: no project.
    project: str | None = None
    # The key that wrote it (``author``); None: not through a key (the CLI, an in-process client).
    written_by: str | None = None


@dataclass
class Candidate:
    """A fact an extractor proposes, before the write gate and dedup.

    ``source_turns`` are turn numbers within the session; the pipeline maps them to
    resource ids. Importance and confidence are not the extractor's call: they are
    computed in ``retrieval.scoring`` from category, strength, trust and the flags.
    """

    content: str
    category: str
    kind: str = "fact"
    tier: str | None = None
    strength: str = "explicit"
    sentiment: str = "neutral"
    tags: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    source_turns: list[int] = field(default_factory=list)
    source_trust: str = "trusted"
    provenance: str = "user_stated"
    remember: bool = False
    action_required: bool = False
    supersedes: str | None = None
    # Structure a later stage reads instead of parsing ``content`` back (None: not given;
    # ``build_facts`` derives what it can from the extraction):
    subject: str | None = None          # whom or what the fact is about ("Priya")
    directive: str | None = None        # a standing rule for the assistant, as an imperative
    reported_by: str | None = None      # reported speech: who said it ("John said: …")
    remind_on: list[date] | None = None  # future days it points to (forward triggers)
    # What the sentence says as data (``lib/extraction/structure.py`` reads what is not given):
    relation: str | None = None         # normalised predicate: "lives_in", "uses", "scheduled_at"
    value: str | None = None            # "Denver", "Neovim", "9:30"
    valid_from: date | None = None      # the day it became true, when the text states one
    # For a procedure: its ordered steps, what must hold first, and what to watch out for.
    steps: list[str] = field(default_factory=list)
    prerequisites: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # For a negative memory ("never commit .env files"): words or globs in the context that
    # surface it whatever the query is about (".env", "git commit").
    trigger_patterns: list[str] = field(default_factory=list)


RESOURCE_SCHEMA: dict[str, pl.DataType] = {
    "resource_id": pl.String(),
    "session_id": pl.String(),
    "turn": pl.Int64(),
    "external_id": pl.String(),
    "role": pl.String(),
    "speaker": pl.String(),
    "content": pl.String(),
    "content_at": pl.Datetime("us", "UTC"),
    "trust": pl.String(),
    "source_format": pl.String(),
    "source_file": pl.String(),
    "ingested_at": pl.Datetime("us", "UTC"),
    # The user or agent the session belongs to (``flush_session(user=…)``); null: the default.
    "namespace": pl.String(),
    # The project the session was about: named by the agent or derived from the
    # transcript's metadata (``retrieval.projects``); null: none.
    "project": pl.String(),
    # The key that wrote the turn (``author``: "agent:research-bot:0b04…"); null: no key.
    "written_by": pl.String(),
}
# Columns added to a contract after files were written without them: such a file reads
# them as null, and the schema check warns instead of failing.
ADDED_COLUMNS = frozenset({"written_by"})

FACT_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.String(),
    "content": pl.String(),
    "category": pl.String(),
    "kind": pl.String(),
    "memory_kind": pl.String(),
    "tags": pl.List(pl.String()),
    "entities": pl.List(pl.String()),
    "importance": pl.Float64(),
    "confidence": pl.Float64(),
    "strength": pl.String(),
    "sentiment": pl.String(),
    "tier": pl.String(),
    # ``scope`` "project": only readers of ``project`` see it (``retrieval.agent.view.View``);
    # "global" (``project`` null): every reader of the namespace does.
    "scope": pl.String(),
    "project": pl.String(),
    "namespace": pl.String(),
    "source_trust": pl.String(),
    "provenance": pl.String(),
    "source_session": pl.String(),
    "source_resource_ids": pl.List(pl.String()),
    "source_turn_ids": pl.List(pl.String()),
    "supersedes_hint": pl.String(),
    # Typed fields from extraction (``Candidate``): later stages read these, never the prose.
    "subject": pl.String(),
    "directive": pl.String(),
    "reported_by": pl.String(),
    "remind_on": pl.List(pl.Date()),
    # What the fact says as data (structure first; ``lib/extraction/structure.py``):
    # ``subject_key`` matches subjects ("aaron standup"), ``relation`` is normalised through
    # ``[graph] relations``, ``states_change`` is true when the wording says the value
    # changed ("switched to", "now", "no longer") and ``tentative`` when the change is only
    # considered, asked or temporary. ``valid_from``: when it became true (bi-temporal model).
    "subject_key": pl.String(),
    # The name the fact gives a relative it is about ("Siobhan's partner Niamh" → "niamh").
    "subject_name": pl.String(),
    "relation": pl.String(),
    "value": pl.String(),
    "states_change": pl.Boolean(),
    "tentative": pl.Boolean(),
    # What says it changed, as lemmas ("switch", "give up", "now", "no longer"): ``change_cues``.
    "change_cue": pl.String(),
    # The fact's words without the names of the people in it ("keeps Slack in dark mode"):
    # what validity compares to tell whether a change is about an earlier fact's slot.
    "slot": pl.String(),
    # The numbers the fact writes in digits, and whether it denies or ends a state: what two
    # statements of one subject are compared by (``retrieval.text.opposed``), read once.
    "numbers": pl.List(pl.String()),
    "denies": pl.Boolean(),
    # Its content words in their compared form (``text.value_words``: "Aaron's 9:30 standup"
    # → aaron, 9:30, standup), read once: what validity's anchors and a hint's resolution
    # look a word up in, instead of reading the wording again.
    "words": pl.List(pl.String()),
    # The pairs of its entities it says are one thing, "thing = name" ("Aaron's car is a
    # Subaru WRX" → "car = Subaru WRX"): the graph merges them (``fields.same_as``).
    "same_as": pl.List(pl.String()),
    "valid_from": pl.Datetime("us", "UTC"),
    "steps": pl.List(pl.String()),
    "prerequisites": pl.List(pl.String()),
    "warnings": pl.List(pl.String()),
    "trigger_patterns": pl.List(pl.String()),
    "content_hash": pl.String(),
    "created_at": pl.Datetime("us", "UTC"),
    "prompt_version": pl.String(),
    "extractor": pl.String(),
}

ITEM_SCHEMA: dict[str, pl.DataType] = {
    **{k: v for k, v in FACT_SCHEMA.items() if k not in ("supersedes_hint", "source_session")},
    "session_id": pl.String(),
    "updated_at": pl.Datetime("us", "UTC"),
    "last_referenced_at": pl.Datetime("us", "UTC"),
    "reference_count": pl.Int64(),
    "injected_count": pl.Int64(),
    "echo_count": pl.Int64(),
    "fizzle_count": pl.Int64(),
    "reinforcement": pl.Float64(),
    "retrieval_priority": pl.Float64(),
    "status": pl.String(),
    "supersedes": pl.String(),
    "superseded_by": pl.String(),
    # When a later fact replaced this one (bi-temporal: ``valid_from`` ≤ t < ``invalid_at``
    # is when it was true); null while it holds. Nothing is deleted: ``as_of`` reads it.
    "invalid_at": pl.Datetime("us", "UTC"),
    # Why the successor retired it: the rule, the slot (subject · relation) and the cue.
    "retired_why": pl.String(),
    "contradicts": pl.List(pl.String()),
    "promoted": pl.Boolean(),
    "expires_at": pl.Datetime("us", "UTC"),
    "merged_from": pl.List(pl.String()),
    "embedding_model": pl.String(),
    # When the pipeline first stored the item; a backfilled transcript from 2023 is
    # new to the memory today, so its decay and TTLs count from today.
    "first_seen_at": pl.Datetime("us", "UTC"),
}

# The fields retrieval reads on every row it ranks: the blocking checks refuse a fact
# or an item without them (``memory_assets.lib.quality.items_suite``), and an item
# imported whole must carry them (``retrieval.interchange``).
FACT_REQUIRED = ("id", "content", "category", "kind", "tier", "source_trust", "importance", "confidence",
                 "content_hash", "created_at")
ITEM_REQUIRED = (*FACT_REQUIRED, "status")

# The graph published with the items (``lib/items/graph.py``): entities are the people,
# places, things and concepts facts mention; edges join items and entities.
EDGE_KINDS = ("mentions", "relation", "relates_to", "supersedes", "contradicts", "derived_from")
ENTITY_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.String(),
    "name": pl.String(),                 # the canonical name ("Melanie")
    "aliases": pl.List(pl.String()),     # other names merged into it ("Mel"), logged when merged
    "kind": pl.String(),                 # "name" (a proper name) or "concept" (a noun: "turtle")
    "namespace": pl.String(),
    "facts": pl.Int64(),                 # active items that mention it
    "status": pl.String(),               # active: some active item mentions it; archived otherwise
    "first_seen_at": pl.Datetime("us", "UTC"),
    "updated_at": pl.Datetime("us", "UTC"),
}
EDGE_SCHEMA: dict[str, pl.DataType] = {
    "source": pl.String(),               # an item or entity id
    "target": pl.String(),               # an item, entity or resource id
    "kind": pl.String(),                 # EDGE_KINDS
    "relation": pl.String(),             # for a relation edge: "lives_in", "prefers", …
    "namespace": pl.String(),
    "weight": pl.Float64(),              # how many observations support it
    "confidence": pl.Float64(),          # as of the build: reinforced when seen again, decayed nightly
    "created_at": pl.Datetime("us", "UTC"),
    "last_reinforced_at": pl.Datetime("us", "UTC"),
}

REJECTION_SCHEMA: dict[str, pl.DataType] = {
    "session_id": pl.String(),
    "reason": pl.String(),
    "detail": pl.String(),
    # Credentials are never stored: a credential rejection keeps a redacted preview only.
    "preview": pl.String(),
    "source_resource_ids": pl.List(pl.String()),
    "extractor": pl.String(),
    "rejected_at": pl.Datetime("us", "UTC"),
}


def empty_frame(schema: dict[str, pl.DataType]) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)
