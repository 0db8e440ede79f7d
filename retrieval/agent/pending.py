"""Read-your-writes: what ``remember`` wrote that the pipeline has not published yet.

``remember`` is a direct write, but the one-writer rule holds (DESIGN principle 1): it
appends a one-turn session to the inbox (``source_format = "remember"``), redacted like
any transcript, and only a pipeline run turns it into an item, through the same gate.
Until then the writer sees it from this overlay: ``MemoryClient.search`` and ``inject``
add the pending writes the query is about, flagged ``[pending]``.

A write leaves the overlay once the pipeline has dealt with it: its session's facts were
extracted and a published items version is newer than them, whether the gate kept it,
merged it into an item already known, or refused it (``memory_assets.lib.items``).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np

from retrieval import credentials, limits, published
from retrieval.agent.rewrite import keywords
from retrieval.agent.search import Hit, to_hit
from retrieval.agent.view import View
from retrieval.ids import PENDING, REMEMBER_PREFIX, digits
from retrieval.inbox import write_session
from retrieval.moments import parse_utc
from retrieval.paths import DataRoot
from retrieval.projects import check_project
from retrieval.schema import AGENT_STATED, agent_written
from retrieval.text import QUERY_STOPWORDS

PREFIX = REMEMBER_PREFIX
SESSIONS_SHOWN = 20  # flushed sessions read for pending lines at most (the newest names first)
TURNS_SHOWN = 50  # a flushed session's user turns shown pending at most (its last)
# A pending line's short id: "p:" and six digits of its id's hash (``retrieval.ids.digits``),
# so a model can cite it, correct it or forget it before the pipeline stores it.
REF = "p:"


def is_pending(item_id: str) -> bool:
    """An id of a write not published yet (``pending:remember-…``) or its short id (``p:…``)."""
    ref = item_id.strip().strip("[]").strip()
    return ref.startswith(f"{PENDING}:") or (ref.startswith(REF) and ref[len(REF):].isdigit())


def pending_ref(item_id: str) -> str:
    """The short id of the pending write ``item_id`` (``p:482193``)."""
    return REF + digits(item_id)[:6]


@dataclass(frozen=True)
class Pending:
    """One write the pipeline has not published yet."""

    session_id: str
    namespace: str
    content: str
    written_at: datetime
    project: str | None = None
    written_by: str | None = None  # the key that wrote it (``retrieval.schema.author``)
    turn: int | None = None  # a user's turn of a flushed session (None: a ``remember``)

    @property
    def id(self) -> str:
        return f"{PENDING}:{self.session_id}" + ("" if self.turn is None else f"#{self.turn}")

    @property
    def ref(self) -> str | None:
        """The short id a model can cite and correct: a ``remember``'s. A flushed session's
        turn has none: what the pipeline makes of it (its facts) is what gets corrected."""
        return pending_ref(self.id) if self.turn is None else None

    def as_row(self) -> dict:
        return {"id": self.id, "content": self.content, "category": PENDING,
                "kind": "fact" if self.turn is None else "turn", "status": PENDING,
                "namespace": self.namespace, "project": self.project, "scope": "project" if self.project else "global",
                "importance": 0.5, "confidence": 1.0, "source_trust": "trusted",
                "provenance": AGENT_STATED if agent_written(self.written_by) else "user_stated",
                "session_id": self.session_id, "source_session": self.session_id, "created_at": self.written_at,
                "source_resource_ids": [], "source_turn_ids": [], "ref": self.ref}

    def hit(self, relevance: float) -> Hit:
        return to_hit(self.as_row(), relevance, relevance)


def write(paths: DataRoot, view: View, content: str, *, now: datetime, pii: Sequence[str],
          project: str | None = None) -> Pending:
    """Append ``content`` (its whitespace collapsed) as a remembered turn of its own
    session, in the namespace ``view``'s writes go to (``View.writer``); returns it as the
    overlay will show it (redacted, as stored). ``project``: what it is about, when it
    only matters there (``retrieval.projects``). A ``ValueError`` when the content is
    empty, the view has no namespace to write to, or ``project`` is not a project name."""
    if not (content := " ".join(str(content).split())):
        raise ValueError("remember: the content is empty")
    limits.memory(content, "remember: the content")
    namespace = view.writer("remember")
    project = check_project(project) if project is not None else None
    session_id = f"{PREFIX}{uuid.uuid4().hex[:20]}"
    message = {"session_id": session_id, "turn": 1, "role": "user", "content": content, "ts": now.isoformat(),
               "speaker": "user", "trust": "trusted", "namespace": namespace, "source_format": "remember",
               **({"project": project} if project else {}), **({"written_by": view.author} if view.author else {})}
    write_session(paths.inbox, session_id, [message], pii=pii, default_namespace=namespace)  # it names its own
    return Pending(session_id, namespace, credentials.redact(content, pii=tuple(pii)), now, project, view.author)


class Overlay:
    """The pending writes under a data root, read from the inbox: each ``remember``, and the
    user's turns of each flushed session (``flush_session``, ``memory ingest``) until the
    pipeline has made its facts. A session the pipeline has dealt with is remembered as
    done and never read again."""

    def __init__(self, paths: DataRoot, embed: Callable[[list[str]], np.ndarray], default_namespace: str,
                 served: Callable[[], published.Pointer | None] | None = None):
        # ``served``: the version the reader searches (``Stores.current``), which may be
        # seconds older than the pointer on the store: a session stays pending until the
        # version searched holds it, or it would be in neither for those seconds.
        self.paths, self._embed, self.default_namespace, self._served = paths, embed, default_namespace, served
        self._done: set[str] = set()
        self._read: dict[str, list[Pending] | None] = {}
        self._vectors: dict[str, np.ndarray] = {}
        self._listed: tuple[tuple[int, float] | None, list[str]] = (None, [])

    def _published_at(self) -> float:
        """When the version searched was published (the store's pointer without ``served``)."""
        if self._served is not None:
            pointer = self._served()
            if pointer is None:
                return float("-inf")
            if pointer.published_at:
                return parse_utc(pointer.published_at).timestamp()
        try:
            when = published.published_at(self.paths)
        except OSError:
            return float("-inf")
        return float("-inf") if when is None else when

    def _load(self, session_id: str) -> list[Pending] | None:
        """A remember's write, or a flushed session's user turns (trusted, the last
        ``TURNS_SHOWN``); None: being written, read again next time."""
        folder = self.paths.inbox / session_id  # a folder listed from the inbox, not a caller's name
        lines: list[dict] = []
        for file in sorted(folder.glob("*.jsonl")):
            try:
                lines += [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
            except (OSError, ValueError):
                return None
            if session_id.startswith(PREFIX):
                break  # a remember is one line
        if not lines:
            return None
        if session_id.startswith(PREFIX):
            line = lines[0]
            return [Pending(session_id, str(line.get("namespace") or ""), str(line["content"]), parse_utc(line["ts"]),
                            line.get("project"), line.get("written_by"))]
        turns: dict[tuple[int, str], Pending] = {}
        for n, line in enumerate(lines):
            content = " ".join(str(line.get("content") or "").split())
            if line.get("role") != "user" or line.get("trust", "trusted") != "trusted" or not content:
                continue
            turn = int(line["turn"]) if isinstance(line.get("turn"), int) else n
            try:
                when = parse_utc(str(line.get("ts")))
            except ValueError:
                when = datetime.fromtimestamp(0, tz=timezone.utc)
            turns[(turn, content)] = Pending(session_id, str(line.get("namespace") or self.default_namespace),
                                             content[:limits.MEMORY_MAX_CHARS], when, line.get("project"),
                                             line.get("written_by"), turn)
        return sorted(turns.values(), key=lambda p: p.turn or 0)[-TURNS_SHOWN:]

    def _folders(self, published_at: float) -> list[str]:
        """The inbox's sessions, listed again only when the inbox (a new session) or the
        published version changed: ``inject`` asks every call. Remembers first, then at
        most ``SESSIONS_SHOWN`` flushed sessions."""
        try:
            # A folder's time changes when a session is added; an object store has no
            # folders, so there the listing is at most a second old.
            changed = self.paths.inbox.stat().st_mtime_ns if self.paths.is_local else int(time.monotonic())
            key = (changed, published_at)
        except FileNotFoundError:
            return []
        if key != self._listed[0]:
            # glob, not iterdir: an object store has no folder to list until a session is in it
            names = sorted((f.name for f in self.paths.inbox.glob("*") if not f.name.startswith(".")), reverse=True)
            remembered = [n for n in names if n.startswith(PREFIX)]
            # A flushed session is pending until extraction has read it (the run that extracts
            # it publishes it): one listing of the extracted sessions, not a look per session.
            facts = self.paths.extracted_facts
            extracted = {f.stem for f in facts.glob("*.parquet")} if facts.exists() else set()
            if self.paths.is_local:
                # Extracted after the version searched was published: not in it yet, so pending
                # (a stat each, once: a session found published is done and never looked at again).
                self._done |= {n for n in extracted - self._done
                               if self.paths.session_file(facts, n).stat().st_mtime <= published_at}
                extracted &= self._done
            flushed = [n for n in names if not n.startswith(PREFIX) and n not in extracted]
            self._listed = (key, remembered + flushed[:SESSIONS_SHOWN])
        return self._listed[1]

    def pending(self, view: View | None = None) -> list[Pending]:
        """The writes ``view`` owns (None: every write) not published yet, newest first."""
        published_at = self._published_at()
        out: list[Pending] = []
        for session_id in self._folders(published_at):
            if session_id in self._done:
                continue
            facts = self.paths.session_file(self.paths.extracted_facts, session_id)
            if facts.exists() and facts.stat().st_mtime <= published_at:
                self._done.add(session_id)
                self._read.pop(session_id, None)
                continue
            if self._read.get(session_id) is None:
                self._read[session_id] = self._load(session_id)
            out += [p for p in self._read[session_id] or () if view is None or view.owns(p.as_row())]
        return sorted(out, key=lambda p: p.written_at, reverse=True)

    def matching(self, query: str, query_vector: Callable[[], np.ndarray | None], view: View, *,
                 floor: float, limit: int = 3) -> list[Hit]:
        """The pending writes of ``view`` that ``query`` is about: a cosine of at least
        ``floor`` to the query, or a content word in common; at most ``limit``, the closest
        first. For a reader of a project, the writes of no project and of that one."""
        words = {w.lower() for w in keywords(query)} - QUERY_STOPWORDS

        def shares(p: Pending) -> bool:
            return bool(words & ({w.lower() for w in keywords(p.content)} - QUERY_STOPWORDS))

        # A remember is compared by meaning too; a session's turn (many of them, most chatter)
        # only when it shares a content word with the query.
        found = [p for p in self.pending(view) if view.in_project(p.as_row()) and (p.turn is None or shares(p))]
        if not found:
            return []
        missing = list(dict.fromkeys(p.content for p in found if p.content not in self._vectors))
        if missing:
            for text, vector in zip(missing, self._embed(missing)):
                self._vectors[text] = vector
        vector = query_vector()  # asked for only when something is pending
        hits = []
        for p in found:
            similarity = float(self._vectors[p.content] @ vector) if vector is not None else 0.0
            if similarity >= floor or shares(p):
                hits.append(p.hit(max(similarity, 0.0)))
        return sorted(hits, key=lambda h: -h.relevance)[:limit]

    def resolve(self, ref: str, view: View) -> Pending | None:
        """The write of ``view`` that ``ref`` names: its pending id or its short id (``p:…``)."""
        ref = ref.strip().strip("[]").strip()
        return next((p for p in self.pending(view) if p.ref is not None and ref in (p.id, p.ref)), None)

    def get(self, pending_id: str) -> Pending | None:
        return next((p for p in self.pending() if p.id == pending_id), None)
