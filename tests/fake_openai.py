"""The only stand-in in the test suite: a local OpenAI-compatible server on 127.0.0.1.

The real ``openai`` client talks to it over HTTP, so retries, timeouts, status codes
and ``OPENAI_BASE_URL`` handling are the client's own. Script it with ``enqueue``;
when the queue is empty, ``responder`` answers.

    def test_something(fake_openai):
        fake_openai.enqueue({"facts": []})
        fake_openai.enqueue("not json")
        fake_openai.enqueue(status=429)
        ...
        assert fake_openai.requests[0]["model"] == "gpt-4o-mini"

Import the fixture with ``from tests.fake_openai import fake_openai``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

DEFAULT_DIMENSIONS = 1536

_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", None),
}

Responder = Callable[[dict[str, Any]], "str | dict[str, Any]"]


@dataclass(frozen=True)
class Scripted:
    """One scripted reply: chat content (a dict is sent as JSON text) or an error."""

    content: str | dict[str, Any] | None
    status: int = 200
    delay: float = 0.0
    usage: tuple[int, int] | None = None


def _empty_facts(request: dict[str, Any]) -> str:
    return json.dumps({"facts": []})


def _word_count(value: Any) -> int:
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, list):
        return sum(_word_count(v) for v in value)
    if isinstance(value, dict):
        return _word_count(value.get("content") or value.get("text") or "")
    return 0


def fake_embedding(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> list[float]:
    """A deterministic unit vector for ``text``: the same text always gives the same vector."""
    rng = random.Random(hashlib.sha256(text.encode("utf-8")).digest())
    vector = [rng.gauss(0.0, 1.0) for _ in range(dimensions)]
    norm = sum(v * v for v in vector) ** 0.5 or 1.0
    return [v / norm for v in vector]


class FakeOpenAI:
    """An OpenAI-compatible HTTP server for tests.

    Attributes:
        requests: every chat and embeddings request body, in arrival order.
        paths: the request path of each entry in ``requests``.
        headers: the request headers of each entry in ``requests``.
        responder: answers a chat request when the queue is empty; returns the
            message content (a dict is sent as JSON text).
    """

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.responder: Responder = _empty_facts
        self._chat: deque[Scripted] = deque()
        self._embeddings: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    # --- lifecycle ---

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; a handler sleeping on a scripted delay wakes and gives up."""
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- scripting ---

    def enqueue(
        self,
        content: str | dict[str, Any] | None = None,
        status: int = 200,
        delay: float = 0.0,
        *,
        usage: tuple[int, int] | None = None,
        endpoint: str = "chat",
    ) -> None:
        """Script the next reply.

        Args:
            content: for chat, the message content (a dict is sent as JSON text; a
                string as is, so malformed JSON can be scripted; None asks
                ``responder``); for an error status, the error message. Ignored for a
                successful embeddings reply.
            status: the HTTP status; 429 carries ``retry-after: 0`` (and
                ``retry-after-ms: 1``, which the client prefers, so its retry waits 1 ms
                instead of its 0.5 s default backoff).
            delay: seconds to wait before answering (to provoke client timeouts).
            usage: ``(prompt_tokens, completion_tokens)`` to report instead of word counts.
            endpoint: ``"chat"`` or ``"embeddings"``: which queue the reply goes to.
        """
        queue = {"chat": self._chat, "embeddings": self._embeddings}[endpoint]
        with self._lock:
            queue.append(Scripted(content, status, delay, usage))

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [r for r, p in zip(self.requests, self.paths) if p.endswith("/chat/completions")]

    # --- serving ---

    def _next(self, queue: deque[Scripted]) -> Scripted | None:
        with self._lock:
            return queue.popleft() if queue else None

    def _record(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)
            self.paths.append(path)
            self.headers.append(headers)

    def _chat_reply(self, body: dict[str, Any], script: Scripted | None) -> dict[str, Any]:
        if script is not None and script.content is not None:
            content = script.content
        else:
            content = self.responder(body)
        text = content if isinstance(content, str) else json.dumps(content)
        if script is not None and script.usage is not None:
            prompt_tokens, completion_tokens = script.usage
        else:
            prompt_tokens = _word_count(body.get("messages", []))
            completion_tokens = _word_count(text)
        return {
            "id": f"chatcmpl-fake-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake-model"),
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
                "logprobs": None,
            }],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _embeddings_reply(self, body: dict[str, Any], script: Scripted | None) -> dict[str, Any]:
        inputs = body.get("input", [])
        if isinstance(inputs, str) or (inputs and isinstance(inputs[0], int)):
            inputs = [inputs]
        dimensions = int(body.get("dimensions") or DEFAULT_DIMENSIONS)
        data = []
        for index, item in enumerate(inputs):
            text = item if isinstance(item, str) else json.dumps(item)
            vector = fake_embedding(text, dimensions)
            embedding: Any = vector
            if body.get("encoding_format") == "base64":
                embedding = base64.b64encode(struct.pack(f"<{dimensions}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": embedding})
        tokens = _word_count([i for i in inputs if isinstance(i, str)])
        if script is not None and script.usage is not None:
            tokens = script.usage[0]
        return {
            "object": "list",
            "data": data,
            "model": body.get("model", "fake-embedding"),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep pytest output clean

            def _send(self, status: int, payload: dict[str, Any],
                      headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, _error_body(400, "request body is not JSON"))
                    return
                path = self.path.split("?")[0]
                if path.endswith("/chat/completions"):
                    queue, reply = fake._chat, fake._chat_reply
                elif path.endswith("/embeddings"):
                    queue, reply = fake._embeddings, fake._embeddings_reply
                else:
                    self._send(404, _error_body(404, f"no route for {path}"))
                    return
                fake._record(path, dict(self.headers.items()), body)
                script = fake._next(queue)
                if script is not None and script.delay:
                    if fake._stopping.wait(script.delay):
                        return
                if script is not None and script.status != 200:
                    headers = (
                        {"retry-after": "0", "retry-after-ms": "1"} if script.status == 429 else {}
                    )
                    message = script.content if isinstance(script.content, str) else None
                    self._send(script.status, _error_body(script.status, message), headers)
                    return
                self._send(200, reply(body, script))

        return Handler


def _error_body(status: int, message: str | None = None) -> dict[str, Any]:
    fallback = ("server_error" if status >= 500 else "invalid_request_error", None)
    kind, code = _ERROR_TYPES.get(status, fallback)
    default = "Rate limit reached for requests" if status == 429 else f"fake server error {status}"
    return {"error": {"message": message or default, "type": kind, "param": None, "code": code}}


@pytest.fixture
def fake_openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """A running fake server; ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` point at it."""
    server = FakeOpenAI().start()
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    try:
        yield server
    finally:
        server.stop()
