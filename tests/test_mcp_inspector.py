"""The official MCP Inspector CLI (``@modelcontextprotocol/inspector`` 2.x, on the Node.js 22
it needs, both from ``clients/inspector``: ``make node-tools``) against a real ``memory
serve``, as docs/integrations.md shows it: ``--strict`` finds no schema problem, the
inject tool answers the block as text, resources and the prompt read, and a wrong key is
reported as an auth error rather than sending the Inspector into an OAuth flow.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from evals.bench.serving import create_key, service_env, start
from tests.conftest import REPO, copy_root

pytestmark = pytest.mark.slow

TOOLS = Path(__file__).resolve().parents[1] / "clients" / "inspector" / "node_modules" / ".bin"


def _inspector(url: str, key: str, *args: str) -> subprocess.CompletedProcess:
    if not (TOOLS / "mcp-inspector").exists():
        pytest.fail("the MCP Inspector is not installed: run `make node-tools` (CI does)")
    env = {**service_env(), "PATH": f"{TOOLS}:{service_env().get('PATH', '')}", "CI": "1"}
    return subprocess.run([str(TOOLS / "mcp-inspector"), "--cli", url, "--header", f"Authorization: Bearer {key}",
                           *args], capture_output=True, text=True, timeout=180, env=env)


@pytest.fixture(scope="module")
def served(personal_root, tmp_path_factory):
    root = copy_root(personal_root, tmp_path_factory.mktemp("inspector"))
    key = create_key(root, "default")
    server = start(root, key, workers=1)
    yield f"http://127.0.0.1:{server.port}/mcp", key
    server.stop()


def _documented() -> list[list[str]]:
    """The Inspector commands of docs/integrations.md, as argument lists after ``--cli URL
    --header …`` (the URL and key there are the stand-ins a reader replaces)."""
    text = (REPO / "docs" / "integrations.md").read_text()
    section = text.split("## The MCP Inspector", 1)[1].split("\n## ", 1)[0]
    commands = [shlex.split(line) for line in section.splitlines() if line.startswith("mcp-inspector --cli ")]
    assert len(commands) >= 4
    for argv in commands:
        assert argv[2] == "http://127.0.0.1:8765/mcp" and argv[3:5] == ["--header", "Authorization: Bearer mem_…"]
    return [argv[5:] for argv in commands]


@pytest.fixture(scope="module")
def documented(served) -> dict[str, subprocess.CompletedProcess]:
    """Each documented command run against the server, by its method."""
    url, key = served
    return {args[args.index("--method") + 1]: _inspector(url, key, *args) for args in _documented()}


def test_every_documented_command_runs(documented):
    assert {m: d.returncode for m, d in documented.items()} == {m: 0 for m in documented}, \
        {m: d.stderr[-500:] for m, d in documented.items() if d.returncode}


def test_strict_tools_list_finds_no_schema_problem(documented):
    done = documented["tools/list"]
    assert "error" not in done.stderr.lower() and "warning" not in done.stderr.lower(), done.stderr
    tools = json.loads(done.stdout)["tools"]
    assert len(tools) == 17 and all(t.get("outputSchema") for t in tools)


def test_the_documented_inject_answers_the_block(documented):
    answer = json.loads(documented["tools/call"].stdout)
    text = answer["content"][0]["text"]
    assert text.startswith("<memory-context>") and "11,799" in text and re.search(r"\[m:\d{4,}\]", text)
    assert answer["structuredContent"]["text"] == text


def test_inject_answers_the_block_and_a_pending_line_its_short_id(served):
    url, key = served
    wrote = _inspector(url, key, "--method", "tools/call", "--tool-name", "memory_remember",
                       "--tool-arg", "content=Aaron's winter tires are stored at Mountain West Subaru.")
    assert wrote.returncode == 0, wrote.stderr
    ref = json.loads(wrote.stdout)["structuredContent"]["ref"]
    done = _inspector(url, key, "--method", "tools/call", "--tool-name", "memory_inject",
                      "--tool-arg", "context=Where are Aaron's winter tires?")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    text = answer["content"][0]["text"]
    assert text.startswith("<memory-context>") and f"[{ref}]" in text and "[pending]" in text
    assert answer["structuredContent"]["text"] == text and not answer["isError"]


def test_the_documented_resource_and_prompt_read(documented):
    lessons = json.loads(documented["resources/read"].stdout)["contents"][0]
    assert lessons["uri"] == "memory://lessons" and lessons["mimeType"] == "text/markdown"
    text = json.loads(documented["prompts/get"].stdout)["messages"][0]["content"]["text"]
    assert text.startswith("<memory-context>") and "oil change" in text and text.endswith("Book the oil change")


def test_a_wrong_key_is_an_auth_error_not_an_oauth_flow(served):
    url, _ = served
    done = _inspector(url, "mem_000000000000_not-a-key", "--method", "tools/list")
    assert done.returncode != 0
    said = done.stdout + done.stderr
    assert "401 Unauthorized: a valid API key is required" in said and "OAuth" not in said, said
