"""Reading transcripts: canonical JSONL, OpenAI chat JSON and LoCoMo conversations.

Every format becomes the same canonical message dict (``session_id``, ``turn``,
``role``, ``content``, ``ts``, ``speaker``, ``trust``, ``external_id``, ``namespace``,
``source_format``, ``project``). A bad line becomes a ``TranscriptError`` naming the
file and line; the good lines still count.

A session's ``project`` is the one a message names (``"project": "atlas-web"``), else
the one its metadata points to (``cwd``, ``repository``… on a message, or on an OpenAI
document: ``retrieval.projects.project_from_metadata``); every message of the session
without one of its own gets it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from typing import Any

from memory_assets.lib.ingest.errors import TranscriptError
from retrieval.paths import location

from retrieval.moments import parse_utc, utc
from retrieval.names import InvalidName, check_namespace
from retrieval.projects import check_project, project_from_metadata
from retrieval.limits import MESSAGE_MAX_CHARS
from retrieval.schema import ROLES, SOURCE_FORMATS, TRUST

FORMATS = ("jsonl", "openai", "locomo")
_SESSION_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# OpenAI roles that mean the same as ours.
_ROLE_ALIASES = {"developer": "system", "function": "tool"}
# Who wrote a line through a key (``retrieval.schema.author``): role, agent name, key id.
_AUTHOR = re.compile(r"(?:user|agent):[A-Za-z0-9._@-]{1,128}:[0-9a-f]{12}")


@dataclass
class ParsedTranscript:
    path: Path
    format: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    errors: list[TranscriptError] = field(default_factory=list)
    # session id → the project its metadata points to (the first one found)
    detected: dict[str, str] = field(default_factory=dict)

    def detect(self, session_id: str, metadata: Any) -> None:
        """Note the project ``metadata`` (a message, or the document) points to, if the
        session has none noted yet."""
        if isinstance(metadata, dict) and session_id not in self.detected and (found := project_from_metadata(metadata)):
            self.detected[session_id] = found

    def settle_projects(self) -> ParsedTranscript:
        """Give each message without a project its session's: the first one a message
        names, else the one the session's metadata points to (an explicit name wins)."""
        named: dict[str, str] = {}
        for message in self.messages:
            if message["project"]:
                named.setdefault(message["session_id"], message["project"])
        for message in self.messages:
            if not message["project"]:
                message["project"] = named.get(message["session_id"]) or self.detected.get(message["session_id"])
        return self

    def sessions(self) -> dict[str, list[dict[str, Any]]]:
        grouped: dict[str, list[dict[str, Any]]] = {}
        for message in self.messages:
            grouped.setdefault(message["session_id"], []).append(message)
        return grouped


def safe_session_id(raw: str) -> str:
    """Session ids become partition keys and folder names: keep them to [A-Za-z0-9._-]."""
    cleaned = _SESSION_ID_UNSAFE.sub("-", raw.strip()).strip("-._")
    return cleaned[:120] or "session"


def parse_ts(value: Any) -> datetime:
    """An ISO-8601 string or epoch seconds; naive times are taken as UTC."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, tz=timezone.utc)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"timestamp {value!r} is not an ISO-8601 string")
    return parse_utc(value)


def _message(path: Path, line: int | None, raw: Any, *, max_bytes: int,
             session_default: str | None, turn_default: int,
             ts_default: datetime | None) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise TranscriptError(path, line, f"expected a JSON object, got {type(raw).__name__}")
    role = raw.get("role")
    if role is None:
        raise TranscriptError(path, line, 'missing "role"')
    role = _ROLE_ALIASES.get(role, role)
    if role not in ROLES:
        raise TranscriptError(path, line, f'"role" is {role!r}; expected one of {", ".join(ROLES)}')
    content = raw.get("content")
    if isinstance(content, list):  # OpenAI content parts
        content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    if content is None:
        raise TranscriptError(path, line, 'missing "content"')
    if not isinstance(content, str):
        raise TranscriptError(path, line, f'"content" must be a string, got {type(content).__name__}')
    if len(content) > MESSAGE_MAX_CHARS:
        raise TranscriptError(path, line, f"message is {len(content):,} characters; the limit is "
                                          f"{MESSAGE_MAX_CHARS:,} (MESSAGE_MAX_CHARS, as at every door)")
    size = len(content.encode("utf-8"))
    if size > max_bytes:
        raise TranscriptError(path, line, f"message is {size:,} bytes; the limit is {max_bytes:,} (ingest.max_message_bytes)")
    session = raw.get("session_id", session_default)
    if session is None or (isinstance(session, str) and not session.strip()):
        raise TranscriptError(path, line, 'missing "session_id"')
    turn = raw.get("turn", turn_default)
    if isinstance(turn, bool) or not isinstance(turn, int) or turn < 0:
        raise TranscriptError(path, line, f'"turn" must be a non-negative integer, got {turn!r}')
    if "ts" in raw:
        try:
            ts = parse_ts(raw["ts"])
        except (ValueError, OverflowError) as exc:
            raise TranscriptError(path, line, f'"ts" does not parse: {exc}') from None
    elif ts_default is not None:
        ts = ts_default
    else:
        raise TranscriptError(path, line, 'missing "ts"')
    trust = raw.get("trust", "untrusted" if role == "tool" else "trusted")
    if trust not in TRUST:
        raise TranscriptError(path, line, f'"trust" is {trust!r}; expected trusted or untrusted')
    speaker = raw.get("speaker") or raw.get("name") or role
    source_format = raw.get("source_format", "jsonl")
    if source_format not in SOURCE_FORMATS:
        raise TranscriptError(path, line, f'"source_format" is {source_format!r}; expected one of {", ".join(SOURCE_FORMATS)}')
    namespace = raw.get("namespace")
    if namespace is not None:
        try:
            namespace = check_namespace(namespace.strip() if isinstance(namespace, str) else namespace)
        except InvalidName as exc:
            raise TranscriptError(path, line, f'"namespace" (the user or agent): {exc}') from None
    written_by = raw.get("written_by")
    if written_by is not None and not (isinstance(written_by, str) and _AUTHOR.fullmatch(written_by)):
        raise TranscriptError(path, line, f'"written_by" is {written_by!r}; expected user|agent:<agent>:<key id>')
    project = raw.get("project")
    if project is not None:
        try:
            project = check_project(project)
        except ValueError as exc:
            raise TranscriptError(path, line, f'"project": {exc}') from None
    return {
        "session_id": safe_session_id(str(session)),
        "turn": turn,
        "role": role,
        "content": content,
        "ts": ts.isoformat(),
        "speaker": str(speaker),
        "trust": trust,
        "external_id": raw.get("external_id"),
        "namespace": namespace.strip() if namespace else None,
        "source_format": source_format,
        "project": project,
        "written_by": written_by,
        # A message holding a file's text, and the folder the agent worked in: read once
        # by the intake (``retrieval.ignored_files``), never stored.
        **{k: raw[k] for k in ("file", "workspace", "cwd") if isinstance(raw.get(k), str)},
    }


def _parse_jsonl(path: Path, data: bytes, max_bytes: int) -> ParsedTranscript:
    result = ParsedTranscript(path, "jsonl")
    for number, raw_line in enumerate(data.split(b"\n"), start=1):
        if not raw_line.strip():
            continue
        try:
            text = raw_line.decode("utf-8")
        except UnicodeDecodeError:
            result.errors.append(TranscriptError(path, number, "not UTF-8 text (binary data?)"))
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            result.errors.append(TranscriptError(path, number, f"invalid JSON ({exc.msg}, column {exc.colno}); truncated line?"))
            continue
        try:
            message = _message(path, number, obj, max_bytes=max_bytes,
                               session_default=None, turn_default=number, ts_default=None)
        except TranscriptError as exc:
            result.errors.append(exc)
            continue
        result.messages.append(message)
        result.detect(message["session_id"], obj)
    return result.settle_projects()


def _parse_openai(path: Path, doc: Any, max_bytes: int, mtime: datetime) -> ParsedTranscript:
    result = ParsedTranscript(path, "openai")
    session = path.stem
    messages = doc
    named: str | None = None  # the document's own "project", for every message without one
    if isinstance(doc, dict):
        session = doc.get("session_id", session)
        messages = doc.get("messages")
        if doc.get("project") is not None:
            try:
                named = check_project(doc["project"])
            except ValueError as exc:
                result.errors.append(TranscriptError(path, None, f'"project": {exc}'))
                return result
    if not isinstance(messages, list):
        result.errors.append(TranscriptError(path, None, 'OpenAI format needs a list of messages (or {"messages": [...]})'))
        return result
    for index, raw in enumerate(messages, start=1):
        try:
            if isinstance(raw, dict):
                raw = {**raw, "turn": raw.get("turn", index)}
                if named and "project" not in raw:
                    raw["project"] = named
            message = _message(path, None, raw, max_bytes=max_bytes, session_default=session,
                               turn_default=index, ts_default=mtime)
        except TranscriptError as exc:
            result.errors.append(TranscriptError(path, None, f"message {index}: {exc.message}"))
            continue
        result.messages.append(message)
        result.detect(message["session_id"], raw)
        result.detect(message["session_id"], doc)
    return result.settle_projects()


_LOCOMO_SESSION = re.compile(r"^session_(\d+)$")


def parse_locomo_time(value: str) -> datetime:
    """LoCoMo writes times like '1:56 pm on 8 May, 2023'."""
    return utc(datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y"))


def _parse_locomo(path: Path, doc: dict[str, Any], max_bytes: int) -> ParsedTranscript:
    result = ParsedTranscript(path, "locomo")
    conv = doc.get("conversation", doc)
    sample = safe_session_id(str(doc.get("sample_id") or path.stem))
    keys = sorted((int(m.group(1)), k) for k in conv if (m := _LOCOMO_SESSION.match(k)))
    for number, key in keys:
        turns = conv[key]
        if not turns:
            continue
        try:
            ts = parse_locomo_time(conv[f"{key}_date_time"])
        except (KeyError, ValueError) as exc:
            result.errors.append(TranscriptError(path, None, f"{key}_date_time: {exc}"))
            continue
        for index, turn in enumerate(turns, start=1):
            text = turn.get("text", "")
            if turn.get("blip_caption"):
                text = f"{text} [shared image: {turn['blip_caption']}]"
            raw = {"session_id": f"{sample}-s{number}", "turn": index, "role": "user",
                   "speaker": turn.get("speaker"), "content": text, "external_id": turn.get("dia_id")}
            try:
                result.messages.append(_message(path, None, raw, max_bytes=max_bytes, session_default=None,
                                                turn_default=index, ts_default=ts))
            except TranscriptError as exc:
                result.errors.append(TranscriptError(path, None, f"{key} turn {turn.get('dia_id', index)}: {exc.message}"))
    return result


def detect_format(doc: Any) -> str | None:
    if isinstance(doc, dict) and ("speaker_a" in doc or "conversation" in doc):
        return "locomo"
    if isinstance(doc, list) or (isinstance(doc, dict) and "messages" in doc):
        return "openai"
    return None


def parse_transcript(path: str | Path, fmt: str = "auto", *, max_message_bytes: int = 1_000_000) -> ParsedTranscript:
    """Parse one transcript file (see ``_parse``); a file that yields no message and no
    error (a forced ``--format`` that does not fit it) is an error too, never a silent 0."""
    parsed = _parse(path, fmt, max_message_bytes=max_message_bytes)
    if not parsed.messages and not parsed.errors:
        raise TranscriptError(path, None, f"no messages read as {parsed.format} "
                                          f"({_EXPECTED[parsed.format]}); wrong --format? try --format auto")
    return parsed


_EXPECTED = {
    "jsonl": "one JSON object per line with role and content",
    "openai": 'a JSON list of {role, content} messages, or {"messages": [...]}',
    "locomo": "a JSON object with session_N lists and session_N_date_time",
}


def _parse(path: str | Path, fmt: str = "auto", *, max_message_bytes: int = 1_000_000) -> ParsedTranscript:
    """Parse one transcript file; problems are collected, never raised, except for the file as a whole.

    Args:
        path: the file.
        fmt: ``auto``, ``jsonl``, ``openai`` or ``locomo``.
        max_message_bytes: a longer message is refused with an error naming its line.
    """
    path = location(path)
    if fmt != "auto" and fmt not in FORMATS:
        raise TranscriptError(path, None, f"unknown format {fmt!r}; use auto, {', '.join(FORMATS)}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TranscriptError(path, None, f"cannot read file ({exc.strerror})") from None
    data = data.removeprefix(b"\xef\xbb\xbf")  # a UTF-8 byte-order mark (Windows editors write one)
    if not data.strip():
        raise TranscriptError(path, None, "file is empty")
    if fmt == "jsonl":
        return _parse_jsonl(path, data, max_message_bytes)
    doc: Any = None
    if fmt in ("auto", "openai", "locomo"):
        try:
            doc = json.loads(data.decode("utf-8"))
        except UnicodeDecodeError:
            if fmt != "auto":
                raise TranscriptError(path, None, "not UTF-8 text (binary data?)") from None
        except json.JSONDecodeError as exc:
            if fmt != "auto":
                raise TranscriptError(path, exc.lineno, f"invalid JSON ({exc.msg})") from None
    chosen = fmt if fmt != "auto" else detect_format(doc)
    mtime = datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc)
    if chosen == "locomo":
        if not isinstance(doc, dict):
            raise TranscriptError(path, None, "LoCoMo format needs a JSON object with session_N keys")
        return _parse_locomo(path, doc, max_message_bytes)
    if chosen == "openai":
        return _parse_openai(path, doc, max_message_bytes, mtime)
    first = data.lstrip()[:1]
    if doc is None and first == b"{":
        return _parse_jsonl(path, data, max_message_bytes)
    if isinstance(doc, dict) and doc.keys() & {"role", "content", "session_id", "turn"}:
        return _parse_jsonl(path, data, max_message_bytes)  # a one-line JSONL file
    raise TranscriptError(path, None, "cannot tell the format (expected canonical JSONL, OpenAI chat JSON or LoCoMo JSON); pass --format")
