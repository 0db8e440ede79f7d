"""Every door checks the same way (issue 30, items 2 and 3): names never become paths, and
the MCP tools take the HTTP routes' request models.

The app is the one ``memory serve`` builds (``retrieval.service.app.build``), in this
process: HTTP routes through Starlette's test client, MCP tools through the same app's
``/mcp/`` mount as JSON-RPC ``tools/call`` requests, as a remote MCP client sends them.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from urllib.parse import quote

import pytest

from memory_assets import cli
from retrieval import names
from retrieval.projects import check_project
from retrieval.service.requests import NESTING_MAX, depth

# What a caller may try to turn into a path: climbing, absolute, separators, NUL, a
# newline, Unicode look-alikes (full-width dots and slash), an empty name, a long one.
BAD_NAMES = ["..", ".", "../../../x", "/etc/x", "a/b", "a\\b", "a\x00b", "abc\n", "．．", "ａｌｉｃｅ",
             "a／b", "", " ", "x" * 300]
# The SDK guards against DNS rebinding: a local client names a local host.
MCP_HEADERS = {"accept": "application/json, text/event-stream", "host": "127.0.0.1:8000"}


def _deep(levels: int) -> list:
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


def _tree(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*")}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    """(the test client, the keys by agent, the folder holding the data root)."""
    from fastapi.testclient import TestClient

    from retrieval.service.app import build

    folder = tmp_path_factory.mktemp("doors")
    root = folder / "data"
    root.mkdir()
    keys = {}
    for agent in ("alice", "bob"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert cli.main(["--data-root", str(root), "keys", "create", agent]) == 0
        keys[agent] = out.getvalue().strip()
    client = TestClient(build(root)[1], raise_server_exceptions=False).__enter__()
    yield client, keys, folder
    client.__exit__(None, None, None)


def _http(app, method: str, url: str, who: str = "alice", *, headers: dict | None = None, **kwargs):
    client, keys, _ = app
    return client.request(method, url, headers={"Authorization": f"Bearer {keys[who]}", **(headers or {})}, **kwargs)


def _tool(app, name: str, who: str = "alice", **arguments) -> tuple[bool, str]:
    """(is it an error, its text) of one MCP tool call."""
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    answer = _http(app, "POST", "/mcp/", who, json=call, headers=MCP_HEADERS)
    assert answer.status_code == 200, answer.text
    if "error" in answer.json():  # refused by the protocol layer, before any tool ran
        return True, answer.json()["error"]["message"]
    result = answer.json()["result"]
    return bool(result.get("isError")), "".join(c.get("text", "") for c in result["content"])


# -- one validator ------------------------------------------------------------------------

@pytest.mark.parametrize("bad", BAD_NAMES)
def test_no_session_id_or_namespace_outside_the_allow_list_is_taken(bad):
    with pytest.raises(names.InvalidName, match="not allowed"):
        names.check_session_id(bad)
    with pytest.raises(names.InvalidName, match="not allowed"):
        names.check_namespace(bad)


@pytest.mark.parametrize("bad", ["a/../b", "a//b", "a/.", "../x", "/x", "a\x00b", "ａｔｌａｓ"])
def test_a_project_name_has_no_climbing_part(bad):
    with pytest.raises(ValueError, match="not a project name"):
        check_project(bad)
    assert check_project("acme/atlas-web") == "acme/atlas-web"


def test_a_name_that_is_a_link_out_of_its_folder_is_refused(tmp_path):
    inbox, outside = tmp_path / "inbox", tmp_path / "outside"
    inbox.mkdir()
    outside.mkdir()
    (inbox / "s-link").symlink_to(outside)
    assert names.child(inbox, "s-1") == inbox / "s-1"
    with pytest.raises(names.InvalidName, match="leads outside"):
        names.child(inbox, "s-link")


def test_nesting_is_measured_without_recursion():
    assert depth({"a": [1, {"b": []}]}) == 4 and depth("text") == 0
    assert depth(_deep(100_000)) == NESTING_MAX + 1  # stops counting past the limit, no RecursionError


# -- MCP: the same checks as HTTP ----------------------------------------------------------

@pytest.mark.parametrize("tool,extra", [("memory_append_turn", {"turn": 0, "user_input": "hello"}),
                                        ("memory_replay", {}), ("memory_flush_session", {})])
def test_no_mcp_session_tool_turns_a_bad_session_id_into_a_path(app, tool, extra):
    folder = app[2]
    before = _tree(folder.parent)
    for bad in BAD_NAMES:
        error, text = _tool(app, tool, session_id=bad, **extra)
        assert error and "422 Invalid: session_id" in text, (bad, text)
    assert _tree(folder.parent) == before  # nothing was created anywhere


def test_mcp_tools_refuse_a_bad_namespace_before_the_key_check(app):
    for tool, arguments in [("memory_inject", {"context": "deploys"}), ("memory_remember", {"content": "x y z"}),
                            ("memory_list", {}), ("memory_lessons", {})]:
        error, text = _tool(app, tool, namespace="../bob", **arguments)
        assert error and "422 Invalid: namespace" in text, (tool, text)


def test_mcp_tools_have_the_http_bounds(app):
    error, text = _tool(app, "memory_remember", content="word " * 100_000)  # 500 KB
    assert error and "422 Invalid: content" in text and "4000" in text
    error, text = _tool(app, "memory_list", limit=-1)
    assert error and "422 Invalid: limit" in text
    error, text = _tool(app, "memory_append_turn", session_id="s-deep", turn=0, tool_calls=[{"input": _deep(NESTING_MAX + 8)}])
    assert error and "422 Invalid: tool_calls" in text and "nests deeper" in text
    error, text = _tool(app, "memory_append_turn", session_id="s-deep", turn=0, tool_calls=[{"input": _deep(900)}])
    assert error and "Invalid" in text  # the SDK refuses it first ("Maximum serialization depth"), not a crash
    error, text = _tool(app, "memory_search", query="")
    assert error and "422 Invalid: query" in text
    error, _ = _tool(app, "memory_list", limit=5)
    assert not error


def test_the_same_bounds_over_http(app):
    deep = _http(app, "POST", "/v1/sessions/s-deep/turns", json={"turn": 0, "tool_calls": [_deep(900)]})
    assert deep.status_code == 422 and "nests deeper" in deep.text
    assert _http(app, "POST", "/v1/remember", json={"content": "word " * 1000}).status_code == 422
    for bad in ("..", "a\x00b", "．．", "ａｌｉｃｅ", "abc\n", "x" * 300):
        answer = _http(app, "POST", f"/v1/sessions/{quote(bad, safe='')}/flush", json={})
        assert answer.status_code in (404, 422), (bad, answer.status_code)


def test_an_empty_flush_is_refused_at_every_door(app):
    assert _http(app, "POST", "/v1/sessions/s-empty/flush", json={"messages": []}).status_code == 422
    blank = _http(app, "POST", "/v1/sessions/s-empty/flush", json={"messages": [{"role": "user", "content": "  "}]})
    assert blank.status_code == 422 and "empty" in blank.text
    nothing = _http(app, "POST", "/v1/sessions/s-never/flush", json={})
    assert nothing.status_code == 422 and "no checkpointed turn" in nothing.text
    error, text = _tool(app, "memory_flush_session", session_id="s-never")
    assert error and "422 Invalid" in text and "no checkpointed turn" in text
    assert not (app[2] / "data" / "inbox" / "s-empty").exists()


# -- import: the key's namespace ----------------------------------------------------------

def _imported(folder: Path) -> list[dict]:
    return [json.loads(line) for f in sorted((folder / "data" / "imports").rglob("*.jsonl"))
            for line in f.read_text().splitlines()]


def test_an_imported_item_without_a_namespace_is_the_keys_own_at_both_doors(app):
    header = {"format": "agent-memory-export", "version": 1, "exported_at": "2026-03-01T00:00:00+00:00",
              "namespace": "default"}
    for door, content in (("http", "Bob's imported note without a namespace."),
                          ("mcp", "Bob's second imported note without a namespace.")):
        export = "\n".join([json.dumps(header), json.dumps({"type": "item", "content": content})])
        if door == "http":
            answer = _http(app, "POST", "/v1/import", "bob", content=export)
            assert answer.status_code == 202 and answer.json()["written"], answer.text
        else:
            error, text = _tool(app, "memory_import", "bob", export=export)
            assert not error and json.loads(text)["written"], text
        records = _imported(app[2])
        mine = [r for r in records if r.get("content") == content]
        assert [r["namespace"] for r in mine] == ["bob"]
    assert {r["namespace"] for r in _imported(app[2])} == {"bob"}  # headers and items alike
    # Naming another namespace is still refused.
    other = "\n".join([json.dumps(header), json.dumps({"type": "item", "content": "x", "namespace": "alice"})])
    assert _http(app, "POST", "/v1/import", "bob", content=other).status_code == 403
