"""Claude Code's hooks, answered: the memory block on every prompt, each turn checkpointed,
the session handed over before compaction and at its end.

Claude Code runs a hook command with one JSON object on stdin (its documented common
fields ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``, and each event's
own: ``prompt`` for ``UserPromptSubmit``, ``trigger`` for ``PreCompact``, ``reason`` for
``SessionEnd``). ``memory hooks run claude-code`` (``answer``) does, by event:

- ``UserPromptSubmit``: the memory block for the prompt, for the working directory's
  project, printed as ``hookSpecificOutput.additionalContext`` (what Claude Code adds to
  the prompt);
- ``Stop`` (the reply is done): the turn just finished, read from the transcript,
  checkpointed (``append_turn``), with the tool calls' file reads and writes as the
  workspace's ``.gitignore`` and ``.secretsignore`` allow (``retrieval.ignored_files``);
- ``PreCompact`` and ``SessionEnd``: every turn of the transcript checkpointed (a turn
  already there is the same turn), then the session handed to the pipeline
  (``flush_session``), so what compaction or the end drops is in memory.

Claude Code's transcript is JSON Lines: ``{"type": "user" | "assistant", "message":
{"role", "content"}, …}``, where ``content`` is a string or blocks (``text``,
``tool_use`` with ``id``, ``name``, ``input``; ``tool_result`` with ``tool_use_id`` and
``content``). A turn is one prompt of the user's and everything until the next: the
replies' text, and each tool call with its result.

The memory is reached through ``Memory``: over HTTP to a running ``memory serve``
(``MEMORY_URL`` and ``MEMORY_API_KEY``: no model to load, the fast path) or in process.
A hook never fails the user's prompt: a problem is one line on stderr and exit 0.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

EVENTS = ("UserPromptSubmit", "Stop", "PreCompact", "SessionEnd")
# How much of a turn is kept: a tool's output is cut to this (a file read can be
# megabytes), and a turn to at most this many tool calls.
TOOL_OUTPUT_CHARS = 4_000
TOOL_CALLS_MAX = 100
TRANSCRIPT_MAX_BYTES = 50 * 1024 * 1024
SESSION_PREFIX = "claude-"


class Memory(Protocol):
    def inject(self, context: str, project: str | None) -> str: ...
    def append_turn(self, session_id: str, turn: int, record: dict[str, Any], project: str | None) -> None: ...
    def flush(self, session_id: str, project: str | None) -> None: ...


@dataclass
class Turn:
    user_input: str
    llm_output: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)

    def record(self, workspace: str | None, limit: int) -> dict[str, Any]:
        """As ``append_turn`` takes it (``limit``: the longest text a message may have)."""
        return {"user_input": _cut(self.user_input, limit), "llm_output": _cut(self.llm_output, limit),
                "tool_calls": self.tool_calls[:TOOL_CALLS_MAX], **({"workspace": workspace} if workspace else {})}


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit - 40]} [… {len(text) - limit + 40:,} characters cut]"


def _text(content: Any) -> str:
    """The text of a message's content: a string, or its ``text`` blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(b.get("text", "") for b in content if isinstance(b, Mapping) and b.get("type") == "text")
    return ""


def _result(content: Any) -> str:
    """A ``tool_result``'s content as text, cut."""
    text = content if isinstance(content, str) else _text(content) or json.dumps(content, ensure_ascii=False)
    return _cut(text, TOOL_OUTPUT_CHARS)


def entries(path: Path) -> Iterator[dict[str, Any]]:
    """The transcript's JSON objects; a line that does not parse (being written) is skipped."""
    with path.open("rb") as handle:
        data = handle.read(TRANSCRIPT_MAX_BYTES)
    for line in data.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            yield entry


def turns(path: Path) -> list[Turn]:
    """The transcript's turns, in order (``Turn``); a prompt's tool results join the calls
    that asked for them."""
    out: list[Turn] = []
    calls: dict[str, dict[str, Any]] = {}
    for entry in entries(path):
        message = entry.get("message")
        if entry.get("type") not in ("user", "assistant") or not isinstance(message, Mapping) or entry.get("isMeta"):
            continue
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        if entry["type"] == "user":
            results = [b for b in blocks if isinstance(b, Mapping) and b.get("type") == "tool_result"]
            for block in results:
                if (call := calls.get(str(block.get("tool_use_id")))) is not None:
                    call["output"] = _result(block.get("content"))
            said = _text(content).strip()
            if said and not results:
                out.append(Turn(said))
            continue
        if not out:
            continue  # a reply before any prompt (a resumed session's summary)
        turn = out[-1]
        if said := _text(content).strip():
            turn.llm_output = f"{turn.llm_output}\n{said}".strip()
        for block in blocks:
            if isinstance(block, Mapping) and block.get("type") == "tool_use":
                call = {"id": str(block.get("id")), "name": str(block.get("name")), "input": block.get("input") or {}}
                calls[call["id"]] = call
                turn.tool_calls.append(call)
    return out


def session_of(event: Mapping[str, Any]) -> str:
    """Our session id for Claude Code's: ``claude-<its id>`` (its ids are UUIDs)."""
    return f"{SESSION_PREFIX}{event['session_id']}"


def answer(event: Mapping[str, Any], memory: Memory, *, message_limit: int) -> dict[str, Any] | None:
    """What the hook prints for ``event`` (None: nothing), after doing what it asks."""
    name = event.get("hook_event_name")
    workspace = event.get("cwd") if isinstance(event.get("cwd"), str) else None
    project = project_of(workspace)
    if name == "UserPromptSubmit":
        prompt = str(event.get("prompt") or "").strip()
        block = memory.inject(prompt[-message_limit:], project) if prompt else ""
        return {"hookSpecificOutput": {"hookEventName": name, "additionalContext": block}} if block else None
    transcript = event.get("transcript_path")
    if name not in EVENTS or not isinstance(transcript, str) or not Path(transcript).is_file():
        return None
    said = turns(Path(transcript))
    session = session_of(event)
    if name == "Stop":
        if said:
            memory.append_turn(session, len(said), said[-1].record(workspace, message_limit), project)
        return None
    for number, turn in enumerate(said, start=1):  # PreCompact, SessionEnd: all of it, then hand it over
        memory.append_turn(session, number, turn.record(workspace, message_limit), project)
    if said:
        memory.flush(session, project)
    return None


def project_of(workspace: str | None) -> str | None:
    """The project a working directory names (``retrieval.projects``)."""
    if not workspace:
        return None
    from retrieval.projects import project_from_metadata

    return project_from_metadata({"cwd": workspace})
