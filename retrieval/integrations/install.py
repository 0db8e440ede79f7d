"""``memory hooks install --claude-code``: the MCP server entry and the hooks, written into
Claude Code's own files, merged with what is there.

- ``--project DIR``: the MCP entry in ``DIR/.mcp.json`` and the hooks in
  ``DIR/.claude/settings.local.json`` (this machine's paths: Claude Code keeps that file
  out of git); without it, the user's: ``~/.claude.json`` and ``~/.claude/settings.json``.
- The key is never written: the entries read ``MEMORY_API_KEY`` from the environment
  Claude Code runs in (``${MEMORY_API_KEY}``, which Claude Code expands in ``.mcp.json``).
- With ``--url`` the MCP entry is the running service's streamable HTTP endpoint and the
  hooks talk to it (``MEMORY_URL``); without, the MCP server is started over stdio and the
  hooks open the data root in process.

Installing again replaces this tool's entries and leaves everything else as it was; a
file that is not JSON is refused, never overwritten.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrieval.files import atomic_write

SERVER = "memory"
MARK = "hooks run claude-code"  # how an entry of ours is told from the user's own
# Claude Code's timeout per hook, in seconds: a prompt waits for the block; the others
# read the transcript and write.
TIMEOUTS = {"UserPromptSubmit": 10, "Stop": 30, "PreCompact": 60, "SessionEnd": 60}


class InstallError(ValueError):
    """A file to merge into is not what Claude Code reads (not JSON, not an object)."""


@dataclass(frozen=True)
class Installed:
    mcp_file: Path
    settings_file: Path
    command: str


def _load(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "{}")
    except ValueError as exc:
        raise InstallError(f"{path} is not JSON ({exc}); fix or move it, nothing was written") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} holds a JSON {type(data).__name__}, not an object; nothing was written")
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    atomic_write(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())


def hook_command(memory: str, data_root: str, url: str | None) -> str:
    """The shell command each hook runs."""
    prefix = f"MEMORY_URL={shlex.quote(url)} " if url else ""
    return f"{prefix}{shlex.quote(memory)} --data-root {shlex.quote(data_root)} {MARK}"


def mcp_entry(memory: str, data_root: str, url: str | None) -> dict[str, Any]:
    if url:
        return {"type": "http", "url": f"{url.rstrip('/')}/mcp",
                "headers": {"Authorization": "Bearer ${MEMORY_API_KEY}"}}
    return {"type": "stdio", "command": memory, "args": ["--data-root", data_root, "serve", "--mcp-stdio"],
            "env": {"MEMORY_API_KEY": "${MEMORY_API_KEY}", "HF_HUB_OFFLINE": "1"}}


def install_claude_code(*, memory: str, data_root: str, home: Path, project: Path | None = None,
                        url: str | None = None) -> Installed:
    """Write (merge) the MCP entry and the four hooks; what was written where."""
    if project is not None:
        mcp_file, settings_file = project / ".mcp.json", project / ".claude" / "settings.local.json"
    else:
        mcp_file, settings_file = home / ".claude.json", home / ".claude" / "settings.json"
    servers, settings = _load(mcp_file), _load(settings_file)  # both read before either is written
    servers.setdefault("mcpServers", {})[SERVER] = mcp_entry(memory, data_root, url)
    command = hook_command(memory, data_root, url)
    hooks = settings.setdefault("hooks", {})
    for event, timeout in TIMEOUTS.items():
        kept = [group for group in hooks.get(event, [])
                if not any(MARK in str(h.get("command", "")) for h in group.get("hooks", []))]
        hooks[event] = [*kept, {"hooks": [{"type": "command", "command": command, "timeout": timeout}]}]
    _write(mcp_file, servers)
    _write(settings_file, settings)
    return Installed(mcp_file, settings_file, command)
