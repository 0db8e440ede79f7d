"""API keys for the service: one per agent, stored as hashes only.

A key is ``mem_<key id>_<secret>``: the id finds the row, the secret is checked against
its SHA-256 in constant time. The secret is 32 random bytes, so a fast hash is enough
(a slow password hash guards low-entropy secrets people choose; nobody chooses these).
The plain key is shown once, when it is created, and is not stored anywhere.

A key belongs to an agent and reads and writes one namespace, its own; it may also read
the shared namespaces it was granted. Its ``role`` says whose word its writes are: the
user's own agent (``user``: what it stores is what the user said) or another agent
(``agent``: what it stores is that agent's claim, ``agent_stated``, which never outranks
the user). A key whose agent is named after its namespace is the user's own unless told
otherwise; any other is another agent's. Keys live in the service database: SQLite in the
data root, or the PostgreSQL the checkpoints use when a DSN is configured
(``retrieval.database``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import sqlalchemy as sa

from retrieval.database import metadata
from retrieval.moments import utc
from retrieval.names import InvalidName, check_namespace
from retrieval.schema import AUTHOR_ROLES as ROLES, author

PREFIX = "mem"
_KEY = re.compile(rf"^{PREFIX}_([0-9a-f]{{12}})_([A-Za-z0-9_-]{{20,}})$")
# How long a verified key is trusted without reading the database again: a revocation
# takes effect within this many seconds on a running server.
CACHE_SECONDS = 2.0

keys_table = sa.Table(
    "api_keys", metadata,
    sa.Column("key_id", sa.String(12), primary_key=True),
    sa.Column("secret_sha256", sa.String(64), nullable=False),
    sa.Column("agent", sa.String(128), nullable=False),
    sa.Column("namespace", sa.String(128), nullable=False),
    sa.Column("grants", sa.Text, nullable=False, default="[]"),
    sa.Column("writes_per_minute", sa.Integer, nullable=True),
    # "user" or "agent"; null on a key created before roles: as ``default_role`` says.
    sa.Column("role", sa.String(8), nullable=True),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
)


class KeyRefused(ValueError):
    """A key could not be created or revoked as asked (the message says why)."""


@dataclass(frozen=True)
class ApiKey:
    """What a key may do. ``grants``: shared namespaces it may read besides its own."""

    key_id: str
    agent: str
    namespace: str
    grants: tuple[str, ...] = ()
    writes_per_minute: int | None = None
    created_at: datetime | None = None
    revoked_at: datetime | None = None
    role: str = "user"

    @property
    def author(self) -> str:
        """Who its writes are from, as every write records it (``retrieval.schema.author``)."""
        return author(self.role, self.agent, self.key_id)

    def may_read(self, namespace: str) -> bool:
        return namespace == self.namespace or namespace in self.grants

    def may_write(self, namespace: str) -> bool:
        return namespace == self.namespace

    def as_dict(self) -> dict:
        return {"key_id": self.key_id, "agent": self.agent, "namespace": self.namespace, "grants": list(self.grants),
                "role": self.role, "writes_per_minute": self.writes_per_minute,
                "created_at": self.created_at.isoformat() if self.created_at else None,
                "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None}


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def default_role(agent: str, namespace: str) -> str:
    """A key's role when none is given: the user's own agent when it is named after the
    namespace (``memory keys create alice``), another agent otherwise."""
    return "user" if agent == namespace else "agent"


def _name(value: str, what: str) -> str:
    try:
        return check_namespace(value)
    except InvalidName:
        raise KeyRefused(f"{what} {value!r}: use letters, digits and . _ @ - (up to 128 characters)") from None


@dataclass
class KeyStore:
    """Create, list, revoke and verify keys in the service database."""

    engine: sa.Engine
    _cache: dict[str, tuple[float, ApiKey | None, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        metadata.create_all(self.engine, tables=[keys_table])
        # A database made before keys had a role gains the column (null: ``default_role``).
        if "role" not in {c["name"] for c in sa.inspect(self.engine).get_columns(keys_table.name)}:
            with self.engine.begin() as db:
                db.execute(sa.text(f"ALTER TABLE {keys_table.name} ADD COLUMN role VARCHAR(8)"))

    def create(self, agent: str, namespace: str | None = None, *, grants: tuple[str, ...] = (),
               writes_per_minute: int | None = None, role: str | None = None,
               now: datetime | None = None) -> tuple[str, ApiKey]:
        """A new key for ``agent`` (its namespace: ``namespace``, default the agent's name;
        ``role``: ``user`` or ``agent``, default ``default_role``). Returns the plain key,
        shown this once, and what it may do."""
        agent = _name(agent, "agent")
        namespace = _name(namespace or agent, "namespace")
        if role not in (None, *ROLES):
            raise KeyRefused(f"role {role!r}: user (the user's own agent) or agent (another agent)")
        role = role or default_role(agent, namespace)
        grants = tuple(dict.fromkeys(_name(g, "granted namespace") for g in grants if g != namespace))
        if writes_per_minute is not None and writes_per_minute < 1:
            raise KeyRefused(f"writes per minute {writes_per_minute}: at least 1")
        key_id, secret = secrets.token_hex(6), secrets.token_urlsafe(32)
        record = ApiKey(key_id, agent, namespace, grants, writes_per_minute, now or datetime.now(timezone.utc),
                        role=role)
        with self.engine.begin() as db:
            db.execute(keys_table.insert().values(
                key_id=key_id, secret_sha256=_digest(secret), agent=agent, namespace=namespace,
                grants=json.dumps(list(grants)), writes_per_minute=writes_per_minute, created_at=record.created_at,
                role=role))
        return f"{PREFIX}_{key_id}_{secret}", record

    def list(self, *, revoked: bool = False) -> list[ApiKey]:
        """Every key (without secrets), oldest first; revoked ones only when asked."""
        query = sa.select(keys_table).order_by(keys_table.c.created_at)
        if not revoked:
            query = query.where(keys_table.c.revoked_at.is_(None))
        with self.engine.connect() as db:
            return [_record(row) for row in db.execute(query).mappings()]

    def revoke(self, key_id: str, *, now: datetime | None = None) -> ApiKey:
        """Revoke a key by its id (the part after ``mem_``), or by the whole key."""
        if (m := _KEY.match(key_id)) is not None:
            key_id = m.group(1)
        with self.engine.begin() as db:
            done = db.execute(keys_table.update().where(keys_table.c.key_id == key_id)
                              .where(keys_table.c.revoked_at.is_(None))
                              .values(revoked_at=now or datetime.now(timezone.utc)))
            row = db.execute(sa.select(keys_table).where(keys_table.c.key_id == key_id)).mappings().first()
        if row is None:
            raise KeyRefused(f"no key with id {key_id!r}")
        # Revoking twice is not an error: the key is revoked either way (``done`` is 0 then).
        del done
        self._cache.pop(key_id, None)
        return _record(row)

    def verify(self, presented: str | None) -> ApiKey | None:
        """The key's record when ``presented`` is a live key; None otherwise (unknown,
        malformed, wrong secret or revoked: the caller cannot tell which)."""
        m = _KEY.match(presented or "")
        if m is None:
            return None
        key_id, secret = m.groups()
        record, expected = self._lookup(key_id)
        if record is None or not hmac.compare_digest(_digest(secret), expected):
            return None
        return record

    def live(self, key_id: str) -> ApiKey | None:
        """The key ``key_id`` if it is not revoked (a signed-in browser holds its id, never
        its secret: ``retrieval.service.ui``); revocation reaches it as it reaches ``verify``."""
        return self._lookup(key_id)[0]

    def _lookup(self, key_id: str) -> tuple[ApiKey | None, str]:
        """The live key's record (None: unknown or revoked) and its secret's digest, read
        again after ``CACHE_SECONDS``."""
        cached = self._cache.get(key_id)
        if cached is None or time.monotonic() - cached[0] > CACHE_SECONDS:
            with self.engine.connect() as db:
                row = db.execute(sa.select(keys_table).where(keys_table.c.key_id == key_id)).mappings().first()
            record = _record(row) if row is not None and row["revoked_at"] is None else None
            cached = (time.monotonic(), record, row["secret_sha256"] if row is not None else "")
            self._cache[key_id] = cached
        return cached[1], cached[2]


def _record(row) -> ApiKey:
    return ApiKey(row["key_id"], row["agent"], row["namespace"], tuple(json.loads(row["grants"] or "[]")),
                  row["writes_per_minute"], utc(row["created_at"]),
                  None if row["revoked_at"] is None else utc(row["revoked_at"]),
                  role=row.get("role") or default_role(row["agent"], row["namespace"]))
