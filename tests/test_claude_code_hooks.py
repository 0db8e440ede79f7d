"""Claude Code's hooks (issue 31, item 2): ``memory hooks install --claude-code`` writes the
MCP entry and the hooks, merged into what is there; ``memory hooks run claude-code`` reads
the JSON Claude Code documents for each event and answers.

The payloads are recorded in Claude Code's shape: the common fields (``session_id``,
``transcript_path``, ``cwd``, ``hook_event_name``, ``permission_mode``) and each event's
own; the transcript is its JSON Lines (``type``, ``message.content`` as a string or
blocks: ``text``, ``tool_use``, ``tool_result``).
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from memory_assets import cli
from memory_assets.cli.hooks import run_claude_code
from retrieval.agent.client import MemoryClient
from retrieval.integrations import claude_code
from retrieval.integrations.install import InstallError, install_claude_code
from retrieval.integrations.memory import MemoryUnreachable, RemoteMemory
from tests.conftest import REPO, copy_root
from evals.bench.serving import service_env

SESSION = "5d3c9a7e-1b2f-4c8d-9e0a-7f6b5c4d3e2a"
ENV_TEXT = "STRIPE_WEBHOOK_SECRET=whsec_abc OWLCREEK-internal"


def _line(kind: str, content, **extra) -> str:
    role = "user" if kind == "user" else "assistant"
    return json.dumps({"type": kind, "sessionId": SESSION, "uuid": f"u{len(str(content))}", "isSidechain": False,
                       "timestamp": "2026-11-29T09:00:00.000Z", "message": {"role": role, "content": content},
                       **extra})


@pytest.fixture
def workspace(tmp_path) -> Path:
    """A repository with a .env, and the transcript of a two-prompt session in it."""
    repo = tmp_path / "atlas-web"
    (repo / ".git").mkdir(parents=True)
    (repo / ".env").write_text(ENV_TEXT)
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("print('hello')")
    lines = [
        _line("user", "We deploy atlas-web with Buildkite now, not GitHub Actions. Check the env file."),
        _line("assistant", [{"type": "text", "text": "Reading the configuration."},
                            {"type": "tool_use", "id": "toolu_01", "name": "Read",
                             "input": {"file_path": str(repo / ".env")}},
                            {"type": "tool_use", "id": "toolu_02", "name": "Read",
                             "input": {"file_path": str(repo / "src" / "app.py")}}]),
        _line("user", [{"type": "tool_result", "tool_use_id": "toolu_01", "content": ENV_TEXT},
                       {"type": "tool_result", "tool_use_id": "toolu_02",
                        "content": [{"type": "text", "text": "print('hello')"}]}]),
        _line("assistant", [{"type": "text", "text": "Noted: Buildkite is the CI for atlas-web."}]),
        _line("user", "Also, I prefer squash merges for this repository."),
        '{"type": "summary", "summary": "CI and merges"}',
        "not json: a line being written",
        _line("assistant", [{"type": "text", "text": "Squash merges it is."}]),
    ]
    (repo / "transcript.jsonl").write_text("\n".join(lines) + "\n")
    return repo


def _event(name: str, repo: Path, **own) -> dict:
    return {"session_id": SESSION, "transcript_path": str(repo / "transcript.jsonl"), "cwd": str(repo),
            "permission_mode": "default", "hook_event_name": name, **own}


def _run(root: Path, event: dict | bytes) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    raw = event if isinstance(event, bytes) else json.dumps(event).encode()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_claude_code(str(root), None, raw)
    return code, out.getvalue(), err.getvalue()


def test_the_transcript_reads_as_turns_with_their_tool_calls(workspace):
    turns = claude_code.turns(workspace / "transcript.jsonl")
    assert [t.user_input[:20] for t in turns] == ["We deploy atlas-web ", "Also, I prefer squas"]
    first = turns[0]
    assert first.llm_output == "Reading the configuration.\nNoted: Buildkite is the CI for atlas-web."
    assert [(c["name"], c["output"]) for c in first.tool_calls] == [("Read", ENV_TEXT), ("Read", "print('hello')")]
    assert turns[1].llm_output == "Squash merges it is." and turns[1].tool_calls == []


def test_a_prompt_gets_the_memory_block_as_additional_context(personal_root, tmp_path, workspace):
    root = copy_root(personal_root, tmp_path)
    code, out, err = _run(root, _event("UserPromptSubmit", workspace, prompt="When is the WRX oil change due?"))
    assert code == 0 and err == ""
    said = json.loads(out)["hookSpecificOutput"]
    assert said["hookEventName"] == "UserPromptSubmit"
    assert said["additionalContext"].startswith("<memory-context>") and "11,799" in said["additionalContext"]


def test_stop_checkpoints_the_turn_and_compaction_hands_the_session_over(personal_root, tmp_path, workspace):
    root = copy_root(personal_root, tmp_path)
    assert _run(root, _event("Stop", workspace, stop_hook_active=False)) == (0, "", "")
    client = MemoryClient(root)
    [turn] = client.replay(f"claude-{SESSION}")
    assert turn["turn"] == 2 and turn["record"]["user_input"].startswith("Also, I prefer squash merges")
    assert turn["project"] == "atlas-web"
    assert _run(root, _event("PreCompact", workspace, trigger="auto", custom_instructions="")) == (0, "", "")
    turns = client.replay(f"claude-{SESSION}")
    assert [t["turn"] for t in turns] == [1, 2] and all(t["flushed"] for t in turns)
    calls = turns[0]["record"]["tool_calls"]
    assert calls[0]["input"]["file_path"].endswith(".env") and "OWLCREEK" not in json.dumps(turns)
    assert calls[0]["output"].startswith("[withheld: the content of") and calls[1]["output"] == "print('hello')"
    inbox = "".join(p.read_text() for p in (root / "inbox" / f"claude-{SESSION}").glob("*.jsonl"))
    assert "Buildkite" in inbox and "squash merges" in inbox and "OWLCREEK" not in inbox
    # SessionEnd after compaction: the same turns, nothing new to hand over, no error.
    assert _run(root, _event("SessionEnd", workspace, reason="prompt_input_exit")) == (0, "", "")


def test_a_bad_event_never_blocks_the_prompt(tmp_path):
    for raw in (b"not json", b"[]", b'{"hook_event_name": "UserPromptSubmit"}', b"x" * (4 * 1024 * 1024 + 2)):
        code, out, err = _run(tmp_path / "data", raw)
        assert code == 0 and out == "" and err.startswith("memory hook: ")


@pytest.fixture(scope="module")
def served(personal_root, tmp_path_factory):
    """A real ``memory serve`` on a copy of the personal root: (root, key, server)."""
    from evals.bench.serving import create_key, start

    root = copy_root(personal_root, tmp_path_factory.mktemp("hooks-served"))
    key = create_key(root, "default")
    server = start(root, key, workers=1)
    yield root, key, server
    server.stop()


@pytest.mark.slow
def test_over_http_the_hook_talks_to_the_running_service(served, workspace):
    from evals.bench.serving import free_port

    _, key, server = served
    remote = RemoteMemory(f"http://127.0.0.1:{server.port}", key)
    said = claude_code.answer(_event("UserPromptSubmit", workspace, prompt="When is the WRX oil change due?"),
                              remote, message_limit=100_000)
    assert "11,799" in said["hookSpecificOutput"]["additionalContext"]
    for name in ("Stop", "Stop", "SessionEnd"):  # the same turn twice is one turn
        claude_code.answer(_event(name, workspace), remote, message_limit=100_000)
    turns = server.client(key).get(f"/v1/sessions/claude-{SESSION}/turns").json()
    assert [t["turn"] for t in turns] == [1, 2] and "OWLCREEK" not in json.dumps(turns)
    with pytest.raises(MemoryUnreachable, match="401"):
        RemoteMemory(f"http://127.0.0.1:{server.port}", "mem_000000000000_wrongwrongwrongwrong").inject("x", None)
    with pytest.raises(MemoryUnreachable, match="refused"):  # no service there: said, not hung
        RemoteMemory(f"http://127.0.0.1:{free_port()}", key, timeout=2).inject("x", None)
    with pytest.raises(MemoryUnreachable, match="http:// or https://"):
        RemoteMemory("file:///etc/passwd", key)


def test_install_writes_the_mcp_entry_and_hooks_and_keeps_the_users_own(tmp_path):
    project = tmp_path / "atlas-web"
    (project / ".claude").mkdir(parents=True)
    mine = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}, "model": "opus"}
    (project / ".claude" / "settings.local.json").write_text(json.dumps(mine))
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"github": {"type": "http", "url": "https://x"}}}))
    for _ in range(2):  # installing again replaces ours only
        done = install_claude_code(memory="/opt/memory/.venv/bin/memory", data_root="/srv/memory data",
                                   home=tmp_path / "home", project=project)
    settings = json.loads(done.settings_file.read_text())
    assert settings["model"] == "opus"
    assert settings["hooks"]["Stop"][0]["hooks"][0]["command"] == "notify-send done"
    for event in ("UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"):
        ours = [h for g in settings["hooks"][event] for h in g["hooks"] if "hooks run claude-code" in h["command"]]
        assert len(ours) == 1 and ours[0]["timeout"] <= 60
        assert ours[0]["command"] == "/opt/memory/.venv/bin/memory --data-root '/srv/memory data' hooks run claude-code"
    servers = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert set(servers) == {"github", "memory"}
    assert servers["memory"]["args"] == ["--data-root", "/srv/memory data", "serve", "--mcp-stdio"]
    assert servers["memory"]["env"]["MEMORY_API_KEY"] == "${MEMORY_API_KEY}"  # never the key itself
    remote = install_claude_code(memory="/m", data_root="/d", home=tmp_path / "home", url="http://127.0.0.1:8765")
    assert remote.mcp_file == tmp_path / "home" / ".claude.json"
    assert json.loads(remote.mcp_file.read_text())["mcpServers"]["memory"]["url"] == "http://127.0.0.1:8765/mcp"
    assert remote.command.startswith("MEMORY_URL=http://127.0.0.1:8765 ")
    (project / ".mcp.json").write_text("{ not json")
    with pytest.raises(InstallError, match="not JSON"):
        install_claude_code(memory="/m", data_root="/d", home=tmp_path / "home", project=project)
    assert (project / ".mcp.json").read_text() == "{ not json"


def test_the_installed_command_runs_as_claude_code_runs_it(personal_root, tmp_path, workspace):
    """The real command line, in a subprocess, with the event on stdin."""
    root = copy_root(personal_root, tmp_path)
    event = json.dumps(_event("UserPromptSubmit", workspace, prompt="When is the WRX oil change due?"))
    done = subprocess.run([sys.executable, "-m", "memory_assets.cli", "--data-root", str(root), "hooks", "run",
                           "claude-code"], input=event, capture_output=True, text=True, env=service_env(), cwd=REPO,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "11,799" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def test_the_documented_install_command_installs(tmp_path, monkeypatch):
    """docs/integrations.md's command, run by the real CLI on a project folder."""
    import shlex

    section = (REPO / "docs" / "integrations.md").read_text().split("## Claude Code", 1)[1].split("\n## ", 1)[0]
    [line] = [line for line in section.splitlines() if line.startswith("memory hooks install")]
    argv = shlex.split(line)
    project = tmp_path / "atlas-web"
    project.mkdir()
    assert argv[-2] == "--project" and argv[-1] == "~/src/atlas-web"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["--data-root", str(tmp_path / "data"), *argv[1:-1], str(project)]) == 0
    settings = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert set(settings["hooks"]) == {"UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"}
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["memory"]["type"] == "stdio"
    assert str(project / ".mcp.json") in out.getvalue() and not (tmp_path / "home").exists()


@pytest.mark.slow
def test_memory_inject_and_the_hook_talk_to_a_running_server_with_memory_url(served, tmp_path, workspace):
    """``MEMORY_URL``: the CLI and the hook ask the server (no data root here, no model loaded)."""
    root, key, server = served
    env = {**service_env(), "MEMORY_URL": f"http://127.0.0.1:{server.port}", "MEMORY_API_KEY": key}
    nowhere = ["--data-root", str(tmp_path / "no-such-root")]
    done = subprocess.run([sys.executable, "-m", "memory_assets.cli", *nowhere, "inject", "--context",
                           "When is the WRX oil change due?"], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=120)
    assert done.returncode == 0 and "11,799" in done.stdout, done.stderr
    event = json.dumps(_event("SessionEnd", workspace, reason="other"))
    done = subprocess.run([sys.executable, "-m", "memory_assets.cli", *nowhere, "hooks", "run", "claude-code"],
                          input=event, capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert list((root / "inbox" / f"claude-{SESSION}").glob("*.jsonl"))
    done = subprocess.run([sys.executable, "-m", "memory_assets.cli", "hooks", "run", "claude-code"],  # the fast path
                          input=json.dumps(_event("UserPromptSubmit", workspace, prompt="When is the WRX oil change due?")),
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert done.returncode == 0 and "11,799" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    wrong = subprocess.run([sys.executable, "-m", "memory_assets.cli", *nowhere, "inject", "--context", "x"],
                           capture_output=True, text=True, env={**env, "MEMORY_API_KEY": "mem_0_x"}, cwd=REPO,
                           timeout=120)
    assert wrong.returncode == 1 and "401" in wrong.stderr
