"""Signing in to the memory browser: an API key once, then an HTTP-only session cookie.

The browser never holds the key after the sign-in form: it holds a random session token
(``memory_ui``, HTTP-only, ``SameSite=Strict``, ``Secure`` over HTTPS, path ``/ui``),
and the service database holds the token's SHA-256, the key's id, the session's CSRF
token and when it ends. So every worker process and every server sharing the database
knows the session, a stolen database row cannot be replayed as a cookie, and revoking the
key (``memory keys revoke``) ends its sessions at once: each request looks the key up live.

Every form that changes something carries the session's CSRF token (htmx sends it as the
``X-CSRF-Token`` header); the sign-in form itself is protected by a double-submit token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import sqlalchemy as sa

from retrieval import database
from retrieval.moments import utc

COOKIE = "memory_ui"
LOGIN_COOKIE = "memory_ui_login"  # the sign-in form's double-submit token
LIFETIME = timedelta(hours=12)

_sessions = sa.Table(
    "ui_sessions", database.metadata,
    sa.Column("token_sha256", sa.String(64), primary_key=True),
    sa.Column("key_id", sa.String(12), nullable=False, index=True),
    sa.Column("csrf", sa.String(64), nullable=False),
    sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def same(a: str | None, b: str | None) -> bool:
    """Two tokens equal, compared in constant time; a missing one never matches."""
    return bool(a) and bool(b) and hmac.compare_digest(str(a), str(b))


@dataclass(frozen=True)
class SignIn:
    key_id: str
    csrf: str
    expires_at: datetime


class SignIns:
    """The browser sessions of one service database."""

    def __init__(self, engine: sa.Engine, lifetime: timedelta = LIFETIME) -> None:
        self.engine, self.lifetime = engine, lifetime
        database.create_tables(engine, [_sessions], what="the memory browser's sessions")

    def start(self, key_id: str, now: datetime | None = None) -> tuple[str, SignIn]:
        """A new session for the key: its token (for the cookie, shown once) and record."""
        now = utc(now or datetime.now(timezone.utc))
        token, csrf = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        with self.engine.begin() as db:
            db.execute(sa.delete(_sessions).where(_sessions.c.expires_at < now))  # the expired ones go
            db.execute(sa.insert(_sessions).values(token_sha256=_digest(token), key_id=key_id, csrf=csrf,
                                                   created_at=now, expires_at=now + self.lifetime))
        return token, SignIn(key_id, csrf, now + self.lifetime)

    def find(self, token: str | None, now: datetime | None = None) -> SignIn | None:
        """The live session ``token`` names, or None (unknown, malformed or expired)."""
        if not token or len(token) > 128:
            return None
        with self.engine.connect() as db:
            row = db.execute(sa.select(_sessions).where(_sessions.c.token_sha256 == _digest(token))).mappings().first()
        if row is None or utc(row["expires_at"]) <= utc(now or datetime.now(timezone.utc)):
            return None
        return SignIn(row["key_id"], row["csrf"], utc(row["expires_at"]))

    def end(self, token: str | None) -> None:
        if token:
            with self.engine.begin() as db:
                db.execute(sa.delete(_sessions).where(_sessions.c.token_sha256 == _digest(token)))
