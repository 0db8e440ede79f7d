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
import threading
import time
from collections import deque
from dataclasses import dataclass, field

from retrieval.client import MemoryClient
from retrieval.config import MemoryConfig
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


@dataclass
class WriteLimiter:
    """Writes per key in the last minute (a sliding window), thread-safe."""

    per_minute: int
    window: float = 60.0
    _seen: dict[str, deque[float]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, key: ApiKey, now: float | None = None) -> None:
        """Count one write for ``key``, or raise ``RateLimited`` when its window is full."""
        limit = key.writes_per_minute or self.per_minute
        now = time.monotonic() if now is None else now
        with self._lock:
            seen = self._seen.setdefault(key.key_id, deque())
            while seen and now - seen[0] >= self.window:
                seen.popleft()
            if len(seen) >= limit:
                wait = max(1, math.ceil(self.window - (now - seen[0])))
                raise RateLimited(f"over {limit} writes a minute for this key; retry in {wait} s", wait)
            seen.append(now)


class Service:
    """One ``MemoryClient`` over the data root, served to many keys."""

    def __init__(self, client: MemoryClient, keys: KeyStore, config: MemoryConfig | None = None):
        self.client, self.keys = client, keys
        self.config = config or client.config
        self.limiter = WriteLimiter(int(self.config.service.writes_per_minute))

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

    def writer(self, key: ApiKey, namespace: str | None = None, *, count: bool = True) -> MemoryClient:
        """A client writing the key's own namespace, one write counted (``count``); 403
        for any other namespace (a shared one is read-only), 429 over the key's rate."""
        if namespace is not None and not key.may_write(namespace):
            raise Forbidden(FORBIDDEN.format(what="write", namespace=namespace))
        if count:
            self.limiter.take(key)
        return self.client.scoped(key.namespace)
