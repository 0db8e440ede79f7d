"""The service: keys from ``memory keys create``, the real pipeline between a write and a read.

The fast loop sends every route its refusals and its writes through the app ``memory
serve`` builds (``retrieval.service.app.build``: the same FastAPI app, middleware and MCP
mount), in this process, with Starlette's test client. The slow loop starts a real
``memory serve`` (uvicorn on a free 127.0.0.1 port, two worker processes) and checks it
refuses the same way, survives kill -9, and answers schemathesis and real MCP clients from
the ``mcp`` SDK over streamable HTTP and stdio.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
import time
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

from memory_assets import cli
from memory_assets.cli.runner import materialize_pending
from retrieval.paths import DataRoot
from evals.bench.serving import create_key, service_env, start

AWS_ID = "AKIA" + "IOSFODNN7EXAMPL3"
GITHUB = "ghp_" + "R4nd0mT0k3nV4lu3" * 2 + "abcd"
BAD_KEY = "mem_000000000000_" + "x" * 43
LIMIT = 4096  # [service] max_request_bytes for these servers
CONFIG = f"""
[service]
max_request_bytes = {LIMIT}
writes_per_minute = 1000
"""


def _config(folder: Path) -> Path:
    path = folder / "service.toml"
    path.write_text(CONFIG)
    return path


def _bytes_under(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


def _materialize(root: Path, config: Path | None = None) -> None:
    """One `memory materialize`, as an operator runs it: its own process, whose runs execute
    on its main thread (Dagster hands its signal handlers back there; a run started from a
    worker thread of a process that ignores SIGINT leaves its log tails unkillable)."""
    import subprocess

    done = subprocess.run([sys.executable, "-m", "memory_assets.cli", "--data-root", str(root), "materialize",
                           "--quiet"], env=service_env(config), capture_output=True, text=True, timeout=600)
    # The fuzzing test's writes may hold a session that fails alone (an empty transcript):
    # the memory is published all the same.
    assert "memory_items: published" in done.stdout, (done.stdout + done.stderr)[-2000:]


def _until(check, timeout: float = 20.0):
    """``check()`` once it is truthy (a new publish reaches a running server within seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


AGENTS = {"alice": ("--grant", "team"), "bob": (), "team": (), "limited": ("--writes-per-minute", "3"),
          "fuzz": (), "quiet": ()}


def memory(root: Path, *args: str) -> str:
    """A ``memory`` command, in this process; its stdout."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["--data-root", str(root), *args]) == 0
    return out.getvalue()


class InProcess:
    """The app ``memory serve`` serves, in this process: requests go through Starlette's
    test client to the same ASGI app (auth, limits, routes, the MCP mount)."""

    def __init__(self, root: Path, config: Path):
        from fastapi.testclient import TestClient

        from retrieval.service.app import build

        self.root, self.config = root, config
        self.env = pytest.MonkeyPatch()
        self.env.setenv("MEMORY_CONFIG", str(config))
        self.keys = {agent: self.create_key(agent, *extra) for agent, extra in AGENTS.items()}
        self.app = TestClient(build(root)[1], raise_server_exceptions=False).__enter__()

    def create_key(self, agent: str, *extra: str) -> str:
        return memory(self.root, "keys", "create", agent, *extra).strip()

    def revoke(self, key_id: str) -> None:
        memory(self.root, "keys", "revoke", key_id)

    def cli(self, *args: str) -> None:
        memory(self.root, *args)

    def http(self, who: str | None) -> "_As":
        key = self.keys.get(who, who) if who else None
        return _As(self.app, {"Authorization": f"Bearer {key}"} if key else {})

    def logged(self) -> bytes:
        return b""  # in process, the app logs through pytest's capture

    def stop(self) -> None:
        self.app.__exit__(None, None, None)
        self.env.undo()


class _As:
    """The test client, sending one key's header with every request (as an ``httpx.Client`` does)."""

    def __init__(self, app, headers: dict[str, str]):
        self.app, self.headers = app, headers

    def request(self, method: str, url: str, *, headers: dict[str, str] | None = None, **kwargs):
        return self.app.request(method, url, headers={**self.headers, **(headers or {})}, **kwargs)

    def get(self, url: str, **kwargs):
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs):
        return self.request("POST", url, **kwargs)


class Served(InProcess):
    """A real ``memory serve`` with two worker processes: keys, write counts and pending
    writes must be shared by both."""

    def __init__(self, root: Path, config: Path):
        self.root, self.config = root, config
        self.keys = {agent: self.create_key(agent, *extra) for agent, extra in AGENTS.items()}
        self.server = start(root, self.keys["alice"], config=config, workers=2)

    def create_key(self, agent: str, *extra: str) -> str:
        return create_key(self.root, agent, *extra, env=service_env(self.config))

    def revoke(self, key_id: str) -> None:
        import subprocess

        subprocess.run([sys.executable, "-m", "memory_assets.cli", "--data-root", str(self.root), "keys", "revoke",
                        key_id], check=True, capture_output=True, env=service_env(self.config))

    def http(self, who: str | None) -> httpx.Client:
        return self.server.client(self.keys.get(who, who) if who else None)

    def logged(self) -> bytes:
        return self.server.log.read_bytes()

    def stop(self) -> None:
        self.server.stop()


def _root(tmp_path_factory, name: str) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp(name)
    (folder / "data").mkdir()
    return folder / "data", _config(folder)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    served = InProcess(*_root(tmp_path_factory, "service"))
    yield served
    served.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A real ``memory serve`` (the slow tests')."""
    served = Served(*_root(tmp_path_factory, "server"))
    yield served
    served.stop()


# The refusals hold in the app and in a real server alike (the slow loop checks the latter).
DOORS = ["served", pytest.param("server", marks=pytest.mark.slow)]


@pytest.fixture(params=DOORS)
def door(request):
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="module")
def published(served):
    return _published(served)


@pytest.fixture(scope="module")
def server_published(server):
    return _published(server)


def _published(served):
    """Writes through the API, what the writer read back at once, then one pipeline run."""
    alice, team, bob = served.http("alice"), served.http("team"), served.http("bob")
    said = {
        "alice": alice.post("/v1/remember", json={"content": "Alice's team deploys the billing service on Thursdays only."}),
        "team": team.post("/v1/remember", json={"content": "The platform team's standup is at 9:30 in the Juniper room."}),
        "bob": bob.post("/v1/remember", json={"content": "Bob keeps his sourdough starter in the garage fridge."}),
        "secret": alice.post("/v1/remember", json={"content": f"The staging deploy key is {AWS_ID}, ask Alice."}),
        "fuzz": served.http("fuzz").post("/v1/remember", json={"content": "The fuzzing agent tests the memory API."}),
        "rule": alice.post("/v1/remember", json={"content": "Never commit .env files to git."}),
    }
    turns = [alice.post("/v1/sessions/s-cred/turns", json={
        "turn": n, "user_input": text, "llm_output": "Noted.",
        "tool_calls": [{"name": "shell", "output": f"export GITHUB_TOKEN={GITHUB}"}] if n == 1 else [],
        "internal_state": {"scratch": f"token {GITHUB}"} if n == 1 else {}})
        for n, text in enumerate(["I moved the billing cron to 02:30 UTC last week.",
                                  f"My GitHub token is {GITHUB}, keep it handy."])]
    before = alice.post("/v1/inject", json={"context": "When does the billing service deploy?"}).json()
    flushed = alice.post("/v1/sessions/s-cred/flush", json={})
    summary = materialize_pending(DataRoot.resolve(served.root))
    return {"said": said, "turns": turns, "before": before, "flushed": flushed, "summary": summary}


# -- keys: 401, 403, 429, 413 -----------------------------------------------------------------

def _routes(served) -> list[tuple[str, str]]:
    schema = served.http("alice").get("/openapi.json").json()
    return [(method.upper(), path) for path, ops in schema["paths"].items() for method in ops]


def _concrete(path: str) -> str:
    return path.replace("{item_id}", "m:0000").replace("{session_id}", "s-1").replace("{action}", "pin")


# A valid body for each route that takes one, so a refusal is not a validation error.
BODIES = {
    "/v1/inject": {"context": "what do I deploy on?"}, "/v1/search": {"query": "deploy"},
    "/v1/remember": {"content": "Bob likes rye bread."}, "/v1/items/{item_id}": {"content": "new words"},
    "/v1/responses": {"item_ids": [], "response_text": "ok"}, "/v1/sessions/{session_id}/turns": {"turn": 0},
    "/v1/sessions/{session_id}/flush": {}, "/v1/erase": {"confirm": True},
}
# Routes whose body is not JSON.
RAW = {"/v1/import": '{"format": "agent-memory-export", "version": 1}'}


def test_every_route_and_the_schema_refuse_a_missing_or_bad_key_with_401(door):
    served = door
    routes = _routes(served)
    assert len(routes) >= 15
    for who in (None, BAD_KEY):
        client = served.http(who)
        for method, path in routes:
            answer = client.request(method, _concrete(path), json=BODIES.get(path), content=RAW.get(path))
            assert answer.status_code == 401, (who, method, path, answer.text)
            assert answer.headers["www-authenticate"] == "Bearer"
        assert client.get("/openapi.json").status_code == 401
        # MCP: 403 with the reason as a JSON-RPC error (a 401 sends MCP clients into OAuth).
        for path in ("/mcp/", "/mcp"):
            refused = client.post(path, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert refused.status_code == 403 and "401 Unauthorized" in refused.json()["error"]["message"]


def test_a_namespace_the_key_was_not_granted_is_403_and_says_nothing_about_it(door):
    served = door
    alice = served.http("alice")
    served.http("bob").post("/v1/remember", json={"content": "Bob's bakery opens at 7."})  # bob's namespace exists
    for method, path in _routes(served):
        answers = [alice.request(method, _concrete(path), params={"namespace": ns}, json=BODIES.get(path),
                                 content=RAW.get(path))
                   for ns in ("bob", "nobody-ever")]
        assert [a.status_code for a in answers] == [403, 403], (method, path, [a.text for a in answers])
        # The same words whether the namespace exists or not, but for its name.
        assert answers[0].json()["error"].replace("bob", "X") == answers[1].json()["error"].replace("nobody-ever", "X")
    # A granted shared namespace is readable, not writable.
    assert alice.post("/v1/search", params={"namespace": "team"}, json={"query": "standup"}).status_code == 200
    assert alice.post("/v1/remember", params={"namespace": "team"}, json={"content": "x y z"}).status_code == 403


def test_writes_over_the_key_rate_get_429_with_retry_after(door):
    served = door
    limited = served.http("limited")
    codes = [limited.post("/v1/remember", json={"content": f"Limited agent note number {n}."}).status_code
             for n in range(3)]
    assert codes == [202, 202, 202]
    over = limited.post("/v1/remember", json={"content": "One note too many."})
    assert over.status_code == 429 and 1 <= int(over.headers["retry-after"]) <= 60
    assert limited.post("/v1/search", json={"query": "note"}).status_code == 200  # reads are not limited


def test_a_request_body_over_the_limit_is_413(door):
    served = door
    big = {"content": "word " * LIMIT}
    assert served.http("alice").post("/v1/remember", json=big).status_code == 413
    assert served.http(None).post("/v1/remember", json=big).status_code == 413  # refused before it is read
    # Without a Content-Length (a chunked body) it is counted as it arrives.
    chunks = (json.dumps(big).encode()[i:i + 1000] for i in range(0, LIMIT + 2000, 1000))
    answer = served.http("alice").post("/v1/remember", content=chunks, headers={"content-type": "application/json"})
    assert answer.status_code == 413


def test_a_revoked_key_is_refused_within_seconds(served):
    key = served.create_key("short-lived")
    client = served.http(key)
    assert client.get("/v1/whoami").status_code == 200
    served.revoke(key.split("_")[1])
    assert _until(lambda: client.get("/v1/whoami").status_code == 401, timeout=10)


# -- writes that land now -----------------------------------------------------------------------

def test_remember_is_read_back_at_once_then_published_by_the_pipeline(served, published):
    assert published["said"]["alice"].status_code == 202
    assert "[pending]" in published["before"]["text"] and "Thursdays" in published["before"]["text"]
    assert not published["summary"].failed
    alice = served.http("alice")

    def published_line():
        block = alice.post("/v1/inject", json={"context": "When does the billing service deploy?"}).json()
        return block if "Thursdays" in block["text"] and "[pending]" not in block["text"] else None

    block = _until(published_line)
    assert block, "the remembered item never replaced its pending line"
    ref = re.search(r"\[(m:\d+)\][^\n]*Thursdays", block["text"]).group(1)
    item = alice.get(f"/v1/items/{ref}").json()
    assert item["provenance"] == "user_stated" and item["namespace"] == "alice"
    history = alice.get(f"/v1/items/{ref}/history").json()
    assert [s["content"] for s in history["sources"]] == ["Alice's team deploys the billing service on Thursdays only."]
    assert any(e["type"] == "injected" for e in history["events"])
    # Another agent's key does not see it, by search or by id.
    bob = served.http("bob")
    assert "Thursdays" not in bob.post("/v1/inject", json={"context": "billing deploy day?"}).json()["text"]
    assert bob.get(f"/v1/items/{item['id']}").status_code == 404


def test_a_shared_namespace_is_read_by_the_keys_granted_it_and_ranked_below_their_own(served, published):
    alice, bob = served.http("alice"), served.http("bob")
    found = _until(lambda: [h for h in alice.post("/v1/search", json={"query": "when is the standup?"}).json()
                            if "Juniper" in h["content"]])
    assert found and found[0]["status"] == "active"
    assert not [h for h in bob.post("/v1/search", json={"query": "when is the standup?"}).json()
                if "Juniper" in h["content"]]


def test_a_credential_sent_to_remember_or_append_turn_is_nowhere_under_the_data_root(served, published):
    assert published["said"]["secret"].status_code == 202
    assert "[REDACTED" in published["said"]["secret"].json()["content"]
    assert [t.status_code for t in published["turns"]] == [201, 201]
    # The credential turn is high-signal: the session was handed over at once.
    assert published["turns"][1].json()["signals"] and published["turns"][1].json()["flushed"]
    stored = _bytes_under(served.root) + served.logged()
    for secret in (AWS_ID, GITHUB):
        assert secret.encode() not in stored


def test_lessons_are_the_namespaces_own(served, published):
    assert published["said"]["rule"].status_code == 202
    lessons = _until(lambda: served.http("alice").get("/v1/lessons").json())
    assert any(".env" in lesson for lesson in lessons)
    assert not any(".env" in lesson for lesson in served.http("bob").get("/v1/lessons").json())


def test_a_list_filters_by_status_text_and_kind(served, published):
    alice = served.http("alice")
    rows = _until(lambda: alice.get("/v1/items", params={"text": "billing"}).json())
    assert rows and all("billing" in r["content"].lower() and r["status"] == "active" for r in rows)
    assert all(r["namespace"] == "alice" for r in alice.get("/v1/items", params={"status": "any"}).json())
    assert alice.get("/v1/items", params={"status": "bogus"}).status_code == 422


@pytest.mark.slow
def test_schemathesis_finds_no_server_error_on_any_route(server, server_published):
    """Generated requests for every operation of the published schema (its examples,
    boundary values, fuzzing and stateful sequences), with a key whose namespace holds an
    item: no answer is a 5xx."""
    import subprocess

    tool = Path(sys.executable).with_name("schemathesis")
    done = subprocess.run([str(tool), "run", f"{server.server.url}/openapi.json", "-H",
                           f"Authorization: Bearer {server.keys['fuzz']}", "--checks", "not_a_server_error",
                           "--max-examples", "20", "--seed", "1"], capture_output=True, text=True, timeout=600,
                          cwd=server.root.parent)
    assert done.returncode == 0, done.stdout[-4000:]
    assert re.search(r"Tested: 1[5-9]|Tested: [2-9]\d", done.stdout), done.stdout[-2000:]


def test_export_and_import_over_http_stay_in_the_keys_namespace(served, published):
    alice, bob = served.http("alice"), served.http("bob")
    lines = _until(lambda: (lambda ls: ls if len(ls) > 1 else None)(alice.get("/v1/export").text.splitlines()))
    header, records = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
    assert header["format"] == "agent-memory-export" and header["namespace"] == "alice"
    items = [r for r in records if r["type"] == "item"]
    assert len(items) == header["counts"]["item"] >= 1 and {r["namespace"] for r in items} == {"alice"}
    assert AWS_ID not in "\n".join(lines) and GITHUB not in "\n".join(lines)
    assert alice.get("/v1/export", params={"namespace": "bob"}).status_code == 403
    # One item (these servers take 4 KiB bodies): another namespace's memory cannot be
    # written by importing it; the owner's import is taken.
    one = "\n".join([lines[0], json.dumps(items[0])])
    assert bob.post("/v1/import", content=one).status_code == 403
    again = alice.post("/v1/import", content=one)
    assert again.status_code == 202 and again.json()["records"] == 1 and not again.json()["errors"]


def test_a_disabled_namespace_stores_nothing_and_injects_nothing(served, published):
    quiet = served.http("quiet")
    served.cli("disable", "--namespace", "quiet")
    try:
        refused = quiet.post("/v1/remember", json={"content": "Quiet's locker code is on the fridge note."})
        assert refused.status_code == 423 and "disabled" in refused.json()["error"]
        assert quiet.post("/v1/sessions/q-1/turns", json={"turn": 0, "user_input": "hello"}).status_code == 423
        assert quiet.post("/v1/inject", json={"context": "locker"}).json()["tier"] == "disabled"
    finally:
        served.cli("enable", "--namespace", "quiet")
    assert quiet.post("/v1/remember", json={"content": "Quiet prefers standing desks."}).status_code == 202
    assert b"locker code" not in _bytes_under(served.root)


# -- crash: kill -9 mid-session ------------------------------------------------------------------

@pytest.mark.slow
def test_every_acknowledged_turn_survives_kill_9_and_reaches_resources_after_the_next_flush(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    config = _config(tmp_path)
    key = create_key(root, "crashy", env=service_env(config))
    server = start(root, key, config=config)
    said = [f"Turn {n}: the deploy window for ledger is {n + 8} pm on Fridays." for n in range(5)]
    acked = []
    try:
        client = server.client(key)
        for n, text in enumerate(said):
            answer = client.post("/v1/sessions/crash-1/turns", json={"turn": n, "user_input": text,
                                                                        "internal_state": {"step": n}})
            assert answer.status_code == 201
            acked.append(n)
        server.kill()
    finally:
        server.stop()
    server = start(root, key, config=config)
    try:
        client = server.client(key)
        replayed = client.get("/v1/sessions/crash-1/turns").json()
        assert [t["turn"] for t in replayed] == acked
        assert [t["record"]["internal_state"]["step"] for t in replayed] == acked
        assert client.get("/v1/sessions/crash-1/turns", params={"upto_turn": 2}).json()[-1]["turn"] == 2
        assert client.post("/v1/sessions/crash-1/flush", json={}).json()["written"]
    finally:
        server.stop()
    materialize_pending(DataRoot.resolve(root))
    import polars as pl

    stored = pl.read_parquet(sorted((root / "warehouse" / "resources" / "crash-1").glob("*.parquet")))
    assert set(said) <= set(stored.filter(pl.col("role") == "user")["content"].to_list())


# -- MCP: streamable HTTP and stdio ---------------------------------------------------------------

def _text(result) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


# Arguments that make each MCP tool's call valid, so a refusal is about the namespace.
TOOL_ARGS = {
    "memory_inject": {"context": "laptop"}, "memory_search": {"query": "laptop"},
    "memory_remember": {"content": "Bob's oven runs hot."}, "memory_get": {"item_id": "m:0000"},
    "memory_list": {}, "memory_history": {"item_id": "m:0000"},
    "memory_update": {"item_id": "m:0000", "content": "new words"}, "memory_forget": {"item_id": "m:0000"},
    "memory_feedback": {"item_id": "m:0000", "action": "pin"},
    "memory_record_response": {"item_ids": [], "response_text": "ok"},
    "memory_append_turn": {"session_id": "s-1", "turn": 0, "user_input": "hi"},
    "memory_replay": {"session_id": "s-1"}, "memory_flush_session": {"session_id": "s-1"},
    "memory_lessons": {}, "memory_due_triggers": {}, "memory_export": {},
}


@pytest.mark.slow
def test_mcp_over_streamable_http_with_the_sdk_client(server, server_published):
    served = server
    async def session_of(key: str, work):
        async with streamablehttp_client(f"{served.server.url}/mcp/",
                                         headers={"Authorization": f"Bearer {key}"}) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await work(session)

    async def inject(session, context: str) -> str:
        result = await session.call_tool("memory_inject", {"context": context})
        assert result.structuredContent["text"] in (_text(result), "")  # the block itself, not JSON in a string
        return result.structuredContent["text"]

    async def main():
        async def flow(session):
            tools = {t.name for t in (await session.list_tools()).tools}
            wrote = await session.call_tool("memory_remember", {"content": "Alice's laptop is a 2023 ThinkPad X1."})
            pending = await inject(session, "What laptop does Alice use?")
            denied = {name: await session.call_tool(name, {**args, "namespace": "bob"})
                      for name, args in TOOL_ARGS.items()}
            return tools, wrote, pending, denied

        tools, wrote, pending, denied = await session_of(served.keys["alice"], flow)
        assert set(TOOL_ARGS) | {"memory_import"} == tools
        assert not wrote.isError and "pending:" in _text(wrote)
        assert "ThinkPad" in pending and "[pending]" in pending
        # Every tool that takes a namespace refuses one the key was not granted.
        assert {name for name, result in denied.items()
                if not (result.isError and "403 Forbidden: this key may not" in _text(result))} == set()
        # An import of another namespace's memory (bob's own export) is refused as well.
        exported = await session_of(served.keys["bob"], lambda s: s.call_tool("memory_export", {}))
        lines = _text(exported).splitlines()
        items = [line for line in lines[1:] if json.loads(line).get("type") == "item"]
        assert items, _text(exported)[:500]
        one = "\n".join([lines[0], items[0]])
        refused = await session_of(served.keys["alice"], lambda s: s.call_tool("memory_import", {"export": one}))
        assert refused.isError and "403 Forbidden" in _text(refused)

        # The pipeline publishes the remembered laptop; the same MCP tool now injects it.
        await anyio.to_thread.run_sync(lambda: _materialize(served.root, served.config))

        async def published_line(session):
            for _ in range(40):
                text = await inject(session, "What laptop does Alice use?")
                if "ThinkPad" in text and "[pending]" not in text:
                    return text
                await anyio.sleep(0.5)
            return text

        assert "[m:" in await session_of(served.keys["alice"], published_line)

        async def over(session):
            return [await session.call_tool("memory_remember", {"content": f"Limited MCP note {n}."}) for n in range(4)]

        results = await session_of(served.keys["limited"], over)
        assert any(r.isError and "429 Too many requests" in _text(r) for r in results)

    anyio.run(main)
    # A request over the size limit is refused before MCP reads it.
    big = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": "memory_remember", "arguments": {"content": "word " * LIMIT}}}
    assert served.http("alice").post("/mcp/", json=big, headers={"accept": "application/json, text/event-stream"}
                                     ).status_code == 413


@pytest.mark.slow
def test_mcp_over_stdio_remember_materialize_inject(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    key = create_key(root, "desktop")
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memory_assets.cli", "--data-root", str(root), "serve", "--mcp-stdio"],
        env={**service_env(), "MEMORY_API_KEY": key})

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                wrote = await session.call_tool("memory_remember", {"content": "Dana's CI runs on Buildkite, not GitHub Actions."})
                assert not wrote.isError
                pending = (await session.call_tool("memory_inject", {"context": "Which CI does Dana use?"}))
                assert "[pending]" in _text(pending) and "[p:" in _text(pending)
                await anyio.to_thread.run_sync(lambda: _materialize(root))
                for _ in range(40):
                    block = _text(await session.call_tool("memory_inject", {"context": "Which CI does Dana use?"}))
                    if "Buildkite" in block and "[pending]" not in block:
                        break
                    await anyio.sleep(0.5)
                assert "Buildkite" in block and "[m:" in block

    anyio.run(main)


@pytest.mark.slow
def test_mcp_stdio_refuses_to_start_without_a_live_key(tmp_path):
    import subprocess

    root = tmp_path / "data"
    root.mkdir()
    done = subprocess.run([sys.executable, "-m", "memory_assets.cli", "--data-root", str(root), "serve", "--mcp-stdio"],
                          capture_output=True, text=True, env={**service_env(), "MEMORY_API_KEY": BAD_KEY},
                          input="", timeout=60)
    assert done.returncode == 2 and "MEMORY_API_KEY" in done.stderr


def test_no_more_than_concurrent_searches_run_at_once_and_the_rest_are_answered(tmp_path, monkeypatch):
    """``[service] concurrent_searches``: twelve injects and searches sent at once through the
    HTTP app are all answered, never more than the limit inside a search together."""
    import threading

    from fastapi.testclient import TestClient

    from retrieval.agent.client import MemoryClient
    from retrieval.database import engine_for
    from retrieval.service.core import Service
    from retrieval.service.http import create_app
    from retrieval.service.keys import KeyStore

    config = tmp_path / "limit.toml"
    config.write_text("[service]\nconcurrent_searches = 2\nsearches_per_key = 2\n")  # one key may use both
    monkeypatch.setenv("MEMORY_CONFIG", str(config))
    client = MemoryClient(tmp_path / "data", namespace="*")
    service = Service(client, KeyStore(engine_for(client.paths, client.config)))
    key, _ = service.keys.create("agent")
    inside, most, lock = 0, 0, threading.Lock()
    real_inject, real_search = MemoryClient.inject, MemoryClient.search

    def counted(real):
        def run(self, *args, **kwargs):
            nonlocal inside, most
            with lock:
                inside += 1
                most = max(most, inside)
            try:
                time.sleep(0.05)  # long enough that twelve requests overlap
                return real(self, *args, **kwargs)
            finally:
                with lock:
                    inside -= 1
        return run

    monkeypatch.setattr(MemoryClient, "inject", counted(real_inject))
    monkeypatch.setattr(MemoryClient, "search", counted(real_search))
    with TestClient(create_app(service), headers={"Authorization": f"Bearer {key}"}) as http:
        statuses: list[int] = []

        def ask(n: int) -> None:
            route, body = (("/v1/inject", {"context": f"what do I deploy on, {n}?"}) if n % 2
                           else ("/v1/search", {"query": f"deploy {n}"}))
            statuses.append(http.post(route, json=body).status_code)

        threads = [threading.Thread(target=ask, args=(n,)) for n in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert statuses == [200] * 12
    assert most == 2


def test_a_key_flooding_the_server_waits_behind_itself_and_another_keys_search_starts_at_once(tmp_path, monkeypatch):
    """Fair reads (``[service] searches_per_key``): with two search slots, eight searches sent
    at once by one key run one at a time, and another key's search starts while they queue."""
    import threading

    from fastapi.testclient import TestClient

    from retrieval.agent.client import MemoryClient
    from retrieval.database import engine_for
    from retrieval.service.core import Service
    from retrieval.service.http import create_app
    from retrieval.service.keys import KeyStore

    config = tmp_path / "fair.toml"
    config.write_text("[service]\nconcurrent_searches = 2\n")
    monkeypatch.setenv("MEMORY_CONFIG", str(config))
    client = MemoryClient(tmp_path / "data", namespace="*")
    service = Service(client, KeyStore(engine_for(client.paths, client.config)))
    keys = {agent: service.keys.create(agent)[0] for agent in ("flood", "other")}
    entered: list[str] = []
    inside = {"flood": 0}
    most = {"flood": 0}
    lock, running = threading.Lock(), threading.Event()
    real_search = MemoryClient.search

    def slow(self, *args, **kwargs):
        with lock:
            entered.append(self.namespace)
            running.set()
            if self.namespace == "flood":
                inside["flood"] += 1
                most["flood"] = max(most["flood"], inside["flood"])
        try:
            time.sleep(0.1)
            return real_search(self, *args, **kwargs)
        finally:
            with lock:
                if self.namespace == "flood":
                    inside["flood"] -= 1

    monkeypatch.setattr(MemoryClient, "search", slow)
    with TestClient(create_app(service)) as http:
        statuses: list[int] = []

        def ask(agent: str, n: int) -> None:
            statuses.append(http.post("/v1/search", json={"query": f"deploy {n}"},
                                      headers={"Authorization": f"Bearer {keys[agent]}"}).status_code)

        flood = [threading.Thread(target=ask, args=("flood", n)) for n in range(8)]
        for t in flood:
            t.start()
        assert running.wait(timeout=10)  # the flood's first search is running
        other = threading.Thread(target=ask, args=("other", 99))
        other.start()
        for t in [*flood, other]:
            t.join()
    assert statuses == [200] * 9
    assert most["flood"] == 1  # the flooding key never held both slots
    assert entered.index("other") <= 2  # it did not wait behind the flood's queue
