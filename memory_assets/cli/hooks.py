"""``memory hooks``: coding agents' hooks (``retrieval.integrations``).

``memory hooks install --claude-code [--project DIR] [--url URL]`` writes the MCP entry and
the hooks into Claude Code's files; ``memory hooks run claude-code`` is what each hook runs:
it reads the event Claude Code writes to stdin and answers on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

Command = Callable[..., argparse.ArgumentParser]
EVENT_MAX_BYTES = 4 * 1024 * 1024  # a pasted prompt can be long; more is not an event


def add_commands(command: Command) -> None:
    p = command("hooks", help="coding agents' hooks: `memory hooks install --claude-code [--project DIR]`, "
                              "and `memory hooks run claude-code`, which each hook runs")
    p.add_argument("action", choices=["install", "run"])
    p.add_argument("agent", nargs="?", choices=["claude-code"], help="run: the agent whose event is on stdin")
    p.add_argument("--claude-code", action="store_true", help="install: Claude Code's MCP entry and hooks")
    p.add_argument("--project", default=None, metavar="DIR",
                   help="install into this project (.mcp.json, .claude/settings.local.json) instead of the user's")
    p.add_argument("--url", default=None, help="install: a running `memory serve` (its MCP endpoint and the "
                                               "hooks' MEMORY_URL) instead of the data root in process")
    p.add_argument("--namespace", default=None, help="run, in process: whose memory (default: the configured one)")
    p.set_defaults(func=cmd_hooks)


def cmd_hooks(args: argparse.Namespace) -> int:
    if args.action == "install":
        return _install(args)
    if args.agent != "claude-code":
        print("memory hooks run: name the agent (claude-code)", file=sys.stderr)
        return 2
    return run_claude_code(args.data_root, args.namespace, sys.stdin.buffer.read(EVENT_MAX_BYTES + 1))


def _install(args: argparse.Namespace) -> int:
    from retrieval.integrations.install import InstallError, install_claude_code

    if not args.claude_code:
        print("memory hooks install: say which agent (--claude-code)", file=sys.stderr)
        return 2
    memory = shutil.which("memory") or str(Path(sys.executable).with_name("memory"))
    project = Path(args.project).resolve() if args.project else None
    if project is not None and not project.is_dir():
        print(f"memory hooks install: no folder {project}", file=sys.stderr)
        return 2
    try:
        done = install_claude_code(memory=str(Path(memory).resolve()), data_root=str(Path(args.data_root).resolve()),
                                   home=Path.home(), project=project, url=args.url)
    except InstallError as exc:
        print(f"memory hooks install: {exc}", file=sys.stderr)
        return 1
    print(f"MCP server 'memory' in {done.mcp_file}\nhooks (UserPromptSubmit, Stop, PreCompact, SessionEnd) in "
          f"{done.settings_file}:\n  {done.command}\nClaude Code reads MEMORY_API_KEY from its environment.")
    return 0


def run_claude_code(data_root: str | None, namespace: str | None, raw: bytes) -> int:
    """Answer one Claude Code hook event (``raw``: its stdin). Exit 0 whatever happens: a
    hook that fails must not stop the user's prompt; the reason goes to stderr."""
    from retrieval.integrations.claude_code import answer

    try:
        if len(raw) > EVENT_MAX_BYTES:
            raise ValueError(f"the event is over {EVENT_MAX_BYTES:,} bytes")
        event = json.loads(raw or b"{}")
        if not isinstance(event, dict) or not event.get("session_id"):
            raise ValueError("expected Claude Code's hook event: a JSON object with session_id and hook_event_name")
        from retrieval.integrations.memory import URL_ENV, memory_for
        from retrieval.limits import MESSAGE_MAX_CHARS

        if event.get("hook_event_name") == "UserPromptSubmit" and not os.environ.get(URL_ENV):
            from retrieval.config import load_config
            from retrieval.embeddings import Embedder

            Embedder(load_config()).warm()  # the model loads on the other core while the read path does

        out = answer(event, memory_for(data_root, namespace), message_limit=MESSAGE_MAX_CHARS)
    except Exception as exc:  # noqa: BLE001 - reported, never raised into Claude Code
        print(f"memory hook: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 0
    if out is not None:
        sys.stdout.write(json.dumps(out, ensure_ascii=False))
        sys.stdout.flush()
    return 0

