"""Keyed documents: what a framework's key-value store puts (``retrieval.integrations.langgraph``).

A LangGraph agent writes its long-term memory as documents, a JSON object under a key in
a path of names (``("memories", "aaron")``, ``"food"``), and reads one back by its key.
The document's words become a memory like any other (``MemoryClient.remember``: the
inbox, the gate, the published items, every door's search and block); this table keeps
what the framework needs besides: the document as it was put, redacted, its path and key,
and the memory made of it (``memory_id``: the pending id ``remember`` answered, which
names the published item once the pipeline has made it, ``retrieval.agent.browse``).

It lives in the service's database beside the checkpoints (``retrieval.database``):
SQLite in the data root, or the PostgreSQL of ``[service] checkpoint_dsn`` that several
service processes share. ``memory erase`` deletes a namespace's documents, and the
documents an erased memory was made of (``memory_assets.lib.erasure``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Column, DateTime, Engine, String, Table, Text, and_, delete, insert, or_, select, update

from retrieval import credentials, database
from retrieval.database import configured_dsn
from retrieval.disabled import refuse_if_disabled
from retrieval.inbox import redacted
from retrieval.moments import utc
from retrieval.paths import DataRoot

KEY_CHARS = 255  # a namespace, a key, one name of a path (a VARCHAR on PostgreSQL)
PATH_MAX = 16  # names in a path
VALUE_MAX_CHARS = 100_000  # a document as JSON

_documents = Table(
    "documents", database.metadata,
    Column("namespace", String(KEY_CHARS), primary_key=True),
    Column("path", Text, primary_key=True),  # the names as a JSON array
    Column("key", String(KEY_CHARS), primary_key=True),
    Column("value", Text, nullable=False),  # the redacted document as JSON
    Column("memory_id", String(KEY_CHARS), nullable=True),  # null: not indexed (no memory made of it)
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)


class DocumentError(ValueError):
    """A document, key or path this store refuses (the message says which and why)."""


@dataclass(frozen=True)
class Document:
    namespace: str
    path: tuple[str, ...]
    key: str
    value: dict[str, Any]
    memory_id: str | None
    created_at: datetime
    updated_at: datetime


def _row(row: Mapping[str, Any]) -> Document:
    return Document(row["namespace"], tuple(json.loads(row["path"])), row["key"], json.loads(row["value"]),
                    row["memory_id"], utc(row["created_at"]), utc(row["updated_at"]))


def _path(path: Sequence[str]) -> str:
    return json.dumps(list(path), ensure_ascii=False, separators=(",", ":"))


class DocumentStore(database.EngineOwner):
    """The keyed documents under one data root (or one PostgreSQL DSN)."""

    def __init__(self, paths: DataRoot, dsn: str | None = None, *, pii: Iterable[str]) -> None:
        self.paths = paths
        self.engine = database.engine(paths, dsn)
        self._pii = tuple(pii)
        self._ready = False

    @classmethod
    def for_root(cls, paths: DataRoot, config: Any) -> DocumentStore:
        return cls(paths, configured_dsn(config), pii=credentials.pii_from_config(config))

    def _db(self) -> Engine:
        if not self._ready:
            database.create_tables(self.engine, [_documents], what="the document store")
            self._ready = True
        return self.engine

    def redact(self, value: Mapping[str, Any]) -> dict[str, Any]:
        """``value`` as it may be stored: credentials and the configured PII kinds redacted."""
        return redacted(dict(value), self._pii)

    def put(self, namespace: str, path: Sequence[str], key: str, value: Mapping[str, Any], memory_id: str | None,
            now: datetime) -> Document:
        """Store ``value`` (redacted) under ``path`` and ``key``, replacing what was there
        (its ``created_at`` kept). Raises ``DocumentError`` for a path, key or value out of
        bounds, or one that is not JSON."""
        refuse_if_disabled(self.paths, namespace)
        check(namespace, path, key)
        try:
            text = json.dumps(self.redact(value), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        except (TypeError, ValueError) as exc:
            raise DocumentError(f"{'/'.join(path)}/{key}: the value is not JSON ({exc})") from None
        if len(text) > VALUE_MAX_CHARS:
            raise DocumentError(f"{'/'.join(path)}/{key}: the value is {len(text):,} characters as JSON; "
                                f"at most {VALUE_MAX_CHARS:,}")
        where = self._where(namespace, path, key)
        with self._db().begin() as db:
            old = db.execute(select(_documents.c.created_at).where(where)).scalar()
            row = {"value": text, "memory_id": memory_id, "updated_at": utc(now)}
            if old is None:
                row |= {"namespace": namespace, "path": _path(path), "key": key, "created_at": utc(now)}
                db.execute(insert(_documents).values(**row))
            else:
                db.execute(update(_documents).where(where).values(**row))
        return Document(namespace, tuple(path), key, json.loads(text), memory_id, utc(old or now), utc(now))

    @staticmethod
    def _where(namespace: str, path: Sequence[str], key: str) -> Any:
        c = _documents.c
        return and_(c.namespace == namespace, c.path == _path(path), c.key == key)

    def get(self, namespace: str, path: Sequence[str], key: str) -> Document | None:
        with self._db().connect() as db:
            row = db.execute(select(_documents).where(self._where(namespace, path, key))).mappings().first()
        return None if row is None else _row(row)

    def delete(self, namespace: str, path: Sequence[str], key: str) -> Document | None:
        """Remove one document; the one removed, or None."""
        with self._db().begin() as db:
            row = db.execute(select(_documents).where(self._where(namespace, path, key))).mappings().first()
            db.execute(delete(_documents).where(self._where(namespace, path, key)))
        return None if row is None else _row(row)

    def under(self, namespaces: Iterable[str] | None, prefix: Sequence[str] = ()) -> list[Document]:
        """The documents of ``namespaces`` (None: every namespace) whose path begins with
        ``prefix``, the most recently updated first."""
        query = select(_documents).order_by(_documents.c.updated_at.desc(), _documents.c.key)
        if namespaces is not None:
            query = query.where(_documents.c.namespace.in_(sorted(set(namespaces))))
        if prefix:  # the JSON array's text begins with the prefix's names
            query = query.where(_documents.c.path.startswith(_path(prefix)[:-1], autoescape=True))
        with self._db().connect() as db:
            rows = [_row(r) for r in db.execute(query).mappings()]
        return [d for d in rows if d.path[:len(prefix)] == tuple(prefix)]

    def paths_of(self, namespaces: Iterable[str] | None) -> list[tuple[str, ...]]:
        """Every path that holds a document, sorted."""
        query = select(_documents.c.path).distinct()
        if namespaces is not None:
            query = query.where(_documents.c.namespace.in_(sorted(set(namespaces))))
        with self._db().connect() as db:
            return sorted({tuple(json.loads(p)) for p in db.execute(query).scalars()})

    def erase(self, namespaces: Iterable[str], memory_sessions: Iterable[str] = ()) -> int:
        """Delete every document of ``namespaces`` and every document whose memory was read
        from one of ``memory_sessions`` (``pending:<session>``): the right to be forgotten.
        The count deleted."""
        namespaces, made = sorted(set(namespaces)), sorted({f"pending:{s}" for s in memory_sessions})
        if not namespaces and not made:
            return 0
        with self._db().begin() as db:
            gone = int(db.execute(delete(_documents).where(or_(_documents.c.namespace.in_(namespaces),
                                                               _documents.c.memory_id.in_(made)))).rowcount or 0)
        if gone:
            database.compact(self.engine)  # no word of them left in the file's free pages
        return gone


def check(namespace: str, path: Sequence[str], key: str) -> None:
    """Raise ``DocumentError`` unless the namespace, each name of ``path`` and ``key`` are
    non-empty strings of at most ``KEY_CHARS`` characters, ``PATH_MAX`` names at most."""
    if not path or len(path) > PATH_MAX:
        raise DocumentError(f"a path has 1 to {PATH_MAX} names, got {len(path)}")
    for what, name in (("namespace", namespace), ("key", key), *(("path name", p) for p in path)):
        if not isinstance(name, str) or not name.strip() or len(name) > KEY_CHARS or "\x00" in name:
            raise DocumentError(f"a {what} is a non-empty string of at most {KEY_CHARS} characters, got {name!r:.80}")
