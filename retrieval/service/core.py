"""What the HTTP API and the MCP server share: who is calling, what they may touch, and
how fast they may write.

Both transports call ``Service.reader`` or ``Service.writer`` with the caller's key and
the namespace asked for, and then the same ``MemoryClient`` method an agent would call
in process. Refusals are exceptions each transport maps to its own answer (an HTTP
status, an MCP tool error), with the same words:

- ``Unauthorized`` (401): no key, a malformed or unknown key, a revoked key.
- ``Forbidden`` (403): a namespace this key was not granted, or a write to a shared
  namespace. The message never says whether the namespace exists.
- ``RateLimited`` (429): over the key's writes per minute; ``retry_after`` seconds.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from retrieval.agent.client import MemoryClient
from retrieval.config import MemoryConfig
from retrieval.database import metadata
from retrieval.service.keys import ApiKey, KeyStore


class Refused(Exception):
    status = 400

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class Unauthorized(Refused):
    status = 401


class Forbidden(Refused):
    status = 403


class RateLimited(Refused):
    status = 429

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


FORBIDDEN = "this key may not {what} namespace {namespace!r}"


write_log = sa.Table(
    "write_log", metadata,
    sa.Column("key_id", sa.String(12), nullable=False, index=True),
    sa.Column("at", sa.Float, nullable=False),
)


@dataclass
class WriteLimiter:
    """Writes per key in the last minute (a sliding window), counted in the service
    database, so every worker process of a server (and every server on one PostgreSQL)
    counts the same writes."""

    engine: sa.Engine
    per_minute: int
    window: float = 60.0

    def __post_init__(self) -> None:
        metadata.create_all(self.engine, tables=[write_log])

    def take(self, key: ApiKey, now: float | None = None) -> None:
        """Count one write for ``key``, or raise ``RateLimited`` when its window is full."""
        limit = key.writes_per_minute or self.per_minute
        now = time.time() if now is None else now
        rows = write_log.c
        with self.engine.begin() as db:
            # The delete comes first: it takes the write lock, so two processes counting the
            # same key's window take turns.
            db.execute(write_log.delete().where(rows.key_id == key.key_id, rows.at <= now - self.window))
            count, oldest = db.execute(sa.select(sa.func.count(), sa.func.min(rows.at))
                                       .where(rows.key_id == key.key_id)).one()
            if count >= limit:
                wait = max(1, math.ceil(self.window - (now - oldest)))
                raise RateLimited(f"over {limit} writes a minute for this key; retry in {wait} s", wait)
            db.execute(write_log.insert().values(key_id=key.key_id, at=now))


class Service:
    """One ``MemoryClient`` over the data root, served to many keys."""

    def __init__(self, client: MemoryClient, keys: KeyStore, config: MemoryConfig | None = None):
        self.client, self.keys = client, keys
        self.config = config or client.config
        self.limiter = WriteLimiter(keys.engine, int(self.config.service.writes_per_minute))
        # At most `[service] concurrent_searches` inject/search calls run at once in this process
        # (0: one per core); the others wait their turn. Twenty at once only took turns at the
        # interpreter lock, each waiting on every other's hand-offs to LanceDB and ONNX Runtime
        # threads: with 20 agents on 2 cores, inject p95 fell from 93–176 ms to 75–82 ms with
        # two at a time (`memory bench service`).
        searches = int(self.config.service.concurrent_searches) or len(os.sched_getaffinity(0))
        self._searches = threading.BoundedSemaphore(searches)
        # Fair reads: one key holds at most `searches_per_key` of those slots, so a key that
        # floods the server queues behind itself and another key's search starts at once.
        self._per_key = int(self.config.service.searches_per_key) or max(1, searches - 1)
        self._key_slots: dict[str, threading.BoundedSemaphore] = {}
        self._key_slots_lock = threading.Lock()

    @contextmanager
    def _turn(self, key: ApiKey) -> Iterator[None]:
        """One search slot for ``key``: its own first, then one of the process's."""
        with self._key_slots_lock:
            slot = self._key_slots.setdefault(key.key_id, threading.BoundedSemaphore(self._per_key))
        with slot, self._searches:
            yield

    def inject(self, key: ApiKey, namespace: str | None, context: Any, **options: Any) -> Any:
        """``MemoryClient.inject`` for ``key`` (``reader``'s namespaces), in its turn (``_turn``)."""
        reader = self.reader(key, namespace)
        with self._turn(key):
            return reader.inject(context, **options)

    def search(self, key: ApiKey, namespace: str | None, query: str, **options: Any) -> list[Any]:
        """``MemoryClient.search`` for ``key``, as ``inject``."""
        reader = self.reader(key, namespace)
        with self._turn(key):
            return reader.search(query, **options)

    @classmethod
    def for_root(cls, data_root: str | os.PathLike[str] | None) -> "Service":
        """The service over a data root: an operator's client of every namespace and the
        keys in the service database."""
        from retrieval.database import engine_for

        client = MemoryClient(data_root, namespace="*")
        return cls(client, KeyStore(engine_for(client.paths, client.config)))

    def authenticate(self, presented: str | None) -> ApiKey:
        key = self.keys.verify(presented)
        if key is None:
            raise Unauthorized("a valid API key is required (Authorization: Bearer mem_…)")
        return key

    def reader(self, key: ApiKey, namespace: str | None = None) -> MemoryClient:
        """A client reading ``namespace`` (default: the key's own, with the shared
        namespaces it was granted ranked lower); 403 for one it was not granted."""
        if namespace is None or namespace == key.namespace:
            return self.client.scoped(key.namespace, shared=key.grants)
        if not key.may_read(namespace):
            raise Forbidden(FORBIDDEN.format(what="read", namespace=namespace))
        return self.client.scoped(namespace)

    def single_reader(self, key: ApiKey, namespace: str | None = None) -> MemoryClient:
        """A reader of exactly one namespace, without the shared ones (a list, an item by
        id, its history): the key's own unless a granted one is named; 403 otherwise."""
        reader = self.reader(key, namespace)
        return reader.scoped(reader.namespace)

    def writer(self, key: ApiKey, namespace: str | None = None, *, count: bool = True) -> MemoryClient:
        """A client writing the key's own namespace, one write counted (``count``); 403
        for any other namespace (a shared one is read-only), 429 over the key's rate."""
        if namespace is not None and not key.may_write(namespace):
            raise Forbidden(FORBIDDEN.format(what="write", namespace=namespace))
        if count:
            self.limiter.take(key)
        return self.client.scoped(key.namespace, author=key.author)
