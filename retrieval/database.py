"""The database under the data root: per-turn checkpoints (``retrieval.checkpoints``) and
the service's API keys (``retrieval.service.keys``), one database for both. Kernel, not
service: the pipeline's erasure (``memory_assets.lib.erasure``) deletes checkpoints too.

SQLite in the data root by default (``<data root>/service/service.sqlite3``); the
PostgreSQL of ``MEMORY_CHECKPOINT_DSN`` or ``[service] checkpoint_dsn`` when one is
configured, so several service processes on several machines share it. One SQLAlchemy
Core code path serves both.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, MetaData, Table, create_engine, event
from sqlalchemy.exc import DatabaseError
from sqlalchemy.engine import make_url

from retrieval.paths import DataRoot

metadata = MetaData()
DSN_ENV = "MEMORY_CHECKPOINT_DSN"
# Two processes writing at once: the second waits this long for the first's lock.
BUSY_TIMEOUT_SECONDS = 30.0


class DatabaseRefused(ValueError):
    """The configured database URL cannot be used (the message says why)."""


def sqlite_path(paths: DataRoot) -> Path:
    """Where the embedded database lives: under a local data root, or beside an object-store
    root's other disk-only state (``DataRoot.local``: SQLite needs a disk; several machines
    share keys and checkpoints through PostgreSQL, ``[service] checkpoint_dsn``)."""
    return paths.local / "service" / "service.sqlite3"


def configured_dsn(config: Any) -> str | None:
    """The DSN in force: ``MEMORY_CHECKPOINT_DSN``, else ``[service] checkpoint_dsn``;
    None (the embedded SQLite database) when both are empty."""
    return os.environ.get(DSN_ENV) or config.service.checkpoint_dsn or None


def _sqlite_engine(paths: DataRoot) -> Engine:
    path = sqlite_path(paths)
    path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(f"sqlite:///{path}", connect_args={"timeout": BUSY_TIMEOUT_SECONDS,
                                                               "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _durable(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        # WAL lets readers (replay, key checks) run beside the one writer. synchronous=FULL
        # fsyncs the WAL at every commit: NORMAL would already survive a kill -9 (the WAL
        # sits in the OS page cache, which outlives the process), but an acknowledged turn
        # must also survive a power cut or a kernel crash, and only FULL promises that.
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.close()

    return engine


def engine(paths: DataRoot, dsn: str | None) -> Engine:
    """The engine for ``dsn`` (None: SQLite in the data root)."""
    if not dsn:
        return _sqlite_engine(paths)
    url = make_url(dsn)
    if url.drivername == "postgresql":
        url = url.set(drivername="postgresql+psycopg")  # psycopg 3 is the installed driver
    if url.get_backend_name() == "sqlite":
        raise DatabaseRefused(f"service DSN {url.render_as_string(hide_password=True)!r}: "
                              "leave it empty for the SQLite database in the data root")
    # pool_pre_ping: a server restart between two turns is not an error for the next turn.
    return create_engine(url, pool_pre_ping=True)


def engine_for(paths: DataRoot, config: Any) -> Engine:
    """The engine the config names."""
    return engine(paths, configured_dsn(config))


def create_tables(engine: Engine, tables: list[Table] | None = None, *, what: str) -> None:
    """Create ``tables`` (default all) if missing. Another process creating one between
    our check and our CREATE ("already exists") is retried; a store that cannot be opened
    raises ``DatabaseRefused`` naming ``what`` and why."""
    for attempt in range(3):
        try:
            metadata.create_all(engine, tables=tables)
            return
        except DatabaseError as exc:
            if attempt == 2:
                raise DatabaseRefused(f"cannot open {what} ({engine.url.render_as_string(hide_password=True)}): "
                                      f"{exc.orig}") from exc
            time.sleep(0.05 * (attempt + 1))


def compact(engine: Engine) -> None:
    """After an erasure: on SQLite the file is rewritten (``VACUUM``, the WAL truncated), so
    the deleted rows' words are not left behind in free pages. PostgreSQL: nothing to do
    here (its autovacuum reclaims the space)."""
    if engine.url.get_backend_name() == "sqlite":
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("VACUUM")
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")


class EngineOwner:
    """A store over one engine: ``close`` disposes of it, and ``with`` closes it."""

    engine: Engine

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self):  # noqa: ANN204 - the subclass
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
