"""File contents an agent passes in (issue 30, item 4): the text of a file the workspace's
``.gitignore`` or ``.secretsignore`` names, or that ``[privacy] secret_files`` names, never
reaches a checkpoint, the inbox or a stored turn, through any door.

The workspace is a real folder with a ``.git`` folder and ignore files, read with git's
rules; the marker strings below are plain words no credential scanner would take, so only
the file rules can keep them out.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from memory_assets import cli
from memory_assets.lib.ingest.intake import ingest_paths
from retrieval.agent.client import MemoryClient
from retrieval.config import load_config
from retrieval.ignored_files import FileRules, path_of, withhold_call
from tests.test_doors import MCP_HEADERS

SECRET = {".env": "BLUEHERON codename for the merger", "config/prod.yaml": "customers: Zedcorp, Quillon",
          "build/out.txt": "generated artefact GRANITEFOX", "notes/todo.log": "remember TEALWREN"}
KEPT = {"src/app.py": "def handler(): return 'PLAINSPARROW'", "notes/keep.log": "kept log AMBERMOTH",
        ".env.example": "API_KEY=<your key> CEDARLYNX"}
SECRET_FILES = load_config().privacy.secret_files


@pytest.fixture
def workspace(tmp_path) -> Path:
    """A repository: .gitignore at the top (build/, *.log but not keep.log), .secretsignore
    (config/prod.yaml), and a nested .gitignore that re-includes nothing it should not."""
    top = tmp_path / "repo"
    (top / ".git").mkdir(parents=True)
    (top / ".gitignore").write_text("build/\n*.log\n!keep.log\n")
    (top / ".secretsignore").write_text("# private to this team\nconfig/prod.yaml\n")
    (top / "notes").mkdir()
    (top / "notes" / ".gitignore").write_text("!other.log\n")
    for name, text in {**SECRET, **KEPT}.items():
        (top / name).parent.mkdir(parents=True, exist_ok=True)
        (top / name).write_text(text)
    return top


def _markers(text: str) -> set[str]:
    words = {"BLUEHERON", "Zedcorp", "GRANITEFOX", "TEALWREN", "PLAINSPARROW", "AMBERMOTH", "CEDARLYNX"}
    return {w for w in words if w in text}


def _calls(workspace: Path) -> list[dict]:
    """The shapes coding agents give a file read or write: Claude Code (``input.file_path``,
    ``output``), OpenAI tools (``function.arguments`` as a JSON string), a bare ``path``."""
    calls = []
    for n, (name, text) in enumerate({**SECRET, **KEPT}.items()):
        if n % 3 == 0:
            calls.append({"name": "Read", "input": {"file_path": str(workspace / name)}, "output": text})
        elif n % 3 == 1:
            calls.append({"id": f"call_{n}", "function": {"name": "write_file",
                          "arguments": json.dumps({"path": name, "content": text})}, "result": "ok"})
        else:
            calls.append({"tool": "cat", "path": name, "content": text})
    return calls


def test_git_rules_decide_with_the_deeper_file_last_and_the_secret_list_always(workspace):
    rules = FileRules.load(SECRET_FILES, str(workspace))
    assert rules.withheld(".env") == "named by [privacy] secret_files"
    assert rules.withheld("config/prod.yaml") == "ignored by .secretsignore"
    assert rules.withheld(str(workspace / "build" / "out.txt")) == "ignored by .gitignore"
    assert rules.withheld("notes/todo.log") == "ignored by .gitignore"
    assert rules.withheld("notes/keep.log") is None  # negated at the top
    assert rules.withheld("notes/other.log") is None  # re-included by the deeper file
    assert rules.withheld("src/app.py") is None and rules.withheld(".env.example") is None
    assert rules.withheld("../elsewhere/build/x") is None  # outside the repository: its rules do not apply
    assert rules.withheld("/home/ana/.ssh/id_ed25519") and rules.withheld("C:\\Users\\ana\\.aws\\config")
    # A service on another machine has no such folder: the secret list still holds.
    remote = FileRules.load(SECRET_FILES, "/no/such/workspace")
    assert remote.withheld(".env") and remote.withheld("config/prod.yaml") is None


def test_a_withheld_call_keeps_its_name_and_path_and_loses_every_other_value(workspace):
    rules = FileRules.load(SECRET_FILES, str(workspace))
    blanked = [withhold_call(c, rules) for c in _calls(workspace)]
    text = json.dumps(blanked)
    assert _markers(text) == {"PLAINSPARROW", "AMBERMOTH", "CEDARLYNX"}
    assert [path_of(c) for c in blanked] == [path_of(c) for c in _calls(workspace)]
    written = next(c for c in blanked if "function" in c and "config/prod.yaml" in c["function"]["arguments"])
    arguments = json.loads(written["function"]["arguments"])  # still JSON, as the agent sent it
    assert arguments["path"] == "config/prod.yaml" and arguments["content"].startswith("[withheld: the content of")
    assert written["function"]["name"] == "write_file" and written["id"]


def test_in_process_append_turn_checkpoints_and_flushes_no_withheld_text(tmp_path, workspace):
    client = MemoryClient(tmp_path / "data")
    record = {"user_input": "Read the env and the config, then fix the handler.", "llm_output": "Done.",
              "tool_calls": _calls(workspace), "workspace": str(workspace)}
    client.append_turn("coding-1", 1, record)
    [turn] = client.replay("coding-1")
    assert _markers(json.dumps(turn["record"])) == {"PLAINSPARROW", "AMBERMOTH", "CEDARLYNX"}
    client.flush_session("coding-1")
    inbox = "".join(p.read_text() for p in (tmp_path / "data" / "inbox").rglob("*.jsonl"))
    assert "withheld: the content of" in inbox and not _markers(inbox) - {"PLAINSPARROW", "AMBERMOTH", "CEDARLYNX"}


def test_a_flushed_message_that_names_its_file_is_withheld(tmp_path, workspace):
    client = MemoryClient(tmp_path / "data")
    messages = [{"role": "user", "content": "Show me the prod config."},
                {"role": "tool", "content": SECRET["config/prod.yaml"], "file": "config/prod.yaml"},
                {"role": "tool", "content": KEPT["src/app.py"], "file": "src/app.py"}]
    client.flush_session("coding-2", messages, workspace=str(workspace))
    inbox = "".join(p.read_text() for p in (tmp_path / "data" / "inbox").rglob("*.jsonl"))
    assert _markers(inbox) == {"PLAINSPARROW"} and "ignored by .secretsignore" in inbox
    assert '"file"' not in inbox  # the path served its purpose; the stored message is canonical


@pytest.fixture
def served(tmp_path):
    from fastapi.testclient import TestClient

    from retrieval.service.app import build

    root = tmp_path / "served"
    root.mkdir()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["--data-root", str(root), "keys", "create", "alice"]) == 0
    with TestClient(build(root)[1], raise_server_exceptions=False) as client:
        yield client, {"Authorization": f"Bearer {out.getvalue().strip()}"}, root


def test_http_and_mcp_doors_withhold_the_same_way(served, workspace):
    client, headers, root = served
    calls = _calls(workspace)
    answer = client.post("/v1/sessions/http-1/turns", headers=headers,
                         json={"turn": 1, "user_input": "Read them.", "tool_calls": calls, "workspace": str(workspace)})
    assert answer.status_code == 201, answer.text
    flushed = client.post("/v1/sessions/http-2/flush", headers=headers, json={
        "workspace": str(workspace),
        "messages": [{"role": "tool", "content": SECRET["build/out.txt"], "file": "build/out.txt"}]})
    assert flushed.status_code == 202, flushed.text
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "memory_append_turn", "arguments": {
        "session_id": "mcp-1", "turn": 1, "user_input": "Read them.", "tool_calls": calls,
        "workspace": str(workspace)}}}
    answer = client.post("/mcp/", json=call, headers={**headers, **MCP_HEADERS})
    assert answer.status_code == 200 and not answer.json()["result"].get("isError"), answer.text
    replayed = [client.get(f"/v1/sessions/{s}/turns", headers=headers).json() for s in ("http-1", "mcp-1")]
    for turns in replayed:
        assert _markers(json.dumps(turns)) == {"PLAINSPARROW", "AMBERMOTH", "CEDARLYNX"}
    inbox = "".join(p.read_text() for p in (root / "inbox").rglob("*.jsonl"))
    assert "ignored by .gitignore" in inbox and "GRANITEFOX" not in inbox
    bad = client.post("/v1/sessions/http-3/flush", headers=headers,
                      json={"messages": [{"role": "tool", "content": "x", "file": "a\x00b"}]})
    assert bad.status_code == 422


def test_memory_ingest_withholds_a_file_a_transcript_line_names(tmp_path, workspace):
    transcript = tmp_path / "session.jsonl"
    lines = [{"session_id": "ingested", "turn": 1, "role": "user", "content": "Open the env file.",
              "ts": "2026-11-01T10:00:00Z", "cwd": str(workspace)},
             {"session_id": "ingested", "turn": 2, "role": "tool", "content": SECRET[".env"], "file": ".env",
              "ts": "2026-11-01T10:00:01Z", "cwd": str(workspace)},
             {"session_id": "ingested", "turn": 3, "role": "tool", "content": SECRET["notes/todo.log"],
              "file": "notes/todo.log", "ts": "2026-11-01T10:00:02Z", "cwd": str(workspace)}]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = ingest_paths([transcript], tmp_path / "data", load_config())
    assert report.files_written == 1 and not report.errors
    inbox = "".join(p.read_text() for p in (tmp_path / "data" / "inbox").rglob("*.jsonl"))
    assert not _markers(inbox) and inbox.count("withheld: the content of") == 2
    assert '"cwd"' not in inbox and '"file"' not in inbox
