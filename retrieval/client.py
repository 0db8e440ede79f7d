"""``MemoryClient``: what an agent imports to read its memory and hand over transcripts."""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any


from retrieval import credentials, events, jobs, signals, trust
from retrieval.checkpoints import CheckpointStore
from retrieval.config import MemoryConfig, load_config
from retrieval.disabled import is_disabled
from retrieval.embeddings import Embedder
from retrieval.inbox import write_session
from retrieval.injection import Injection
from retrieval.lessons import lessons
from retrieval.options import RetrievalOptions
from retrieval.paths import DataRoot
from retrieval.pending import PENDING, Overlay
from retrieval.pending import write as write_pending
from retrieval.projects import check_project
from retrieval.retrieve import Messages, Stores, View, block, rank, retrieve
from retrieval.rewrite import CONTEXT_MESSAGES, keywords
from retrieval.text import QUERY_STOPWORDS
from retrieval.spans import timed
from retrieval.schema import ROLES
from retrieval.search import Hit, to_hit
from retrieval.store import INSIGHTS_TABLE, ItemStore

# The signal scan reads at most this much of a turn (a pasted log can be megabytes): 8,000
# characters scan in 6 ms at p50 (`memory bench signals`), inside the 10 ms a turn may take.
# What lies beyond is still redacted where it is stored, and extracted at the session's end.
SCANNED_CHARS = 8_000
# Where a reply's sentences end, for the paraphrase test of record_response.
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def _redacted_context(context: str | Messages, pii: tuple[str, ...]) -> str | Messages:
    """The part of ``context`` retrieval reads (the last ``CONTEXT_MESSAGES`` messages),
    with credentials and personal data redacted, as the agent handed it over: the query,
    its rewrite and the ``injected`` event are all derived from it, so a secret in the
    conversation never reaches a rewrite (which splits ``a_b`` into ``a b``, past any
    rule), the LLM or the event log."""
    if isinstance(context, str):
        return credentials.redact(context, pii=pii)
    return [{**m, "content": credentials.redact(str(m.get("content", "")), pii=pii)}
            for m in list(context)[-CONTEXT_MESSAGES:]]


def _public(row: dict[str, Any], short_id: str | None = None) -> dict[str, Any]:
    """An item row as a reader gets it: no vector, times as ISO strings, its short id."""
    out = {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in row.items() if k != "vector"}
    if short_id:
        out["ref"] = short_id
    return out


class MemoryClient:
    """Read the published memory under a data root; append transcripts and feedback events.

    Args:
        data_root: the pipeline's data root (default ``MEMORY_DATA_ROOT`` or ``data/``).
        config_path: a TOML file overriding ``defaults.toml`` (default ``MEMORY_CONFIG``).
        options: which retrieval stages run (all by default).
        namespace: the user or agent whose memory this is (``flush_session(user=…)``);
            default ``[pipeline] namespace``, where sessions handed over without a user
            go. ``"*"`` reads every namespace (an operator's view, never an agent's).
        scopes: only items with these scopes (``global``, ``project``, ``session``).
    """

    def __init__(self, data_root: str | os.PathLike[str] | None = None, *, config_path: str | None = None,
                 options: RetrievalOptions | None = None, namespace: str | None = None,
                 scopes: Sequence[str] | None = None):
        self.paths = DataRoot.resolve(data_root)
        self.config: MemoryConfig = load_config(config_path)
        self.options = options or RetrievalOptions()
        self._pii = credentials.pii_from_config(self.config)
        self.view = View.of(self.config, namespace, scopes)
        self.namespace, self.scopes = self.view.namespace, self.view.scopes
        self.stores = Stores(self.paths, self.config)
        self.store = self.stores.store
        self._rows = self.stores.rows
        self.overlay = Overlay(self.paths, lambda texts: self.embedder.embed(texts))
        self._checkpoints: CheckpointStore | None = None
        self.last_tier: str = "none"

    def scoped(self, namespace: str | None, scopes: Sequence[str] | None = None, *,
               shared: Sequence[str] = ()) -> "MemoryClient":
        """This client for another reader: ``namespace`` and ``scopes`` as in the
        constructor, and ``shared`` namespaces it may read too, ranked × ``[service]
        shared_penalty`` (another agent's memory is off-domain for this one). The copy
        shares the open stores, the model and the pending overlay: a service holds one
        client and serves each caller through a scoped copy."""
        other = copy.copy(self)
        other.view = View.of(self.config, namespace, scopes).sharing(shared, float(self.config.service.shared_penalty))
        other.namespace, other.scopes = other.view.namespace, other.view.scopes
        other.last_tier = "none"
        return other

    # -- reading -----------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        return self.stores.embedder

    def search(self, query: str, k: int = 10, *, now: datetime | None = None,
               as_of: datetime | None = None, project: str | None = None) -> list[Hit]:
        """The ``k`` best items for ``query`` above the relevance floor: vector +
        full-text, fused and scored; active items first, then archived and cold ones
        while fewer than ``k`` were found (their ``status`` says which).

        Args:
            query: what to look for (searched as given; ``inject`` rewrites first).
            k: how many items.
            now: the clock for decay (default: now).
            as_of: what was true on that day: items valid then, including those a later
                fact has superseded since (default: what is true now).
            project: the project the agent works on: global items and that project's,
                never another project's (default: every item).
        """
        if self.disabled():  # `memory disable`: nothing is found
            return []
        hits = rank(self.stores, self.view.at(as_of).for_project(project), self.config, self.options, query, k,
                    now or datetime.now(timezone.utc))[0]
        if as_of is not None:
            return hits
        pending = self._pending_for(query, project)
        return (pending + [h for h in hits])[:k] if pending else hits

    def _pending_for(self, query: str, project: str | None = None) -> list[Hit]:
        """What this reader wrote with ``remember`` that the pipeline has not published
        yet and ``query`` is about (read-your-writes; ``retrieval.pending``), for a reader
        of ``project`` (None: any)."""
        floor = float(self.config.injection.min_similarity)
        return self.overlay.matching(query, lambda: self.stores.embed(query) if query.strip() else None,
                                     self.namespace, floor=floor, project=project)

    def inject(self, context: str | Messages, *, max_items: int | None = None, token_budget: int | None = None,
               now: datetime | None = None, budget_aware: bool | None = None, session_id: str | None = None,
               record: bool = True, as_of: datetime | None = None, project: str | None = None) -> Injection:
        """The memory block for the agent's next prompt.

        Args:
            context: the recent conversation (messages with ``content``; the last 5 count)
                or plain text.
            max_items: hard cap on lines (default 10; 5 in budget-aware mode).
            token_budget: hard cap on the block's tokens (default from config).
            now: the clock, for ages, decay and staleness.
            budget_aware: at most 5 items and no costly paths (LLM rewrite, tier 1).
            session_id: recorded on the ``injected`` event.
            record: write the ``injected`` event (evals turn it off).
            as_of: inject what was true on that day (tier 2 only: summaries are of today).
            project: the project the agent works on: global memories and that project's,
                never another project's (default: every memory).
        Returns:
            the block text, the items in it, the tier that answered and the tokens used.
        """
        with timed("inject"):
            return self._inject(context, max_items=max_items, token_budget=token_budget, now=now,
                                budget_aware=budget_aware, session_id=session_id, record=record, as_of=as_of,
                                project=project)

    def _inject(self, context: str | Messages, *, max_items: int | None, token_budget: int | None,
                now: datetime | None, budget_aware: bool | None, session_id: str | None, record: bool,
                as_of: datetime | None, project: str | None) -> Injection:
        if self.disabled():  # `memory disable`: nothing is injected
            return Injection(text="", tier="disabled")
        now = now or datetime.now(timezone.utc)
        context = _redacted_context(context, self._pii)
        found = retrieve(context, self.stores, self.config, self.options, now,
                         view=self.view.at(as_of).for_project(project), max_items=max_items, budget_aware=budget_aware)
        if as_of is None and (pending := self._pending_for(found.query.text, project)):
            found.hits = pending + found.hits
            found.flags.update({h.id: ["[pending]"] for h in pending})
        injection = block(found, self.config, now, token_budget=token_budget)
        self.last_tier = injection.tier
        kept = injection.items
        # Every tier records what it injected: a summary line counts for the items it cites.
        injected = list(dict.fromkeys(i for h in kept for i in trust.item_ids(h)))
        if record and injected:
            events.record(self.paths.events, "injected", injected, now, session_id=session_id,
                          payload={"tier": self.last_tier, "query": found.query.text})
        return injection

    # -- writing now ------------------------------------------------------------------------

    def remember(self, content: str, *, project: str | None = None, now: datetime | None = None) -> dict[str, Any]:
        """Store ``content`` as a memory, as written: a direct write (koshi's ``memory_store``).

        It is appended to the inbox like a transcript, so credentials and configured
        personal data are redacted before anything is written, and the next pipeline
        run passes it through the same gate as extracted facts. Until that run publishes
        it, this client's ``search`` and ``inject`` show it flagged ``[pending]``
        (read-your-writes). Returns the pending row (``id`` = ``pending:<session>``).
        """
        text = " ".join(str(content).split())
        if not text:
            raise ValueError("remember: the content is empty")
        if not self.namespace:
            raise ValueError("remember needs a namespace (this client reads every namespace)")
        written = write_pending(self.paths, self.namespace, text, now=now or datetime.now(timezone.utc),
                                pii=self._pii, project=project)
        return written.as_row()

    def get(self, item_id: str) -> dict[str, Any]:
        """One memory by id, short id (``m:4821``) or pending id, every status; raises
        ``ItemStore.DoesNotExist`` for an id this reader may not see."""
        if item_id.startswith(f"{PENDING}:"):
            found = self.overlay.get(item_id)
            if found is None or (self.namespace and found.namespace != self.namespace):
                raise ItemStore.DoesNotExist(f"no pending write with id {item_id!r}")
            return found.as_row()
        full = self._known(item_id)
        return _public(self._rows.rows([full])[full], self._rows.short_ids.short(full))

    def list(self, *, scope: str | None = None, project: str | None = None, category: str | None = None,
             kind: str | None = None, status: str | None = "active", tag: str | None = None,
             text: str | None = None, limit: int = 100, offset: int = 0) -> list[dict[str, Any]]:
        """Memories matching every filter given, newest first: ``status`` (default active;
        None: every status; ``pending``: writes not yet published), ``scope``, ``project``
        (only that project's memories: add ``scope="global"`` for the ones every project
        sees), ``category``, ``kind``, a ``tag``, and ``text`` (a case-insensitive substring)."""
        import polars as pl

        rows: list[dict[str, Any]] = []
        if status in (None, PENDING):
            rows += [p.as_row() for p in self.overlay.pending(self.namespace)
                     if project in (None, p.project) and (not text or text.lower() in p.content.lower())]
        self._rows.refresh()
        frame = self._rows.frame
        if status != PENDING and frame is not None and frame.height:
            wanted = [pl.lit(True)]
            if self.namespace:
                wanted.append(pl.col("namespace") == self.namespace)
            for column, value in (("status", status), ("scope", scope), ("category", category), ("kind", kind),
                                  ("project", project)):
                if value is not None and column in frame.columns:
                    wanted.append(pl.col(column) == value)
            if tag:
                wanted.append(pl.col("tags").list.contains(tag.lower()))
            if text:
                wanted.append(pl.col("content").str.to_lowercase().str.contains(text.lower(), literal=True))
            chosen = frame.filter(pl.all_horizontal(wanted)).sort("created_at", descending=True, nulls_last=True)
            short = self._rows.short_ids
            rows += [_public(r, short.short(r["id"])) for r in chosen.slice(0, offset + limit).to_dicts()]
        return rows[offset:offset + limit]

    def history(self, item_id: str) -> dict[str, Any]:
        """Where a memory came from and what happened to it: the item, the turns it was
        read from (``sources``), the items it replaced or that replaced it, and every
        feedback event about it still on record (``events``), oldest first."""
        item = self.get(item_id)
        if item["status"] == PENDING:
            return {"item": item, "sources": [], "events": [], "related": []}
        from retrieval.lineage import events_about, related_items, sources_of

        return {"item": item, "sources": sources_of(self.paths, item.get("source_resource_ids") or []),
                "events": events_about(self.paths, item["id"]),
                "related": [_public(r) for r in related_items(self._rows.frame, item)]}

    # -- feedback (append-only events) ----------------------------------------------------

    def _known(self, item_id: str) -> str:
        """The published item ``item_id`` names: a full id or a short one from the block
        (``m:4821``). Raises ``ItemStore.DoesNotExist`` (with the data root) or
        ``retrieval.ids.AmbiguousId``."""
        self._rows.refresh()
        found = self._rows.short_ids.resolve(item_id)
        row = self._rows.rows([found]).get(found) if found is not None else None
        # Another namespace's item is not there for this reader: the same answer as an
        # unknown id, so a caller learns nothing about what others hold.
        if row is None or (self.namespace and row.get("namespace") != self.namespace):
            raise ItemStore.DoesNotExist(f"no published item with id {item_id!r} under {self.paths.root}")
        return found

    def _event(self, type: str, item_id: str, now: datetime | None, payload: dict[str, Any] | None = None) -> str:
        found = self._known(item_id)
        events.record(self.paths.events, type, [found], now or datetime.now(timezone.utc), payload=payload)
        return found

    def reinforce(self, item_id: str, *, now: datetime | None = None) -> str:
        """The user confirmed this memory: the one thing that counts as a reference.

        ``item_id`` is an item's id or the short id its line showed (``m:4821``); every
        write below takes either, and returns the full id."""
        return self._event("reinforce", item_id, now)

    def demote(self, item_id: str, *, now: datetime | None = None) -> str:
        """This memory was unhelpful: rank it lower."""
        return self._event("demote", item_id, now)

    def update(self, item_id: str, content: str, tags: Sequence[str] | None = None, *,
               now: datetime | None = None) -> str:
        """Replace a memory's wording (and tags); the user's words win."""
        return self._event("update", item_id, now,
                           {"content": content, "tags": list(tags) if tags is not None else None})

    def forget(self, item_id: str, *, now: datetime | None = None) -> str:
        """Never inject this memory again (it is kept, purged, for the audit trail)."""
        return self._event("forget", item_id, now)

    def pin(self, item_id: str, *, now: datetime | None = None) -> str:
        """Keep this memory for good: the permanent tier, never decayed, archived or
        purged until ``unpin`` or ``forget`` says otherwise."""
        return self._event("pin", item_id, now)

    def unpin(self, item_id: str, *, now: datetime | None = None) -> str:
        """Undo ``pin``: the memory goes back to the tier its kind gives it."""
        return self._event("unpin", item_id, now)

    def erase(self, namespace: str | None = None, *, item_id: str | None = None, reason: str | None = None,
              by: str | None = None, now: datetime | None = None) -> str:
        """The right to be forgotten: erase every memory of ``namespace`` (default: this
        client's), or only the item ``item_id`` (full or short id), from every store and
        every kept version under the data root, leaving an audit row without content.
        Unlike ``forget`` (the row stays, purged, for the audit trail), nothing of the
        words stays. The pipeline carries it out (``memory erase`` at once; otherwise the
        ``erase`` job, which ``erasure_sensor`` or the next ``memory materialize`` runs):
        the request is an ``erase`` event. ``reason`` and ``by`` go to the audit row.
        Returns the request's id."""
        payload = {k: v for k, v in (("reason", reason), ("by", by)) if v}
        when = now or datetime.now(timezone.utc)
        if item_id is not None:
            found = self._known(item_id)
            return events.record(self.paths.events, "erase", [found], when, payload=payload).id
        target = namespace or self.namespace
        if not target:
            raise ValueError("erase needs a namespace (this client reads every namespace)")
        return events.record(self.paths.events, "erase", [], when, payload={"namespace": target, **payload}).id

    def request_run(self, job: str, *, now: datetime | None = None) -> str:
        """Ask the pipeline to run ``job`` (``materialize``, ``nightly``, ``weekly``,
        ``monthly``) soon: for an agent that finds ``overdue_jobs()`` non-empty. It only
        appends a request; ``overdue_jobs_sensor`` or the next ``memory materialize`` runs it."""
        return str(jobs.request_run(self.paths, job, now or datetime.now(timezone.utc)))

    def injection_of(self, item_ids: Sequence[str]) -> Injection:
        """An injection of these published items, for ``record_response`` from a caller
        that holds only the ids its block showed (an HTTP or MCP client)."""
        rows = self._rows.rows([self._known(i) for i in item_ids])
        return Injection(text="", items=[to_hit(row, 1.0, 1.0) for row in rows.values()])

    def _used(self, injection: Injection, response_text: str) -> dict[str, bool]:
        """Hit id → whether the reply states it: ``[feedback] echo_overlap`` of its content
        words or one of its numbers, or a reply sentence at cosine ≥ ``[feedback] echo_similarity`` (the same
        fact in other words)."""
        reply = {w.lower() for w in keywords(response_text)}
        used: dict[str, bool] = {}
        for hit in injection.items:
            terms = {w.lower() for w in keywords(hit.content)} - QUERY_STOPWORDS
            numbers = {t for t in terms if t[:1].isdigit()}
            overlap = len(terms & reply) / max(len(terms), 1)
            used[hit.id] = overlap >= self.config.feedback.echo_overlap or bool(numbers & reply)
        unsure = [h for h in injection.items if not used[h.id]]
        sentences = [s.strip() for s in _SENTENCE.split(response_text) if len(s.split()) >= 3]
        if unsure and sentences:
            vectors = self.embedder.embed([h.content for h in unsure] + sentences)
            similarity = vectors[:len(unsure)] @ vectors[len(unsure):].T
            threshold = float(self.config.feedback.echo_similarity)
            for hit, best in zip(unsure, similarity.max(axis=1)):
                used[hit.id] = bool(best >= threshold)
        return used

    def record_response(self, injection: Injection, response_text: str, *, now: datetime | None = None,
                        session_id: str | None = None) -> dict[str, bool]:
        """Which injected items the agent's reply used (echo) and which it ignored (fizzle).

        Returns hit id → used. Writes one ``referenced`` and one ``ignored`` event (a
        summary line counts for the items it cites). Neither is a user-confirmed
        reference, so neither reinforces.
        """
        now = now or datetime.now(timezone.utc)
        used = self._used(injection, response_text)
        by_id = {h.id: h for h in injection.items}
        echoed = list(dict.fromkeys(i for h, u in used.items() if u for i in trust.item_ids(by_id[h])))
        fizzled = list(dict.fromkeys(i for h, u in used.items() if not u for i in trust.item_ids(by_id[h])))
        if echoed:
            events.record(self.paths.events, "referenced", echoed, now, session_id=session_id)
        if fizzled:
            events.record(self.paths.events, "ignored", fizzled, now, session_id=session_id)
        return used

    # -- handing over and reading what the pipeline publishes ------------------------------

    # -- per-turn checkpoints -------------------------------------------------------------

    @property
    def checkpoints(self) -> CheckpointStore:
        """The per-turn checkpoint store (SQLite in the data root, or ``[service] checkpoint_dsn``)."""
        if self._checkpoints is None:
            self._checkpoints = CheckpointStore.for_root(self.paths, self.config)
        return self._checkpoints

    def append_turn(self, session_id: str, turn: int, record: dict[str, Any], *, project: str | None = None,
                    now: datetime | None = None) -> dict[str, Any]:
        """Checkpoint one turn of a live session: ``{user_input, tool_calls, llm_output,
        internal_state}``, durable when this returns, so a crash loses no acknowledged turn.

        A turn that says something worth keeping at once ("remember…", a correction,
        "never/always…", a credential to refuse: ``retrieval.signals``) hands the session
        so far to the pipeline now (``flush_session``) instead of at its end. Returns the
        checkpoint and the signals found.
        """
        namespace = self._own_namespace("append_turn")
        now = now or datetime.now(timezone.utc)
        # Scanned as sent: the checkpoint is stored redacted, and a credential is a signal.
        said = " ".join(str(record.get(k) or "") for k in ("user_input", "llm_output"))[:SCANNED_CHARS]
        saved = self.checkpoints.append(namespace, session_id, turn, record, project=project, now=now)
        found = sorted(signals.scan(said, pii=self._pii)) if self.config.service.signal_scan else []
        flushed = None
        if signals.HIGH_SIGNALS.intersection(found):
            flushed = self.flush_session(session_id, project=project)
            self.request_run("materialize", now=now)
        return {"session_id": session_id, "turn": saved.turn, "signals": found, "flushed": flushed is not None,
                "checkpointed_at": saved.created_at.isoformat()}

    def replay(self, session_id: str, upto_turn: int | None = None) -> list[dict[str, Any]]:
        """The session's checkpointed turns in order, up to ``upto_turn``: its state to
        rebuild after a crash."""
        namespace = self._own_namespace("replay")
        return [{"turn": c.turn, "record": c.record, "project": c.project, "created_at": c.created_at.isoformat(),
                 "flushed": c.flushed_at is not None}
                for c in self.checkpoints.replay(namespace, session_id, upto_turn)]

    def disabled(self, namespace: str | None = None) -> bool:
        """Whether memory is off for ``namespace`` (default: this client's; ``memory
        disable``). While it is, nothing is injected or found, and ``flush_session``,
        ``append_turn`` and ``remember`` raise ``retrieval.disabled.MemoryDisabled``
        (the inbox and the checkpoint store refuse the write)."""
        return is_disabled(self.paths, namespace or self.namespace)

    def _own_namespace(self, what: str) -> str:
        if not self.namespace:
            raise ValueError(f"{what} needs a namespace (this client reads every namespace)")
        return self.namespace

    def flush_session(self, session_id: str, messages: Messages | None = None, *, user: str | None = None,
                      project: str | None = None) -> str | None:
        """Hand a session's transcript to the pipeline (session end, or before compaction).

        Messages need ``role`` and ``content``; ``turn``, ``ts``, ``speaker`` and ``trust``
        are filled in when missing. Without ``messages``, the session's checkpointed
        turns (``append_turn``) are handed over: after a crash, this recovers every
        turn that was acknowledged. ``user`` is the namespace the session's memories
        belong to (default: this client's), so two users' memories never mix in one
        block. Credentials, configured PII and off-the-record exchanges are removed
        before the file is written (``inbox.write_session``). ``project``: what the
        session worked on (``retrieval.projects``: "atlas-web"); its memories about that
        work are scoped to it, the rest stay global. Returns the inbox file, or None if
        it was already there.
        """
        now = datetime.now(timezone.utc).isoformat()
        namespace = user or self.namespace
        project = check_project(project) if project is not None else None
        checkpointed = None
        if messages is None:
            checkpointed = self.checkpoints.replay(self._own_namespace("flush_session"), session_id)
            messages = CheckpointStore.to_messages(checkpointed)
            project = project or next((c.project for c in checkpointed if c.project), None)
            if not messages:
                return None
        canonical = []
        for index, message in enumerate(messages, start=1):
            role = message.get("role")
            if role not in ROLES:
                raise ValueError(f"message {index}: role {role!r}; expected one of {', '.join(ROLES)}")
            canonical.append({
                "session_id": session_id, "turn": int(message.get("turn", index)), "role": role,
                "content": str(message.get("content", "")), "ts": message.get("ts", now),
                "speaker": message.get("speaker", role),
                "trust": message.get("trust", "untrusted" if role == "tool" else "trusted"),
                **({"namespace": namespace} if namespace else {}),
                **({"project": project} if project else {}),
            })
        path = write_session(self.paths.inbox, session_id, canonical, pii=self._pii)
        if checkpointed:
            self.checkpoints.mark_flushed(namespace, session_id, max(c.turn for c in checkpointed),
                                          datetime.now(timezone.utc))
        return str(path) if path else None

    def lessons(self, project: str | None = None) -> list[str]:
        """Lessons learned from corrections and standing rules ("User prefers X over Y"),
        from the published items this reader may see (its namespace, never another's; for
        ``project``, the global ones and that project's, never another project's)."""
        self._rows.refresh()
        frame = self._rows.frame
        if frame is None:
            return []
        if self.namespace:
            frame = frame.filter(frame["namespace"] == self.namespace)
        if project is not None:
            view = self.view.for_project(check_project(project))
            # Only a project's item can be another project's: the rule is asked of those alone.
            scoped = frame.filter(frame["scope"] == "project").select("id", "scope", "project")
            frame = frame.filter(~frame["id"].is_in(
                [row["id"] for row in scoped.iter_rows(named=True) if not view.in_project(row)]))
        return lessons(frame, self.config)

    def due_triggers(self, now: datetime | None = None, *, mark_fired: bool = True,
                     project: str | None = None) -> list[dict[str, Any]]:
        """Forward triggers due on ``now``'s day, or overdue, that have not fired yet.

        Each comes back once: returning it writes a ``fired`` event at ``now``
        (``mark_fired``), so tomorrow's call does not repeat yesterday's reminder. Each
        row has ``key``. For ``project``: the reminders of global items and of that
        project's, never another project's (those wait for their own project's reader).
        """
        if not self.paths.triggers.exists():
            return []
        import polars as pl

        now = now or datetime.now(timezone.utc)
        due = pl.read_parquet(str(self.paths.triggers)).filter(pl.col("trigger_date") <= now.date()).to_dicts()
        fired = events.fired_triggers(self.paths)
        if self.namespace or project is not None:  # a reminder is its item's reader's only
            view = self.view.for_project(check_project(project) if project is not None else None)
            self._rows.refresh()
            rows = self._rows.rows(sorted({i for r in due for i in r["item_ids"] or []}))
            due = [r for r in due if any(
                i in rows and (not self.namespace or rows[i].get("namespace") == self.namespace)
                and view.in_project(rows[i]) for i in r["item_ids"] or [])]
        out = [{**row, "key": events.trigger_key(row)} for row in due]
        out = [row for row in out if row["key"] not in fired]
        if out and mark_fired:
            events.record(self.paths.events, "fired", sorted({i for r in out for i in r["item_ids"] or []}),
                          now, payload={"triggers": [r["key"] for r in out]})
        return out

    def insights(self, query: str | None = None, k: int = 5) -> list[dict[str, Any]]:
        """What the archive says in aggregate: one sentence per cluster of archived
        memories (the weekly ``archive_clusters``), with its size and member ids; the
        ``k`` closest to ``query`` (with their ``similarity``), or the largest."""
        table = self.store.table(INSIGHTS_TABLE)
        if table is None:
            return []
        if not query:
            rows = table.to_arrow().drop(["vector"]).to_pylist()
            return sorted(rows, key=lambda r: -int(r["size"]))[:k]
        rows = table.search(self.stores.embed(query)).distance_type("cosine").limit(k).to_list()
        return [{**{c: v for c, v in r.items() if c not in ("vector", "_distance")},
                 "similarity": 1.0 - float(r["_distance"])} for r in rows]

    def overdue_jobs(self, now: datetime | None = None) -> list[str]:
        """Pipeline jobs whose last success is older than their period (never assume cron ran).

        An agent calls this at session start; a non-empty answer means the memory it is
        about to read may be behind (run ``memory run <job>`` or check the Dagster daemon).
        """
        return jobs.overdue(self.paths, self.config, now or datetime.now(timezone.utc))
