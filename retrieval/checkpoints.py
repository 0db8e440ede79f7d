"""Per-turn checkpoints: every turn of an agent's session, kept the moment it is acknowledged.

An agent (through ``memory serve``'s ``append_turn``) checkpoints each turn as one record
``{user_input, tool_calls, llm_output, internal_state}`` keyed by (namespace, session,
turn). The checkpoints are the session's state: ``replay`` rebuilds it after a restart,
and ``to_messages`` turns it into the transcript the inbox takes when the session is
flushed. A turn acknowledged but never flushed (the process died first) stays
``unflushed``, so the next flush hands it over (``pending_sessions``): nothing
acknowledged is lost.

One code path, two backends, through SQLAlchemy Core:

* **SQLite** in the data root (``<data root>/service/checkpoints.sqlite3``), the
  embedded default;
* **PostgreSQL** when a DSN is configured: ``[service] checkpoint_dsn``, overridden by the
  ``MEMORY_CHECKPOINT_DSN`` environment variable (``postgresql+psycopg://user@host/db``).

The store is a store of the user's words, so credentials and the configured PII kinds
are redacted before a record is written (``retrieval.credentials``), as the inbox does.
Off-the-record exchanges are kept here (the agent's state needs them to replay) and
withheld when the checkpoints become messages (``retrieval.privacy``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from sqlalchemy import (
    Column,
    DateTime,
    Engine,
    Integer,
    String,
    Table,
    Text,
    and_,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError

from retrieval import credentials, database
from retrieval.database import configured_dsn
from retrieval.disabled import refuse_if_disabled
from retrieval.inbox import redacted
from retrieval.moments import utc
from retrieval.paths import DataRoot
from retrieval.privacy import withhold_off_the_record

# Seconds a writer waits for another process's write to finish before giving up
# (SQLite allows one writer at a time; two agents appending at once take turns).
MAX_TURN = 2**31 - 1  # an INTEGER column on both backends
KEY_CHARS = 255  # the longest namespace, session id or project name (a VARCHAR on PostgreSQL)

_checkpoints = Table(
    "checkpoints", database.metadata,
    Column("namespace", String(KEY_CHARS), primary_key=True),
    Column("session_id", String(KEY_CHARS), primary_key=True),
    Column("turn", Integer, primary_key=True, autoincrement=False),
    # The redacted record as canonical JSON (sorted keys): a retry of the same turn
    # compares equal as text.
    Column("record", Text, nullable=False),
    Column("project", String(KEY_CHARS), nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("flushed_at", DateTime(timezone=True), nullable=True),
)


class CheckpointError(ValueError):
    """A turn cannot be checkpointed: a bad record or key, or the store is unreachable."""


class CheckpointConflict(CheckpointError):
    """The turn was already checkpointed with different content: a turn is written once."""


class TurnRecord(BaseModel):
    """One turn as the agent sends it. Unknown fields are refused, so a typo is an error."""

    model_config = ConfigDict(extra="forbid")

    user_input: str = ""
    tool_calls: list[Any] = []
    llm_output: str = ""
    # The agent's own scratch state, for replay: never turned into a message.
    internal_state: dict[str, Any] = {}


@dataclass(frozen=True)
class Checkpoint:
    """One stored turn: its key, its record (redacted), and when it reached the inbox (None: not yet)."""

    namespace: str
    session_id: str
    turn: int
    record: dict[str, Any]
    project: str | None
    created_at: datetime
    flushed_at: datetime | None = None


class CheckpointStore(database.EngineOwner):
    """The per-turn checkpoints of every session under one data root (or one PostgreSQL DSN).

    Args:
        paths: the data root; the SQLite store lives under it.
        dsn: a SQLAlchemy URL (``postgresql+psycopg://…``); None for SQLite in the data root.
        pii: the PII kinds to redact besides credentials (the config's ``[privacy] redact``).
    """

    def __init__(self, paths: DataRoot, dsn: str | None = None, *, pii: Iterable[str]) -> None:
        self.paths = paths
        try:
            self.engine = database.engine(paths, dsn)
        except database.DatabaseRefused as exc:
            raise CheckpointError(str(exc)) from None
        self._pii = tuple(pii)
        self._ready = False

    @classmethod
    def for_root(cls, paths: DataRoot, config: Any) -> CheckpointStore:
        """The store a config names (``configured_dsn``), redacting its ``[privacy] redact`` kinds."""
        return cls(paths, configured_dsn(config), pii=credentials.pii_from_config(config))

    def __repr__(self) -> str:
        return f"CheckpointStore({self.engine.url.render_as_string(hide_password=True)})"

    def _db(self) -> Engine:
        """The engine, its table created on first use."""
        if not self._ready:
            try:
                database.create_tables(self.engine, what="the checkpoint store")
            except database.DatabaseRefused as exc:
                raise CheckpointError(str(exc)) from exc
            self._ready = True
        return self.engine

    # -- writing ---------------------------------------------------------------------------

    def append(self, namespace: str, session_id: str, turn: int, record: Mapping[str, Any], *,
               project: str | None = None, now: datetime) -> Checkpoint:
        """Checkpoint one turn; durable when this returns.

        Sending the same turn again with the same content returns the stored checkpoint
        (a retry after a lost acknowledgement is safe).

        Args:
            namespace: the agent or user the session belongs to.
            session_id: the session.
            turn: the turn number within the session (0 or more).
            record: ``{user_input, tool_calls, llm_output, internal_state}`` (``TurnRecord``).
            project: the project the session works on, if any.
            now: when the turn was checkpointed.

        Raises:
            CheckpointError: an empty namespace or session, a bad turn number, or a record
                ``TurnRecord`` refuses.
            CheckpointConflict: the turn is already checkpointed with different content.
        """
        refuse_if_disabled(self.paths, namespace)  # `memory disable`: nothing is captured
        where = f"{namespace}/{session_id} turn {turn}"
        keys = (("namespace", namespace), ("session_id", session_id), ("project", project))
        for name, value in keys[:2] if project is None else keys:
            if not isinstance(value, str) or not value.strip() or len(value) > KEY_CHARS:
                raise CheckpointError(f"{where}: {name} must be a non-empty string of at most {KEY_CHARS} characters")
        if isinstance(turn, bool) or not isinstance(turn, int) or not 0 <= turn <= MAX_TURN:
            raise CheckpointError(f"{where}: turn must be an integer from 0 to {MAX_TURN}, got {turn!r}")
        try:
            valid = TurnRecord.model_validate(record)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'record'}: {e['msg']}" for e in exc.errors())
            raise CheckpointError(f"{where}: {problems}") from None
        clean = redacted(valid.model_dump(), self._pii)
        text = json.dumps(clean, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        row = {"namespace": namespace, "session_id": session_id, "turn": turn, "record": text,
               "project": project, "created_at": utc(now), "flushed_at": None}
        engine = self._db()
        try:
            with engine.begin() as conn:
                conn.execute(insert(_checkpoints).values(**row))
            return _checkpoint(row)
        except IntegrityError:
            pass  # the key is taken: a retry, or a conflict
        existing = self._get(namespace, session_id, turn)
        if existing is None:  # erased between the insert and this read
            raise CheckpointConflict(f"{where}: was being erased while it was sent again; send it again")
        stored_text = json.dumps(existing.record, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        if stored_text != text or existing.project != project:
            raise CheckpointConflict(
                f"{where}: already checkpointed with different content; a turn is written once "
                f"(send the next turn number, or the same content to retry)")
        return existing

    def mark_flushed(self, namespace: str, session_id: str, upto_turn: int, now: datetime) -> int:
        """Record that the session's turns up to ``upto_turn`` reached the inbox; the count marked."""
        table = _checkpoints.c
        with self._db().begin() as conn:
            return conn.execute(
                update(_checkpoints)
                .where(table.namespace == namespace, table.session_id == session_id,
                       table.turn <= upto_turn, table.flushed_at.is_(None))
                .values(flushed_at=utc(now))).rowcount

    def erase(self, namespace: str, session_id: str | None = None, *, turns: Iterable[int] | None = None) -> int:
        """Delete a namespace's checkpoints (or one session's, or some of its ``turns``): the
        right to be forgotten. On SQLite the file is then rewritten (``VACUUM``, the WAL
        truncated), so the deleted turns' words are not left behind in free pages.
        Returns the count deleted."""
        table = _checkpoints.c
        condition = table.namespace == namespace
        if session_id is not None:
            condition = and_(condition, table.session_id == session_id)
        if turns is not None:
            condition = and_(condition, table.turn.in_(sorted(set(turns))))
        with self._db().begin() as conn:
            deleted = conn.execute(delete(_checkpoints).where(condition)).rowcount
        if deleted:
            database.compact(self.engine)
        return deleted

    # -- reading ---------------------------------------------------------------------------

    def _select(self, *conditions: Any) -> list[Checkpoint]:
        query = select(_checkpoints).where(*conditions).order_by(_checkpoints.c.turn)
        with self._db().connect() as conn:
            return [_checkpoint(row._mapping) for row in conn.execute(query)]

    def _get(self, namespace: str, session_id: str, turn: int) -> Checkpoint | None:
        table = _checkpoints.c
        found = self._select(table.namespace == namespace, table.session_id == session_id, table.turn == turn)
        return found[0] if found else None

    def replay(self, namespace: str, session_id: str, upto_turn: int | None = None) -> list[Checkpoint]:
        """The session's checkpoints in turn order, up to ``upto_turn`` when given: its state rebuilt."""
        table = _checkpoints.c
        conditions = [table.namespace == namespace, table.session_id == session_id]
        if upto_turn is not None:
            conditions.append(table.turn <= upto_turn)
        return self._select(*conditions)

    def unflushed(self, namespace: str, session_id: str) -> list[Checkpoint]:
        """The session's turns not yet handed to the inbox, in turn order."""
        table = _checkpoints.c
        return self._select(table.namespace == namespace, table.session_id == session_id, table.flushed_at.is_(None))

    def pending_sessions(self, namespace: str | None = None) -> list[tuple[str, str]]:
        """(namespace, session) pairs holding unflushed turns: what a flush after a crash recovers."""
        table = _checkpoints.c
        query = select(table.namespace, table.session_id).where(table.flushed_at.is_(None))
        if namespace is not None:
            query = query.where(table.namespace == namespace)
        query = query.distinct().order_by(table.namespace, table.session_id)
        with self._db().connect() as conn:
            return [(row.namespace, row.session_id) for row in conn.execute(query)]

    @staticmethod
    def to_messages(checkpoints: Sequence[Checkpoint]) -> list[dict[str, Any]]:
        """The transcript messages of ``checkpoints`` (the module's ``to_messages``)."""
        return to_messages(checkpoints)


def _checkpoint(row: Mapping[str, Any]) -> Checkpoint:
    # SQLite keeps no offset: every time is stored as UTC and read back naive.
    flushed = row["flushed_at"]
    return Checkpoint(namespace=row["namespace"], session_id=row["session_id"], turn=row["turn"],
                      record=json.loads(row["record"]), project=row["project"],
                      created_at=utc(row["created_at"]), flushed_at=utc(flushed) if flushed else None)


def _tool_output(call: Any) -> str:
    """What a tool call returned, as text: its ``output``, ``result`` or ``content``, else the call as JSON."""
    if isinstance(call, str):
        return call
    if isinstance(call, Mapping):
        for key in ("output", "result", "content"):
            if call.get(key) is not None:
                value = call[key]
                return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return json.dumps(call, ensure_ascii=False, sort_keys=True)


def to_messages(checkpoints: Sequence[Checkpoint]) -> list[dict[str, Any]]:
    """The canonical transcript messages the inbox takes (``MemoryClient.flush_session``).

    Per checkpoint, in order: a ``user`` message from ``user_input`` (when not empty), a
    ``tool`` message (untrusted) per tool call's output, and an ``assistant`` message from
    ``llm_output`` (when not empty). ``internal_state`` is the agent's scratch state, not
    something anyone said, so it never becomes a message. ``turn`` counts messages from 1
    across the session; ``ts`` is the checkpoint's time. An off-the-record exchange is
    withheld (``retrieval.privacy.withhold_off_the_record``).
    """
    messages: list[dict[str, Any]] = []

    def add(checkpoint: Checkpoint, role: str, content: str, trust: str) -> None:
        messages.append({"turn": len(messages) + 1, "ts": checkpoint.created_at.isoformat(),
                         "role": role, "content": content, "trust": trust})

    for checkpoint in checkpoints:
        record = checkpoint.record
        if record.get("user_input"):
            add(checkpoint, "user", record["user_input"], "trusted")
        for call in record.get("tool_calls") or []:
            add(checkpoint, "tool", _tool_output(call), "untrusted")
        if record.get("llm_output"):
            add(checkpoint, "assistant", record["llm_output"], "trusted")
    return withhold_off_the_record(messages)
