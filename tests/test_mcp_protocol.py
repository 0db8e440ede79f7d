"""MCP as clients expect it (issue 31, item 1): every tool declares typed input and output
schemas and answers ``structuredContent`` that validates against its ``outputSchema``;
``memory_inject`` answers the block itself as text; pending lines carry short ids a model
can cite, correct and forget; resources and a prompt; a wrong key is an auth error, not an
OAuth flow; ``/mcp`` works with and without the slash.

JSON-RPC over the app ``memory serve`` builds (the personal sample, published), as a remote
MCP client sends it. The official Inspector CLI runs against a real server in
``tests/test_mcp_inspector.py``.
"""

from __future__ import annotations

import contextlib
import io
import json

import dagster as dg
import jsonschema
import pytest

from memory_assets import cli
from memory_assets.cli.runner import materialize_pending
from retrieval.paths import DataRoot
from tests.conftest import copy_root
from tests.test_doors import MCP_HEADERS


@pytest.fixture(scope="module")
def app(personal_root, tmp_path_factory):
    from fastapi.testclient import TestClient

    from retrieval.service.app import build

    root = copy_root(personal_root, tmp_path_factory.mktemp("mcp"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["--data-root", str(root), "keys", "create", "default"]) == 0
    client = TestClient(build(root)[1], raise_server_exceptions=False).__enter__()
    yield client, {"Authorization": f"Bearer {out.getvalue().strip()}", **MCP_HEADERS}, root
    client.__exit__(None, None, None)


def _rpc(app, method: str, params: dict | None = None, path: str = "/mcp/", headers: dict | None = None) -> dict:
    client, auth, _ = app
    answer = client.post(path, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}},
                         headers=headers or auth)
    assert answer.status_code == 200, answer.text
    return answer.json()


def _call(app, name: str, **arguments) -> dict:
    answer = _rpc(app, "tools/call", {"name": name, "arguments": arguments})
    assert "result" in answer, answer
    return answer["result"]


def _text(result: dict) -> str:
    return "".join(c.get("text", "") for c in result["content"])


def _untyped(schema: dict, where: str = "") -> list[str]:
    """Every property of a JSON schema that says nothing about its type."""
    found = []
    for name, prop in (schema.get("properties") or {}).items():
        if not any(k in prop for k in ("type", "anyOf", "oneOf", "allOf", "$ref", "enum", "const")):
            found.append(f"{where}{name}")
        found += _untyped(prop, f"{where}{name}.")
        if isinstance(prop.get("items"), dict):
            found += _untyped(prop["items"], f"{where}{name}[].")
    for name, sub in (schema.get("$defs") or {}).items():
        found += _untyped(sub, f"{where}${name}.")
    return found


@pytest.fixture(scope="module")
def tools(app) -> dict[str, dict]:
    return {t["name"]: t for t in _rpc(app, "tools/list")["result"]["tools"]}


def test_every_tool_declares_typed_input_and_output_schemas(tools):
    assert len(tools) == 17
    for name, tool in tools.items():
        assert tool.get("outputSchema", {}).get("type") == "object", name
        assert _untyped(tool["inputSchema"]) == [] and _untyped(tool["outputSchema"]) == [], name
    assert tools["memory_append_turn"]["inputSchema"]["properties"]["tool_calls"]["anyOf"][0]["items"]["type"] == "object"


def test_inject_answers_the_block_as_text_and_its_lines_as_structured_content(app, tools):
    result = _call(app, "memory_inject", context="When is the WRX oil change due?")
    block = result["structuredContent"]
    jsonschema.validate(block, tools["memory_inject"]["outputSchema"])
    assert _text(result) == block["text"] and block["text"].startswith("<memory-context>")
    assert not _text(result).startswith("{")  # the block, not JSON inside a string
    assert block["items"] and all(f"[{i['ref']}]" in block["text"] for i in block["items"])
    assert any("11,799" in i["content"] for i in block["items"])


def test_every_answer_validates_against_its_output_schema(app, tools):
    some = _call(app, "memory_search", query="oil change")["structuredContent"]["items"][0]
    calls = {
        "memory_search": {"query": "oil change"}, "memory_list": {"limit": 3}, "memory_get": {"item_id": some["ref"]},
        "memory_history": {"item_id": some["id"]}, "memory_lessons": {}, "memory_due_triggers": {},
        "memory_append_turn": {"session_id": "proto-1", "turn": 1, "user_input": "hi",
                               "tool_calls": [{"name": "Read", "input": {"file_path": "a.py"}, "output": "x"}]},
        "memory_replay": {"session_id": "proto-1"}, "memory_flush_session": {"session_id": "proto-1"},
        "memory_feedback": {"item_id": some["ref"], "action": "reinforce"},
        "memory_record_response": {"item_ids": [some["ref"]], "response_text": "The oil change is due at 11,799."},
    }
    for name, arguments in calls.items():
        result = _call(app, name, **arguments)
        assert not result.get("isError"), (name, _text(result))
        jsonschema.validate(result["structuredContent"], tools[name]["outputSchema"])
        assert json.loads(_text(result)) == result["structuredContent"], name
    exported = _call(app, "memory_export")
    jsonschema.validate(exported["structuredContent"], tools["memory_export"]["outputSchema"])
    lines = _text(exported).splitlines()  # JSON Lines as the text, header first
    assert len(lines) == exported["structuredContent"]["lines"] and json.loads(lines[0])["format"] == "agent-memory-export"


def test_a_pending_line_has_a_short_id_to_cite_correct_and_forget(app, tools):
    wrote = _call(app, "memory_remember", content="Aaron's spare key is in the blue drawer.")["structuredContent"]
    assert wrote["ref"].startswith("p:") and wrote["status"] == "pending"
    block = _call(app, "memory_inject", context="Where is Aaron's spare key?")["structuredContent"]
    line = next(i for i in block["items"] if i["id"] == wrote["id"])
    assert line["ref"] == wrote["ref"] and f"[{wrote['ref']}]" in block["text"] and "[pending]" in line["flags"]
    assert _call(app, "memory_get", item_id=wrote["ref"])["structuredContent"]["id"] == wrote["id"]
    used = _call(app, "memory_record_response", item_ids=[wrote["ref"]], response_text="It is in the blue drawer.")
    assert not used.get("isError") and wrote["id"] in used["structuredContent"]["used"]
    updated = _call(app, "memory_update", item_id=wrote["ref"], content="Aaron's spare key is in the red drawer.")
    assert updated["structuredContent"] == {"id": wrote["id"], "action": "update", "applied": "now"}
    assert "red drawer" in _call(app, "memory_inject", context="Where is Aaron's spare key?")["structuredContent"]["text"]
    assert _call(app, "memory_forget", item_id=wrote["ref"])["structuredContent"]["applied"] == "now"
    assert "drawer" not in _call(app, "memory_inject", context="Where is Aaron's spare key?")["structuredContent"]["text"]
    unknown = _call(app, "memory_forget", item_id="p:000000")
    assert unknown["isError"] and "404 Not found" in _text(unknown)


def test_resources_and_the_prompt(app):
    listed = _rpc(app, "resources/list")["result"]["resources"]
    assert [r["uri"] for r in listed] == ["memory://lessons"]
    templates = _rpc(app, "resources/templates/list")["result"]["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == ["memory://entities/{name}"]
    lessons = _rpc(app, "resources/read", {"uri": "memory://lessons"})["result"]["contents"][0]
    assert lessons["mimeType"] == "text/markdown" and lessons["text"]
    unknown = _rpc(app, "resources/read", {"uri": "memory://entities/Nobody%20Known"})["result"]["contents"][0]
    assert "No profile of 'Nobody Known'" in unknown["text"]
    prompt = _rpc(app, "prompts/get", {"name": "with_memory", "arguments": {"request": "Book the WRX oil change."}})
    [message] = prompt["result"]["messages"]
    text = message["content"]["text"]
    assert message["role"] == "user" and text.startswith("<memory-context>") and text.endswith("Book the WRX oil change.")
    assert "11,799" in text


def test_a_wrong_key_is_an_auth_error_and_mcp_answers_without_the_slash(app):
    client, auth, _ = app
    for headers in ({**MCP_HEADERS}, {**MCP_HEADERS, "Authorization": "Bearer mem_000000000000_wrong"}):
        refused = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=headers)
        assert refused.status_code == 403 and "www-authenticate" not in refused.headers
        assert refused.json()["error"]["message"].startswith("401 Unauthorized: a valid API key is required")
    answer = client.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers=auth)
    assert answer.status_code == 200 and answer.json()["result"]["tools"]


def test_a_correction_of_a_pending_line_holds_once_the_pipeline_stores_it(app):
    _, _, root = app
    wrote = _call(app, "memory_remember", content="Aaron's gym locker code changed to the left row.")
    kept = _call(app, "memory_remember", content="Aaron's bike helmet hangs in the garage.")
    pending_id = wrote["structuredContent"]["id"]
    assert _call(app, "memory_forget", item_id=wrote["structuredContent"]["ref"])["structuredContent"]["id"] == pending_id
    with dg.instance_for_test() as instance:
        assert not materialize_pending(DataRoot.resolve(root), instance=instance).failed
    rows = _call(app, "memory_list", status="any", limit=500)["structuredContent"]["items"]
    stored = {r["content"]: r["status"] for r in rows}
    assert stored.get("Aaron's bike helmet hangs in the garage.") == "active", kept
    assert stored.get("Aaron's gym locker code changed to the left row.") == "purged"
