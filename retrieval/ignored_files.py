"""File contents an agent passes in, withheld when the workspace says they are private.

A coding agent reads and writes files: a tool call names a path and carries the file's
text (``Read`` → its content; ``Write``/``Edit`` → the new text). The text of a file the
workspace's ``.gitignore`` or ``.secretsignore`` names, or that ``[privacy] secret_files``
names (``.env``, private keys, credential files), never enters memory: the call keeps its
name, its id and the path, and every other value becomes one line saying which rule
withheld it. A message of a transcript that says which file it holds (``file``) is
treated the same way.

The rules are git's (``pathspec``'s ``GitIgnoreSpec``): every ignore file from the
repository's top (the nearest folder above the workspace that holds ``.git``, else the
workspace) down to the file's folder is read, a deeper file overrides a higher one, and
``.secretsignore`` is read after ``.gitignore`` in the same folder. A file outside the
repository, or a workspace this machine does not have (a service on another host), gets
``secret_files`` alone, which needs nothing but the path.

Where it runs: where a turn first enters (``retrieval.agent.sessions``: ``append_turn``
and ``flush_session``, in process, over HTTP and MCP alike), before the checkpoint or the
inbox holds anything.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePosixPath
from typing import Any

import pathspec

IGNORE_FILES = (".gitignore", ".secretsignore")
# The argument names tools give a file's path (Claude Code, OpenAI-style tools, editors).
PATH_KEYS = ("file_path", "path", "filePath", "filename", "file", "notebook_path", "target_file")
# Where a call keeps its arguments: a mapping, or a JSON string (OpenAI ``function.arguments``).
ARGUMENT_KEYS = ("arguments", "input", "args", "tool_input", "parameters", "function")
# What names the call, kept as it is.
NAME_KEYS = ("id", "name", "type", "tool", "tool_name", "tool_use_id", "tool_call_id")
IGNORE_FILE_MAX_BYTES = 256 * 1024
PATH_MAX_CHARS = 4096


@lru_cache(maxsize=256)
def _spec(path: str, mtime_ns: int) -> pathspec.GitIgnoreSpec:
    """One ignore file's rules (cached until the file changes)."""
    with open(path, "rb") as handle:
        text = handle.read(IGNORE_FILE_MAX_BYTES).decode("utf-8", errors="replace")
    return pathspec.GitIgnoreSpec.from_lines(text.splitlines())


def _ignore_file(folder: str, name: str) -> pathspec.GitIgnoreSpec | None:
    path = os.path.join(folder, name)
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return _spec(path, stat.st_mtime_ns) if os.path.isfile(path) else None


def _top(workspace: str) -> str:
    """The repository's top: the nearest folder at or above ``workspace`` holding ``.git``."""
    folder = workspace
    while True:
        if os.path.exists(os.path.join(folder, ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return workspace
        folder = parent


def _posix(path: str) -> str:
    return path.replace("\\", "/")


@dataclass(frozen=True)
class FileRules:
    """The rules for one workspace: ``withheld(path)`` says why a file's text is kept out."""

    secret: pathspec.GitIgnoreSpec
    top: str | None = None  # the repository's top on this machine; None: secret_files only
    workspace: str | None = None

    @classmethod
    def load(cls, secret_files: Sequence[str], workspace: str | None = None) -> FileRules:
        """``secret_files``: gitignore patterns always applied; ``workspace``: the agent's
        working directory (absolute; its ignore files are read when this machine has it)."""
        secret = pathspec.GitIgnoreSpec.from_lines(list(secret_files))
        if not workspace or "\x00" in workspace or len(workspace) > PATH_MAX_CHARS:
            return cls(secret)
        folder = os.path.normpath(workspace)
        if not os.path.isabs(folder) or not os.path.isdir(folder):
            return cls(secret)
        return cls(secret, _top(folder), folder)

    def withheld(self, path: str) -> str | None:
        """Why the text of the file at ``path`` must not be kept (the rule that says so),
        or None. A relative path is the workspace's."""
        if not isinstance(path, str) or not path.strip() or "\x00" in path or len(path) > PATH_MAX_CHARS:
            return None
        given = _posix(path.strip())
        if self.secret.match_file(given.lstrip("/")) or self.secret.match_file(PurePosixPath(given).name):
            return "named by [privacy] secret_files"
        if self.top is None or self.workspace is None:
            return None
        full = os.path.normpath(os.path.join(self.workspace, path.strip()))
        relative = os.path.relpath(full, self.top)
        if relative.startswith(".."):
            return None
        decided: str | None = None
        parts = PurePosixPath(_posix(relative)).parts
        for depth in range(len(parts)):  # the top, then each folder down to the file's own
            folder = os.path.join(self.top, *parts[:depth])
            below = "/".join(parts[depth:])
            for name in IGNORE_FILES:
                spec = _ignore_file(folder, name)
                result = spec.check_file(below) if spec is not None else None
                if result is not None and result.include is not None:
                    where = os.path.relpath(os.path.join(folder, name), self.top)
                    decided = f"ignored by {_posix(where)}" if result.include else None
        return decided


def _arguments(value: Any) -> tuple[Mapping[str, Any] | None, bool]:
    """A call's arguments as a mapping, and whether they were a JSON string."""
    if isinstance(value, Mapping):
        return value, False
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            loaded = json.loads(value)
        except ValueError:
            return None, False
        return (loaded, True) if isinstance(loaded, Mapping) else (None, False)
    return None, False


def path_of(call: Mapping[str, Any], depth: int = 0) -> str | None:
    """The file path a tool call names, in the call or in its arguments."""
    for key in PATH_KEYS:
        if isinstance(call.get(key), str):
            return call[key]
    for key in ARGUMENT_KEYS:
        inner, _ = _arguments(call.get(key))
        if inner is not None and depth < 3 and (found := path_of(inner, depth + 1)):
            return found
    return None


def _blank(call: Mapping[str, Any], note: str, depth: int = 0) -> dict[str, Any]:
    """``call`` with its names and paths kept and every other value replaced by ``note``."""
    out: dict[str, Any] = {}
    for key, value in call.items():
        if key in NAME_KEYS or key in PATH_KEYS:
            out[key] = value
        elif key in ARGUMENT_KEYS and depth < 3 and (inner := _arguments(value))[0] is not None:
            blanked = _blank(inner[0], note, depth + 1)
            out[key] = json.dumps(blanked, ensure_ascii=False) if inner[1] else blanked
        else:
            out[key] = note
    return out


def note(path: str, reason: str) -> str:
    return f"[withheld: the content of {path} ({reason})]"


def withhold_call(call: Any, rules: FileRules) -> Any:
    """A tool call as memory may keep it: unchanged, or blanked when its file is withheld."""
    if not isinstance(call, Mapping):
        return call
    path = path_of(call)
    reason = rules.withheld(path) if path else None
    return _blank(call, note(path, reason)) if path and reason else dict(call)


def withhold_record(record: Mapping[str, Any], rules: FileRules) -> dict[str, Any]:
    """A checkpointed turn with the tool calls of withheld files blanked."""
    calls = record.get("tool_calls")
    if not isinstance(calls, list) or not calls:
        return dict(record)
    return {**record, "tool_calls": [withhold_call(c, rules) for c in calls]}


def withhold_message(message: Mapping[str, Any], rules: FileRules) -> dict[str, Any]:
    """A transcript message that says which file it holds (``file``), its content withheld
    when that file is."""
    path = message.get("file")
    reason = rules.withheld(path) if isinstance(path, str) else None
    return {**message, "content": note(path, reason)} if reason else dict(message)


def withhold_transcript(messages: Sequence[Mapping[str, Any]], secret_files: Sequence[str]) -> list[dict[str, Any]]:
    """A parsed transcript's messages (``memory ingest``) with the text of withheld files
    replaced, each message read with its own ``workspace`` (or ``cwd``); the ``file``,
    ``workspace`` and ``cwd`` keys are dropped."""
    rules: dict[str | None, FileRules] = {}
    out = []
    for message in messages:
        workspace = message.get("workspace") or message.get("cwd")
        if workspace not in rules:
            rules[workspace] = FileRules.load(secret_files, workspace)
        kept = withhold_message(message, rules[workspace]) if message.get("file") else dict(message)
        out.append({k: v for k, v in kept.items() if k not in ("file", "workspace", "cwd")})
    return out
