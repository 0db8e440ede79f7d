"""The HTTP API: FastAPI over ``Service`` (``memory serve``).

Every route, the OpenAPI schema included, needs an API key (``Authorization: Bearer
mem_…``). Reads take an optional ``namespace`` (default: the key's own, with the shared
namespaces it was granted ranked lower); writes go to the key's own namespace only. A
request body over ``[service] max_request_bytes`` is refused with 413 before it is read
further. The MCP server's streamable HTTP transport is mounted at ``/mcp`` behind the
same key check and size limit.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import anyio
from contextlib import asynccontextmanager
from typing import Any, Literal

from fastapi import Depends, FastAPI, Path, Query, Request
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.routing import Route

from retrieval.corrections import CORRECTION_TYPES
from retrieval.checkpoints import CheckpointConflict, CheckpointError
from retrieval.disabled import MemoryDisabled
from retrieval.ids import AmbiguousId
from retrieval.names import NAMESPACE, PROJECT, SESSION
from retrieval.service import exports
from retrieval.service.core import Refused, Service, Unauthorized
from retrieval.service.keys import ApiKey
from retrieval.service.responses import (REFUSALS, Changed, Erasing, Flushed, Found, History, Imported, Injected, KeyInfo,
                                         Memory, Turn, TurnSaved, Used)
from retrieval.service.requests import (ITEMS_MAX, PROJECT_READ, EraseBody, FlushBody, InjectBody, RememberBody,
                                        ResponseBody, SearchBody, TurnBody, UpdateBody)
from retrieval.store import ItemStore

_bearer = HTTPBearer(auto_error=False, description="An API key from `memory keys create`")
_NAME = NAMESPACE
_SESSION = SESSION
_PROJECT = PROJECT


def _json(obj: Any) -> Any:
    return json.loads(json.dumps(obj, default=str))


def _when(action: str) -> str:
    """When feedback shows: a correction in the next read, a counter after the next run."""
    return "now" if action in CORRECTION_TYPES else "by the next pipeline run"


class BodyLimit:
    """Refuse a request body over ``limit`` bytes with 413: by its Content-Length when
    it gives one, else while it is read (the body is held, at most ``limit`` bytes, and
    handed on whole)."""

    def __init__(self, app: Callable[..., Awaitable[None]], limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers") or [])
        length = headers.get(b"content-length")
        too_big = JSONResponse({"error": f"request body over {self.limit} bytes ([service] max_request_bytes)"},
                               status_code=413)
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            return await too_big(scope, receive, send)
        if scope.get("method") in ("GET", "HEAD", "DELETE", "OPTIONS") and length is None:
            return await self.app(scope, receive, send)
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.limit:
                return await too_big(scope, receive, send)
        sent = False

        async def replay() -> dict:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def create_app(service: Service, *, mcp: Any = None) -> FastAPI:
    """The API over ``service``; ``mcp`` (a FastMCP server) is mounted at ``/mcp``."""

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        if mcp is None:
            yield
            return
        async with mcp.session_manager.run():
            yield

    # ``responses``: every route answers a refusal the same way, and its schema says so.
    app = FastAPI(title="agent-memory", version="1", lifespan=lifespan, openapi_url=None, docs_url=None,
                  responses=REFUSALS,
                  redoc_url=None, description="Agent memory as a service: inject, search, remember, feedback, "
                  "per-turn checkpoints, export. Every route needs an API key (`memory keys create`).")

    def caller(request: Request, credentials: HTTPAuthorizationCredentials | None = Depends(_bearer)) -> ApiKey:
        presented = credentials.credentials if credentials is not None else request.headers.get("x-api-key")
        key = service.authenticate(presented)
        request.state.key = key
        return key

    # Every route takes ?namespace=: a read may name the key's own or a granted shared
    # namespace, a write only the key's own; anything else is 403.
    Namespace = Query(None, pattern=_NAME, description="Default: the key's own namespace")

    @app.exception_handler(Refused)
    async def _refused(_request: Request, exc: Refused) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, Unauthorized) else {}
        if getattr(exc, "retry_after", None):
            headers["Retry-After"] = str(exc.retry_after)
        return JSONResponse({"error": exc.message}, status_code=exc.status, headers=headers)

    @app.exception_handler(ItemStore.DoesNotExist)
    async def _missing(_request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": str(exc).split(" under ")[0]}, status_code=404)

    @app.exception_handler(AmbiguousId)
    async def _ambiguous(_request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=409)

    @app.exception_handler(CheckpointConflict)
    async def _conflict(_request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=409)

    @app.exception_handler(MemoryDisabled)
    async def _disabled(_request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=423)

    @app.exception_handler(CheckpointError)
    @app.exception_handler(ValueError)
    async def _invalid(_request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": str(exc)}, status_code=422)

    # -- reading -------------------------------------------------------------------------

    @app.post("/v1/inject", tags=["read"], summary="The memory block for the agent's next prompt")
    def inject(body: InjectBody, key: ApiKey = Depends(caller), namespace: str | None = Namespace) -> Injected:
        context = body.context if isinstance(body.context, str) else [m.model_dump(exclude_none=True)
                                                                        for m in body.context]
        found = service.inject(key, namespace, context, max_items=body.max_items, token_budget=body.token_budget,
                               budget_aware=body.budget_aware, session_id=body.session_id, as_of=body.as_of,
                               project=body.project)
        return _json(found.as_dict())

    @app.post("/v1/search", tags=["read"], summary="The best memories for a query")
    def search(body: SearchBody, key: ApiKey = Depends(caller), namespace: str | None = Namespace) -> list[Found]:
        hits = service.search(key, namespace, body.query, k=body.k, as_of=body.as_of, project=body.project)
        return _json([{**h.as_dict(), "status": h.row.get("status")} for h in hits])

    @app.get("/v1/items", tags=["read"], summary="Memories matching every filter given, newest first")
    def list_items(key: ApiKey = Depends(caller), namespace: str | None = Namespace,
                   scope: Literal["global", "project", "session"] | None = None,
                   project: str | None = Query(None, pattern=_PROJECT), category: str | None = Query(None, max_length=64),
                   kind: str | None = Query(None, max_length=32),
                   status: Literal["active", "candidate", "superseded", "archived", "cold", "purged", "pending", "any"]
                   = "active", tag: str | None = Query(None, max_length=64),
                   text: str | None = Query(None, max_length=200), limit: int = Query(100, ge=1, le=ITEMS_MAX),
                   offset: int = Query(0, ge=0, le=1_000_000)) -> list[Memory]:
        client = service.single_reader(key, namespace)
        rows = client.list(scope=scope, project=project, category=category, kind=kind,
                           status=None if status == "any" else status, tag=tag, text=text,
                           limit=min(limit, int(service.config.service.max_list)), offset=offset)
        return _json(rows)

    @app.get("/v1/items/{item_id}", tags=["read"], summary="One memory by id or short id (m:4821)")
    def get_item(item_id: str = Path(max_length=64), key: ApiKey = Depends(caller),
                 namespace: str | None = Namespace) -> Memory:
        return _json(service.single_reader(key, namespace).get(item_id))

    @app.get("/v1/items/{item_id}/history", tags=["read"],
             summary="Where a memory came from: its sources, related items and feedback events")
    def history(item_id: str = Path(max_length=64), key: ApiKey = Depends(caller),
                namespace: str | None = Namespace) -> History:
        return _json(service.single_reader(key, namespace).history(item_id))

    @app.get("/v1/lessons", tags=["read"], summary="Lessons learned from corrections")
    def lessons(key: ApiKey = Depends(caller), namespace: str | None = Namespace,
                project: str | None = Query(None, pattern=_PROJECT, description=PROJECT_READ)) -> list[str]:
        return service.reader(key, namespace).lessons(project=project)

    @app.get("/v1/triggers/due", tags=["read"], summary="Forward reminders due now (each returned once)")
    def due_triggers(key: ApiKey = Depends(caller), namespace: str | None = Namespace, mark_fired: bool = True,
                     project: str | None = Query(None, pattern=_PROJECT, description=PROJECT_READ)) -> list[dict]:
        client = service.writer(key, namespace) if mark_fired else service.reader(key, namespace)
        return _json(client.due_triggers(mark_fired=mark_fired, project=project))

    # -- writing -------------------------------------------------------------------------

    @app.post("/v1/remember", tags=["write"], status_code=202,
              summary="Store a memory now; searchable at once, published by the next pipeline run")
    def remember(body: RememberBody, key: ApiKey = Depends(caller), namespace: str | None = Namespace) -> Memory:
        return _json(service.writer(key, namespace).remember(body.content, project=body.project))

    @app.patch("/v1/items/{item_id}", tags=["write"], status_code=202, summary="Replace a memory's wording")
    def update(body: UpdateBody, item_id: str = Path(max_length=64), key: ApiKey = Depends(caller),
               namespace: str | None = Namespace) -> Changed:
        client = service.writer(key, namespace)
        return {"id": client.update(item_id, body.content, body.tags), "applied": _when("update")}

    @app.post("/v1/items/{item_id}/{action}", tags=["write"], status_code=202,
              summary="Feedback on a memory: forget, pin, unpin, reinforce or demote")
    def act(action: Literal["forget", "pin", "unpin", "reinforce", "demote"], item_id: str = Path(max_length=64),
            key: ApiKey = Depends(caller), namespace: str | None = Namespace) -> Changed:
        client = service.writer(key, namespace)
        return {"id": getattr(client, action)(item_id), "action": action, "applied": _when(action)}

    @app.post("/v1/responses", tags=["write"], summary="Which injected memories the agent's reply used")
    def record_response(body: ResponseBody, key: ApiKey = Depends(caller), namespace: str | None = Namespace) -> Used:
        client = service.writer(key, namespace)
        used = client.record_response(client.injection_of(body.item_ids), body.response_text,
                                      session_id=body.session_id)
        return {"used": used}

    @app.post("/v1/sessions/{session_id}/turns", tags=["write"], status_code=201,
              summary="Checkpoint one turn of a live session (durable when acknowledged)")
    def append_turn(body: TurnBody, session_id: str = Path(pattern=_SESSION), key: ApiKey = Depends(caller),
                    namespace: str | None = Namespace) -> TurnSaved:
        record = body.model_dump(exclude={"turn", "project"})
        return _json(service.writer(key, namespace).append_turn(session_id, body.turn, record, project=body.project))

    @app.get("/v1/sessions/{session_id}/turns", tags=["read"], summary="Replay a session's checkpointed turns")
    def replay(session_id: str = Path(pattern=_SESSION), key: ApiKey = Depends(caller),
               upto_turn: int | None = Query(None, ge=0, le=1_000_000), namespace: str | None = Namespace) -> list[Turn]:
        # A session's checkpoints are its writer's: replay reads the key's own namespace only.
        return _json(service.writer(key, namespace, count=False).replay(session_id, upto_turn))

    @app.post("/v1/sessions/{session_id}/flush", tags=["write"], status_code=202,
              summary="Hand a session to the pipeline (its transcript, or its checkpointed turns)")
    def flush(body: FlushBody, session_id: str = Path(pattern=_SESSION), key: ApiKey = Depends(caller),
              namespace: str | None = Namespace) -> Flushed:
        messages = None if body.messages is None else [m.model_dump(exclude_none=True) for m in body.messages]
        written = service.writer(key, namespace).flush_session(session_id, messages, project=body.project,
                                                                workspace=body.workspace)
        return {"session_id": session_id, "written": written is not None}

    @app.get("/v1/export", tags=["read"], response_class=StreamingResponse,
             responses={200: {"description": "JSON Lines: the header, then one memory a line",
                              "content": {"application/x-ndjson": {"schema": {"type": "string"}}}}},
             summary="The namespace's published memory in the export format (JSON Lines, header first)")
    def export(key: ApiKey = Depends(caller), namespace: str | None = Namespace,
               embeddings: bool = False) -> StreamingResponse:
        client = service.reader(key, namespace)
        lines = exports.export(client, client.namespace, embeddings=embeddings)
        return StreamingResponse((f"{line}\n" for line in lines), media_type="application/x-ndjson")

    @app.post("/v1/import", tags=["write"], status_code=202,
              summary="Append an export (JSON Lines) for the next pipeline run to adopt, without duplicates")
    async def import_(request: Request, key: ApiKey = Depends(caller), namespace: str | None = Namespace) -> Imported:
        client = service.writer(key, namespace)
        text = (await request.body()).decode("utf-8", errors="replace")
        return await anyio.to_thread.run_sync(lambda: exports.import_text(client, client.namespace, text))

    @app.post("/v1/erase", tags=["write"], status_code=202,
              summary="Erase every memory of this key's namespace (the right to be forgotten)")
    def erase(body: EraseBody, key: ApiKey = Depends(caller), namespace: str | None = Namespace) -> Erasing:
        service.writer(key, namespace).erase()
        return {"namespace": key.namespace, "erased": "by the next pipeline run"}

    # -- the service itself --------------------------------------------------------------

    @app.get("/v1/whoami", tags=["service"], summary="The calling key's agent, namespace and grants")
    def whoami(key: ApiKey = Depends(caller), namespace: str | None = Namespace) -> KeyInfo:
        service.reader(key, namespace)
        return {k: v for k, v in key.as_dict().items() if k != "revoked_at"}

    @app.get("/openapi.json", include_in_schema=False)
    def openapi(_key: ApiKey = Depends(caller)) -> JSONResponse:
        return JSONResponse(schema())

    def schema() -> dict:
        if app.openapi_schema is None:
            app.openapi_schema = get_openapi(title=app.title, version=app.version, description=app.description,
                                             routes=app.routes)
        return app.openapi_schema

    app.state.schema = schema
    from retrieval.service.ui import mount as mount_ui

    mount_ui(app, service)  # the memory browser at /ui
    app.add_middleware(BodyLimit, limit=int(service.config.service.max_request_bytes))
    if mcp is not None:
        guarded = _KeyRequired(mcp.streamable_http_app(), service)
        app.mount("/mcp", guarded)
        # "/mcp" as clients are configured with it, answered in place (no 307 to "/mcp/").
        app.router.routes.insert(0, Route("/mcp", _WithSlash(guarded), methods=["GET", "POST", "DELETE"]))
    return app


class _WithSlash:
    """``/mcp`` served as ``/mcp/``: the MCP app sees the path it serves."""

    def __init__(self, app: Callable[..., Awaitable[None]]):
        self.app = app

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        root = scope.get("root_path", "")
        scope = {**scope, "path": f"{root}/mcp/", "raw_path": f"{root}/mcp/".encode(), "root_path": f"{root}/mcp"}
        await self.app(scope, receive, send)


class _KeyRequired:
    """The MCP transport behind the same key check as every route; the key is handed to
    the tools in the ASGI scope's state.

    Without a valid key the answer is 403 with a JSON-RPC error that says why ("401
    Unauthorized: …"), not 401: an MCP client that sees 401 starts an OAuth flow (RFC 9728
    discovery, then a browser), which this server does not offer, and its user sees an
    OAuth failure instead of "the key is wrong". The HTTP routes answer 401."""

    def __init__(self, app: Callable[..., Awaitable[None]], service: Service):
        self.app, self.service = app, service

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
            auth = headers.get("authorization", "")
            presented = auth[7:].strip() if auth.lower().startswith("bearer ") else headers.get("x-api-key")
            try:
                key = self.service.authenticate(presented)
            except Unauthorized as exc:
                error = {"code": -32001, "message": f"401 Unauthorized: {exc.message}"}
                response = JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=403)
                return await response(scope, receive, send)
            scope.setdefault("state", {})["memory_key"] = key
        await self.app(scope, receive, send)

