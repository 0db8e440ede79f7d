"""The README runs as written: its two agent examples, and every command of its shell blocks.

Each line of a ```bash, ```sh or ```console block is a command, and every command belongs to
a kind a test here runs: ``make X`` (the target exists and ``make -n X`` succeeds), ``memory
…`` (run in process by the real CLI on a built sample root), and the service's commands
(``memory serve``, ``curl``, ``claude mcp add``), run in one slow test against a real
``memory serve`` on a free 127.0.0.1 port. A command of no kind fails
``test_every_readme_command_is_run_by_a_test``: a new README command needs its test.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
import dagster as dg
import httpx
import pytest

from evals.bench.serving import free_port, service_env
from memory_assets.cli import main as memory
from memory_assets.cli.main import build_parser
from retrieval.paths import DataRoot
from tests.conftest import REPO, SAMPLES

README = REPO / "README.md"
MAX_README_LINES = 300
SHELL_BLOCK = re.compile(r"^```(bash|sh|console)\n(.*?)^```", re.DOTALL | re.MULTILINE)
# The README's stand-ins, and what the tests put in their place.
KEY = "mem_…"
PORT = "8765"
SHORT_ID = re.compile(r"\bm:\d{4,}\b")
CLONE = "/path/to/agent-memory"
WRX = "When is my WRX oil change due?"


# --- the README's commands --------------------------------------------------------------

@dataclass(frozen=True)
class Command:
    line: int  # README line number
    text: str  # as written, comments and all

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.text, comments=True)

    @property
    def kind(self) -> str | None:
        """Which test runs it: ``make``, ``memory`` (in process), ``service`` (the slow
        test: the server, ``curl`` and its variables, MCP clients), or None."""
        argv = self.argv
        if argv[0] == "make" and len(argv) == 2:
            return "make"
        if argv[0] == "memory":
            return "service" if "serve" in argv[1:] else "memory"
        if argv[0] == "curl" or re.fullmatch(r"[A-Z_]+=.*", argv[0]) and len(argv) == 1:
            return "service"
        if argv[:3] == ["claude", "mcp", "add"]:
            return "service"
        return None

    def __str__(self) -> str:
        return f"README.md line {self.line}: {self.text}"


def readme_commands() -> list[Command]:
    """Every command of every shell block, in README order (a ``console`` block's
    commands are its ``$`` lines; a trailing backslash continues a line)."""
    text = README.read_text()
    commands = []
    for block in SHELL_BLOCK.finditer(text):
        first = text.count("\n", 0, block.start(2)) + 1
        pending, start = "", 0
        for offset, raw in enumerate(block.group(2).splitlines()):
            line = raw.strip()
            if block.group(1) == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            if not pending and (not line or line.startswith("#")):
                continue
            start = start if pending else first + offset
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            commands.append(Command(start, pending + line))
            pending = ""
    return commands


def commands_of(kind: str) -> list[Command]:
    return [c for c in readme_commands() if c.kind == kind]


# --- the sample root --------------------------------------------------------------------

@pytest.fixture(scope="module")
def template(personal_root) -> Path:
    """The personal-assistant sample, published once per test session (``conftest``); each
    test works on a copy of it."""
    return personal_root


def _working_copy(template: Path, folder: Path) -> Path:
    """``folder/data``: a copy of the built root, with the samples where the repo keeps them."""
    root = folder / "data"
    shutil.copytree(template, root)
    shutil.copytree(SAMPLES, root / "samples")
    return root


def _built(tmp_path, template, monkeypatch) -> DataRoot:
    """The personal-assistant sample materialized under ``data/`` of a working directory."""
    paths = DataRoot.resolve(_working_copy(template, tmp_path))
    monkeypatch.chdir(tmp_path)
    return paths


# --- the Python examples ----------------------------------------------------------------

def _example(marker: str) -> str:
    match = re.search(rf"<!-- {marker} -->\s*```python\n(.*?)```", README.read_text(), re.DOTALL)
    assert match, f"README lost its {marker}"
    return match.group(1)


def test_readme_agent_example_runs_as_written(tmp_path, template, monkeypatch):
    paths = _built(tmp_path, template, monkeypatch)
    namespace: dict = {}
    exec(compile(_example("agent-example"), "README.md", "exec"), namespace)
    injection = namespace["injection"]
    assert "11,799" in injection.text and injection.tokens <= 400
    types = [json.loads(p.read_text())["type"] for p in paths.events.glob("*.json")]
    assert {"injected", "reinforce"} <= set(types)
    assert {"referenced", "ignored"} & set(types)  # record_response wrote echo/fizzle
    assert list((paths.inbox / "chat-42").glob("*.jsonl"))


def test_readme_tool_agent_example_acts_on_the_line_the_model_names(tmp_path, template, monkeypatch):
    paths = _built(tmp_path, template, monkeypatch)
    namespace: dict = {}
    exec(compile(_example("tool-agent-example"), "README.md", "exec"), namespace)
    first = namespace["injection"].items[0]
    assert namespace["full_id"] == first.id
    reinforced = [json.loads(p.read_text()) for p in paths.events.glob("*-reinforce-*.json")]
    assert [e["item_ids"] for e in reinforced] == [[first.id]]


# --- the README's shape -----------------------------------------------------------------

def test_the_readme_is_at_most_300_lines():
    assert len(README.read_text().splitlines()) <= MAX_README_LINES


def test_every_readme_command_is_run_by_a_test():
    commands = readme_commands()
    assert commands, "README lost its shell blocks"
    assert [str(c) for c in commands if c.kind is None] == []


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def _named_words(parser: argparse.ArgumentParser) -> set[str] | None:
    """The words a command's first positional may be (``keys create``, ``run nightly``,
    ``bench retrieval``), or None when it takes free text (``search QUERY``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
        if not action.option_strings and action.dest not in ("help",):
            return set(action.choices) if action.choices else None
    return None


def _memory_invocations(text: str) -> list[list[str]]:
    """Each ``memory …`` the README shows in code (blocks, spans, table cells), as the
    words after ``memory`` and its global options."""
    code = [m.group(1) for m in re.finditer(r"```[a-z]*\n(.*?)```", text, re.DOTALL)]
    code += re.findall(r"`([^`]+)`", re.sub(r"```[a-z]*\n.*?```", "", text, flags=re.DOTALL))
    found = []
    for snippet in code:
        for line in snippet.splitlines():
            words = line.replace("…", " ").split()
            for at, word in enumerate(words):
                if word != "memory" and not word.endswith("/memory"):
                    continue
                rest = words[at + 1:]
                while rest[:1] and rest[0] in ("--data-root", "--config"):
                    rest = rest[2:]
                if rest and re.fullmatch(r"[a-z][a-z-]*", rest[0]):
                    found.append(rest)
    return found


def test_every_memory_command_the_readme_names_exists():
    commands = _subcommands(build_parser())
    named = _memory_invocations(README.read_text())
    assert len(named) > 20
    unknown = []
    for words in named:
        parser = commands.get(words[0])
        if parser is None:
            unknown.append(" ".join(words[:2]))
            continue
        choices = _named_words(parser)
        second = words[1] if len(words) > 1 else ""
        if choices is not None and re.fullmatch(r"[a-z][a-z-]*", second) and second not in choices:
            unknown.append(f"{words[0]} {second}")
    assert unknown == []


def test_the_docs_list_exactly_the_mcp_tools_served():
    source = (REPO / "retrieval" / "service" / "mcp_server.py").read_text()
    served = set(re.findall(r"@mcp\.tool\([^)]*\)\s+async def (\w+)", source))
    listed = set(re.findall(r"^\| `(memory_\w+)` \|", (REPO / "docs" / "service.md").read_text(), re.MULTILINE))
    assert len(served) == source.count("@mcp.tool")
    assert listed == served
    assert f"the {len(served)} MCP tools" in README.read_text()


# --- make -------------------------------------------------------------------------------

@pytest.mark.parametrize("command", commands_of("make"), ids=lambda c: " ".join(c.argv))
def test_readme_make_command_is_a_target_that_dry_runs(command):
    target = command.argv[1]
    makefile = (REPO / "Makefile").read_text()
    assert re.search(rf"^{re.escape(target)}\s*:", makefile, re.MULTILINE), f"{command}: no such target"
    done = subprocess.run(["make", "-n", target], cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, f"{command}\n{done.stderr}"


# --- memory, in process -----------------------------------------------------------------

def _expect(argv: list[str], out: str, err: str, cwd: Path) -> None:
    """What each command the README shows must have printed, beyond exiting 0."""
    command = argv[0]
    if command == "inject":
        assert re.search(r"\[m:\d{4,}\]", out), out
    elif command in ("search", "list", "stats"):
        assert out.strip(), f"memory {command} printed nothing"
    elif command == "show":
        assert argv[1] in out or "content" in out, out
    elif command == "ingest":
        assert "ingested" in out and "0 errors" in out, out
    elif command == "materialize":
        assert "0 failed, 0 quarantined" in out and "memory_items: published" in out, out
    elif command == "run":
        assert f"{argv[1]}: succeeded" in out, out
    elif command == "export":
        header = json.loads((cwd / argv[argv.index("-o") + 1]).read_text().splitlines()[0])
        assert header["format"] == "agent-memory-export"
    elif command == "keys" and argv[1] == "create":
        assert out.startswith("mem_") and "namespace" in err, (out, err)
    else:
        assert out.strip() or err.strip(), f"memory {command} printed nothing"


def test_every_readme_memory_command_runs(template, tmp_path, monkeypatch, capsys):
    root = _working_copy(template, tmp_path)
    monkeypatch.chdir(tmp_path)
    commands = commands_of("memory")
    assert commands, "README lost its memory commands"
    short_id = None  # the last short id a command printed: what `m:4821` stands for
    with dg.instance_for_test() as instance:
        monkeypatch.setattr("memory_assets.cli.runner.local_instance", lambda paths: instance)
        for command in commands:
            argv = []
            for word in command.argv[1:]:
                if SHORT_ID.fullmatch(word):
                    assert short_id, f"{command}: no short id printed before it"
                    word = short_id
                if "*" in word:
                    argv += sorted(str(p.relative_to(tmp_path)) for p in tmp_path.glob(word)) or [word]
                else:
                    argv.append(word)
            code = memory(["--data-root", str(root), *argv])
            out, err = capsys.readouterr()
            assert code == 0, f"{command}\n{out}\n{err}"
            _expect(argv, out, err, tmp_path)
            short_id = (SHORT_ID.findall(out) or [short_id])[0]


# --- the service: a real server, curl and MCP clients ------------------------------------

def _substitute(text: str, key: str, port: int, root: Path) -> str:
    return (text.replace(KEY, key).replace(f"localhost:{PORT}", f"127.0.0.1:{port}")
            .replace(f"127.0.0.1:{PORT}", f"127.0.0.1:{port}")
            .replace(f"{CLONE}/data", str(root)).replace(CLONE, str(REPO)))


def _mcp_servers(key: str, port: int, root: Path) -> list[dict]:
    """Every MCP server the README sets up (its JSON entries and its `claude mcp add`
    lines), with the README's stand-ins replaced, each once."""
    servers = []
    for block in re.findall(r"```json\n(.*?)```", README.read_text(), re.DOTALL):
        entries = json.loads(_substitute(block, key, port, root)).get("mcpServers", {})
        servers += list(entries.values())
    for command in commands_of("service"):
        argv = shlex.split(_substitute(command.text, key, port, root), comments=True)
        if argv[:3] != ["claude", "mcp", "add"]:
            continue
        options, rest = argv[3:], []
        if "--" in options:
            options, rest = options[:options.index("--")], options[options.index("--") + 1:]
        server: dict = {"env": {}, "headers": {}}
        words = iter(options)
        positional = []
        for word in words:
            if word == "--transport":
                server["type"] = next(words)
            elif word == "--env":
                name, _, value = next(words).partition("=")
                server["env"][name] = value
            elif word == "--header":
                name, _, value = next(words).partition(":")
                server["headers"][name.strip()] = value.strip()
            else:
                assert not word.startswith("-"), f"{command}: option {word} not understood here"
                positional.append(word)
        if server.get("type") == "http":
            (_, server["url"]) = positional
        else:
            assert server.get("type") == "stdio" and rest, f"{command}: a stdio server needs `-- COMMAND`"
            server["command"], server["args"] = rest[0], rest[1:]
        servers.append({k: v for k, v in server.items() if v != {}})
    unique = []
    for server in servers:
        server = {k: v for k, v in server.items() if k != "type"}
        if server not in unique:
            unique.append(server)
    return unique


async def _ask_over_mcp(server: dict, errlog: Path) -> tuple[set[str], str]:
    """The tools a configured MCP server lists, and its `memory_inject` block for the WRX
    (a stdio server's stderr goes to ``errlog``)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamablehttp_client

    async def ask(session: ClientSession) -> tuple[set[str], str]:
        await session.initialize()
        tools = {t.name for t in (await session.list_tools()).tools}
        result = await session.call_tool("memory_inject", {"context": WRX})
        assert not result.isError, result
        return tools, result.content[0].text  # the block itself, what goes into the context

    if "url" in server:
        async with (streamablehttp_client(server["url"], headers=server.get("headers")) as (read, write, _),
                    ClientSession(read, write) as session):
            return await ask(session)
    params = StdioServerParameters(command=server["command"], args=server["args"], env=server.get("env"))
    with errlog.open("a") as log:
        async with stdio_client(params, errlog=log) as (read, write), ClientSession(read, write) as session:
            return await ask(session)


@pytest.mark.slow
def test_readme_service_commands_run_against_a_real_server(template, tmp_path, capsys):
    root = _working_copy(template, tmp_path)
    bin_memory = Path(sys.executable).parent / "memory"
    assert bin_memory.exists() and shutil.which("curl"), "needs .venv/bin/memory and curl"
    commands = commands_of("service")
    # The key the README makes: it must see the demo's memory.
    (create,) = [c for c in commands_of("memory") if c.argv[1:3] == ["keys", "create"]]
    assert memory(["--data-root", str(root), *create.argv[1:]]) == 0
    key = capsys.readouterr().out.strip()
    port = free_port()

    (serve,) = [c for c in commands if c.argv[0] == "memory"]
    argv = [str(bin_memory), "--data-root", str(root), *serve.argv[1:]]
    if "--port" in argv:
        argv[argv.index("--port") + 1] = str(port)
    else:
        argv += ["--port", str(port)]
    log = tmp_path / "serve.log"
    server = subprocess.Popen(argv, stdout=log.open("wb"), stderr=subprocess.STDOUT, env=service_env(),
                              cwd=tmp_path, start_new_session=True)
    try:
        for _ in range(360):
            assert server.poll() is None, f"{serve} exited:\n{log.read_text()[-3000:]}"
            try:
                who = httpx.get(f"http://127.0.0.1:{port}/v1/whoami", headers={"Authorization": f"Bearer {key}"})
                if who.status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.25)
        else:
            pytest.fail(f"{serve} did not answer:\n{log.read_text()[-3000:]}")
        assert who.json()["namespace"] == "default"

        # The curl lines, by bash, after the block's variables.
        variables, curled = [], 0
        for command in commands:
            text = _substitute(command.text, key, port, root)
            if command.argv[0] != "curl":
                if command.argv[0] not in ("memory", "claude"):
                    variables.append(text)
                continue
            script = "\n".join([*variables, re.sub(r"^curl ", "curl -sS -w '\\n%{http_code}' ", text)])
            done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120, check=False)
            body, _, status = done.stdout.rpartition("\n")
            assert done.returncode == 0 and status.startswith("2"), f"{command}\n{done.stdout}\n{done.stderr}"
            answer = json.loads(body)
            assert answer, f"{command}: an empty answer"
            if "/v1/inject" in text:
                assert "Thursdays" in answer["text"] and "[pending]" in answer["text"], answer
            curled += 1
        assert curled == sum(c.argv[0] == "curl" for c in commands) > 0

        # The MCP set-ups: each lists the tools served and injects the demo's memory.
        source = (REPO / "retrieval" / "service" / "mcp_server.py").read_text()
        served = set(re.findall(r"@mcp\.tool\([^)]*\)\s+async def (\w+)", source))
        configured = _mcp_servers(key, port, root)
        assert {"url" in s for s in configured} == {True, False}
        for config in configured:
            tools, block = anyio.run(_ask_over_mcp, config, tmp_path / "mcp-stdio.log")
            assert tools == served, config
            assert "11,799" in block, (config, block)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=30)
