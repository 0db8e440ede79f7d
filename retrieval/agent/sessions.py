"""A live session on the agent's side: each turn checkpointed as it arrives
(``append_turn``), scanned for what is worth keeping at once (``signals_in``), and the
session's transcript handed to the pipeline (``flush``) at its end, before compaction, or
at such a signal.

Nothing acknowledged is lost: a flush without messages hands over the checkpointed turns,
so after a crash it recovers every turn that was acknowledged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from retrieval import jobs, limits
from retrieval.agent import signals
from retrieval.agent.stores import Messages
from retrieval.agent.view import View
from retrieval.config import MemoryConfig
from retrieval.ignored_files import FileRules, withhold_message, withhold_record
from retrieval.inbox import write_session
from retrieval.names import check_session_id
from retrieval.paths import DataRoot
from retrieval.projects import check_project
from retrieval.schema import ROLES

if TYPE_CHECKING:  # SQLAlchemy loads with the store itself (``MemoryClient.checkpoints``)
    from retrieval.checkpoints import CheckpointStore

# The signal scan reads at most this much of a turn (a pasted log can be megabytes): 8,000
# characters scan in 6 ms at p50 (`memory bench signals`), inside the 10 ms a turn may take.
# What lies beyond is still redacted where it is stored, and extracted at the session's end.
SCANNED_CHARS = 8_000


def checkpoint_store(paths: DataRoot, config: MemoryConfig) -> CheckpointStore:
    """The per-turn checkpoint store of ``paths`` (SQLAlchemy loads here, with the first turn
    checkpointed, not with every ``inject``: 0.3 s of a cold start)."""
    from retrieval.checkpoints import CheckpointStore

    return CheckpointStore.for_root(paths, config)


def signals_in(record: Mapping[str, Any], config: MemoryConfig, pii: tuple[str, ...]) -> list[str]:
    """The signals in a turn as it was sent (``retrieval.agent.signals``; a credential is one
    too): what the user said and the reply, up to ``SCANNED_CHARS``; none when
    ``[service] signal_scan`` is off."""
    if not config.service.signal_scan:
        return []
    said = " ".join(str(record.get(k) or "") for k in ("user_input", "llm_output"))[:SCANNED_CHARS]
    return sorted(signals.scan(said, pii=pii))


def canonical(session_id: str, messages: Messages, *, namespace: str | None, project: str | None,
              now: str, written_by: str | None = None, files: FileRules | None = None) -> list[dict[str, Any]]:
    """The messages as the inbox takes them: ``role`` checked, ``turn``, ``ts``, ``speaker``
    and ``trust`` filled in when missing (a tool's output is untrusted); ``written_by`` (the
    key that hands them over) on each, whatever the caller wrote there; the content of a
    message holding a file ``files`` withholds (its ``file``) replaced by a note."""
    if len(messages) > limits.MESSAGES_MAX:
        raise limits.OverLimit(f"the transcript has {len(messages):,} messages; the limit is "
                               f"{limits.MESSAGES_MAX:,} (MESSAGES_MAX)")
    out = []
    for index, message in enumerate(messages, start=1):
        limits.message(str(message.get("content", "")), f"message {index}")
        role = message.get("role")
        if role not in ROLES:
            raise ValueError(f"message {index}: role {role!r}; expected one of {', '.join(ROLES)}")
        if files is not None and message.get("file"):
            message = withhold_message(message, files)
        out.append({
            "session_id": session_id, "turn": int(message.get("turn", index)), "role": role,
            "content": str(message.get("content", "")), "ts": message.get("ts", now),
            "speaker": message.get("speaker", role),
            "trust": message.get("trust", "untrusted" if role == "tool" else "trusted"),
            **({"namespace": namespace} if namespace else {}),
            **({"project": project} if project else {}),
            **({"written_by": written_by} if written_by else {}),
        })
    return out


def flush(paths: DataRoot, checkpoints: Callable[[], CheckpointStore], view: View, session_id: str,
          messages: Messages | None, *, user: str | None, project: str | None,
          pii: tuple[str, ...], config: MemoryConfig, workspace: str | None = None) -> str | None:
    """Write the session's transcript to the inbox (``MemoryClient.flush_session``): the
    ``messages`` given, else its checkpointed turns, which are then marked flushed. The
    inbox file, or None when it was already there. ``pii``: the kinds to redact
    (``write_session``); ``workspace``: the agent's working directory, whose ignore files
    say which files' text is withheld (``retrieval.ignored_files``)."""
    now = datetime.now(timezone.utc).isoformat()
    session_id = check_session_id(session_id)
    namespace = user or view.namespace
    project = check_project(project) if project is not None else None
    checkpointed = None
    if messages is None:
        checkpointed = checkpoints().replay(view.writer("flush_session"), session_id)
        from retrieval.checkpoints import to_messages

        messages = to_messages(checkpointed)
        project = project or next((c.project for c in checkpointed if c.project), None)
        if not messages:
            raise ValueError(f"flush_session: session {session_id!r} has no checkpointed turn to hand over")
    if not any(str(m.get("content", "")).strip() for m in messages):
        # An empty transcript would only fail the pipeline run that reads it.
        raise ValueError(f"flush_session: the transcript of session {session_id!r} is empty")
    files = FileRules.load(config.privacy.secret_files, workspace)
    written = canonical(session_id, messages, namespace=namespace, project=project, now=now, written_by=view.author,
                        files=files)
    path = write_session(paths.inbox, session_id, written, pii=pii, default_namespace=config.default_namespace)
    if checkpointed:
        checkpoints().mark_flushed(namespace, session_id, max(c.turn for c in checkpointed),
                                   datetime.now(timezone.utc))
    return str(path) if path else None


def append_turn(paths: DataRoot, checkpoints: Callable[[], CheckpointStore], view: View, config: MemoryConfig,
                session_id: str, turn: int, record: dict[str, Any], *, project: str | None, now: datetime,
                pii: tuple[str, ...]) -> dict[str, Any]:
    """Checkpoint one turn (``MemoryClient.append_turn``), durable when this returns; a
    turn with a high signal (``signals.HIGH_SIGNALS``) hands the session so far to the
    pipeline (``flush``) and asks for a ``materialize`` run. A tool call on a file the
    record's ``workspace`` (or ``[privacy] secret_files``) keeps private is checkpointed
    without the file's text (``retrieval.ignored_files``)."""
    session_id = check_session_id(session_id)
    for field in ("user_input", "llm_output"):
        limits.message(str(record.get(field) or ""), f"the turn's {field}")
    record = dict(record)
    workspace = record.pop("workspace", None)  # where the files are; the checkpoint does not keep it
    record = withhold_record(record, FileRules.load(config.privacy.secret_files,
                                                    workspace if isinstance(workspace, str) else None))
    saved = checkpoints().append(view.writer("append_turn"), session_id, turn, record, project=project, now=now)
    found = signals_in(record, config, pii)
    flushed = None
    if signals.HIGH_SIGNALS.intersection(found):
        try:
            flushed = flush(paths, checkpoints, view, session_id, None, user=None, project=project, pii=pii,
                            config=config)
        except ValueError:
            flushed = None  # the turn is checkpointed; a transcript with no words yet waits
        jobs.request_run(paths, "materialize", now)
    return {"session_id": session_id, "turn": saved.turn, "signals": found, "flushed": flushed is not None,
            "checkpointed_at": saved.created_at.isoformat()}


def replayed(checkpoints: CheckpointStore, view: View, session_id: str,
             upto_turn: int | None) -> list[dict[str, Any]]:
    """The session's checkpointed turns in order, up to ``upto_turn``, as a reader gets them."""
    return [{"turn": c.turn, "record": c.record, "project": c.project, "created_at": c.created_at.isoformat(),
             "flushed": c.flushed_at is not None}
            for c in checkpoints.replay(view.writer("replay"), check_session_id(session_id), upto_turn)]
