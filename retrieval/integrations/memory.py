"""The memory a hook or a shell command talks to: a running ``memory serve`` over HTTP
(``MEMORY_URL`` and ``MEMORY_API_KEY``), or the data root in process.

Over HTTP nothing heavy is imported and no model is loaded: the server holds them, so a
hook answers in the time of one request. In process, the client is imported only when
used. Both answer the same three calls (``retrieval.integrations.claude_code.Memory``),
and a turn checkpointed once is not an error when it comes again (409 or
``CheckpointConflict``: a turn is written once, and its first words are kept).
"""

from __future__ import annotations

import os
from functools import cached_property
from typing import Any

URL_ENV, KEY_ENV = "MEMORY_URL", "MEMORY_API_KEY"
TIMEOUT_S = 8.0


class MemoryUnreachable(RuntimeError):
    """The service did not answer, or refused: the message says which and why."""


class RemoteMemory:
    """``memory serve`` at ``url`` with ``key``, through the standard library's ``http.client``:
    a hook or ``memory inject`` starts in a fresh process on every prompt, and importing
    nothing else keeps it within tens of milliseconds of the request itself."""

    def __init__(self, url: str, key: str, timeout: float = TIMEOUT_S):
        if not url.lower().startswith(("http://", "https://")):
            raise MemoryUnreachable(f"{URL_ENV} must be an http:// or https:// URL, got {url[:80]!r}")
        self.base_url, self.timeout = url.rstrip("/"), timeout
        self._headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
                         "Accept": "application/json"}

    def _post(self, path: str, body: dict[str, Any], ok: tuple[int, ...] = (200, 201, 202)) -> Any:
        import http.client
        import json
        from urllib.parse import urlsplit

        where = f"{self.base_url}{path}"
        url = urlsplit(where)
        connection = (http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection)(
            url.netloc, timeout=self.timeout)
        try:
            connection.request("POST", url.path + (f"?{url.query}" if url.query else ""),
                               body=json.dumps(body).encode("utf-8"), headers=self._headers)
            answer = connection.getresponse()
            status, text = answer.status, answer.read().decode("utf-8", errors="replace")
        except (OSError, http.client.HTTPException) as exc:  # refused, unreachable, timed out, cut off
            raise MemoryUnreachable(f"{where}: {exc}") from None
        finally:
            connection.close()
        if status not in ok:
            raise MemoryUnreachable(f"{where}: {status} {text[:300]}")
        return json.loads(text) if text else None

    def inject(self, context: str, project: str | None) -> str:
        return str(self.inject_answer(context, project=project)["text"])

    def inject_answer(self, context: str, *, namespace: str | None = None, **options: Any) -> dict[str, Any]:
        """``POST /v1/inject``: the block and its items (``options``: ``project``,
        ``max_items``, ``token_budget``; None left out)."""
        body = {"context": context, **{k: v for k, v in options.items() if v is not None}}
        path = "/v1/inject" + (f"?namespace={namespace}" if namespace else "")
        return self._post(path, body)

    def append_turn(self, session_id: str, turn: int, record: dict[str, Any], project: str | None) -> None:
        self._post(f"/v1/sessions/{session_id}/turns", {"turn": turn, **record, **({"project": project} if project else {})},
                   ok=(200, 201, 409))

    def flush(self, session_id: str, project: str | None) -> None:
        self._post(f"/v1/sessions/{session_id}/flush", {**({"project": project} if project else {})})


class LocalMemory:
    """The data root in this process (``MemoryClient``), for ``namespace``."""

    def __init__(self, data_root: str | None, namespace: str | None = None):
        self.data_root, self.namespace = data_root, namespace

    @cached_property
    def client(self) -> Any:
        from retrieval.agent.client import MemoryClient

        return MemoryClient(self.data_root, namespace=self.namespace)

    def inject(self, context: str, project: str | None) -> str:
        return self.client.inject(context, project=project).text

    def append_turn(self, session_id: str, turn: int, record: dict[str, Any], project: str | None) -> None:
        from retrieval.checkpoints import CheckpointConflict

        try:
            self.client.append_turn(session_id, turn, record, project=project)
        except CheckpointConflict:
            pass  # the turn is checkpointed already: its first words are kept

    def flush(self, session_id: str, project: str | None) -> None:
        self.client.flush_session(session_id, project=project)


def memory_for(data_root: str | None, namespace: str | None = None) -> RemoteMemory | LocalMemory:
    """``RemoteMemory`` when ``MEMORY_URL`` is set (with ``MEMORY_API_KEY``), else ``LocalMemory``."""
    url = os.environ.get(URL_ENV)
    if url:
        key = os.environ.get(KEY_ENV)
        if not key:
            raise MemoryUnreachable(f"{URL_ENV} is set but {KEY_ENV} is not: a key from `memory keys create`")
        return RemoteMemory(url, key)
    return LocalMemory(data_root, namespace)
