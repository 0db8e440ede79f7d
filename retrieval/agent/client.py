"""``MemoryClient``: what an agent imports to read its memory and hand over transcripts.

A front over plain modules: ``recall`` (search and inject over ``retrieve``), ``browse``
(one memory at a time, and feedback about it), ``pending`` (``remember``), ``reminders``,
``echo`` (what a reply used) and ``sessions`` (a live session). Whose memory it is, is a ``View``: every namespace rule is asked of it.
Every write is an append the pipeline folds in: an inbox file or a feedback event.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from functools import cached_property
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from retrieval import credentials, jobs
from retrieval.agent import browse, echo, pending, recall, reminders, sessions
from retrieval.agent.injection import Injection
from retrieval.agent.options import RetrievalOptions
from retrieval.agent.pending import Overlay
from retrieval.agent.search import Hit
from retrieval.agent.stores import Messages, Stores
from retrieval.agent.view import View
from retrieval.config import MemoryConfig, load_config
from retrieval.disabled import is_disabled
from retrieval.embeddings import Embedder
from retrieval.paths import DataRoot
from retrieval.projects import check_project
from retrieval.store import ItemStore

if TYPE_CHECKING:  # SQLAlchemy (0.3 s) loads with the first turn checkpointed, not with inject
    from retrieval.checkpoints import CheckpointStore


def _now(now: datetime | None) -> datetime:
    return now or datetime.now(timezone.utc)


class MemoryClient:
    """Read the published memory under a data root; append transcripts and feedback events.

    Args:
        data_root: the pipeline's data root (default ``MEMORY_DATA_ROOT`` or ``data/``).
        config_path: a TOML file overriding ``defaults.toml`` (default ``MEMORY_CONFIG``).
        options: which retrieval stages run (all by default).
        namespace: the user or agent whose memory this is (``View.of``: default ``[pipeline]
            namespace``; ``"*"`` reads every namespace, an operator's view, never an agent's).
        scopes: only items with these scopes (``global``, ``project``, ``session``).

    A ``project`` argument reads the global items and that project's, never another
    project's; a write naming an item takes its id or the short id its line showed
    (``m:4821``) and returns the full id; ``now`` defaults to the wall clock.
    """

    def __init__(self, data_root: str | os.PathLike[str] | None = None, *, config_path: str | None = None,
                 options: RetrievalOptions | None = None, namespace: str | None = None,
                 scopes: Sequence[str] | None = None):
        self.paths = DataRoot.resolve(data_root)
        self.config: MemoryConfig = load_config(config_path)
        self.options = options or RetrievalOptions()
        self._pii = credentials.pii_from_config(self.config)
        self.view = View.of(self.config, namespace, scopes)
        self.stores = Stores(self.paths, self.config)
        self.overlay = Overlay(self.paths, lambda t: self.embedder.embed(t), self.config.default_namespace, self.stores.current)
        self.last_tier: str = "none"

    def scoped(self, namespace: str | None, scopes: Sequence[str] | None = None, *,
               shared: Sequence[str] = (), author: str | None = None) -> MemoryClient:
        """This client for another reader, also reading the ``shared`` namespaces (ranked ×
        ``[service] shared_penalty``), writing as ``author`` (a key's); same stores and model."""
        other = copy.copy(self)
        other.view = (View.of(self.config, namespace, scopes).sharing(shared, float(self.config.service.shared_penalty))
                      .by(author))
        other.last_tier = "none"
        return other

    @property
    def namespace(self) -> str | None:
        """Whose memory this is (the ``View``'s; None: every namespace)."""
        return self.view.namespace

    @property
    def scopes(self) -> tuple[str, ...] | None:
        return self.view.scopes

    @property
    def store(self) -> ItemStore:
        """The published items' store (``Stores.store``)."""
        return self.stores.store

    @property
    def embedder(self) -> Embedder:
        return self.stores.embedder

    def _reading(self, project: str | None) -> View:
        return self.view.for_project(check_project(project) if project is not None else None)

    # -- reading -------------------------------------------------------------------------

    def search(self, query: str, k: int = 10, *, now: datetime | None = None,
               as_of: datetime | None = None, project: str | None = None) -> list[Hit]:
        """The ``k`` best items for ``query`` as given, active ones first, then archived and
        cold ones; ``as_of`` a day: what was true then (superseded since or not)."""
        view = self.view.at(as_of).for_project(project)
        return recall.search(self.stores, self.overlay, view, self.config, self.options, query, k, _now(now))

    def inject(self, context: str | Messages, *, max_items: int | None = None, token_budget: int | None = None,
               now: datetime | None = None, budget_aware: bool | None = None, session_id: str | None = None,
               record: bool = True, as_of: datetime | None = None, project: str | None = None) -> Injection:
        """The memory block for the agent's next prompt: for ``context`` (messages, the last 5
        count, or text), at most ``max_items`` lines (10; 5 ``budget_aware``, which skips the
        costly paths) and ``token_budget`` tokens. ``record``: write the ``injected`` event."""
        injection = recall.inject(context, self.stores, self.overlay, self.view.at(as_of).for_project(project),
                                  self.config, self.options, _now(now), pii=self._pii, max_items=max_items,
                                  token_budget=token_budget, budget_aware=budget_aware, session_id=session_id,
                                  record=record)
        self.last_tier = injection.tier
        return injection

    def get(self, item_id: str) -> dict[str, Any]:
        """One memory by id, short id or pending id, every status (else ``ItemStore.DoesNotExist``)."""
        return browse.get(self.stores, self.overlay, self.view, item_id)

    def list(self, *, scope: str | None = None, project: str | None = None, category: str | None = None,
             kind: str | None = None, status: str | None = "active", tag: str | None = None,
             text: str | None = None, limit: int = 100, offset: int = 0) -> list[dict[str, Any]]:
        """Memories matching every filter, newest first: ``status`` (None: any; ``pending``:
        not yet published), ``project`` (that project's only), ``text`` (a substring)…"""
        return browse.listing(self.stores, self.overlay, self.view, scope=scope, project=project, category=category,
                              kind=kind, status=status, tag=tag, text=text, limit=limit, offset=offset)

    def history(self, item_id: str) -> dict[str, Any]:
        """A memory, the turns it was read from, the items it replaced or that replaced it,
        and the feedback events about it still on record."""
        return browse.history(self.stores, self.get(item_id))

    def lessons(self, project: str | None = None) -> list[str]:
        """Lessons from corrections and standing rules, of the items this reader owns."""
        return reminders.lessons_for(self.stores, self._reading(project), self.config)

    def due_triggers(self, now: datetime | None = None, *, mark_fired: bool = True,
                     project: str | None = None) -> list[dict[str, Any]]:
        """Forward triggers due by ``now``'s day, not fired yet; each comes back once
        (``mark_fired`` writes a ``fired`` event)."""
        return reminders.fire(self.stores, self._reading(project), _now(now), mark_fired=mark_fired, pii=self._pii)

    def insights(self, query: str | None = None, k: int = 5) -> list[dict[str, Any]]:
        """The archive's insights (``archive_clusters``): the ``k`` closest to ``query``, or the largest."""
        return browse.insights(self.stores, query, k)

    def overdue_jobs(self, now: datetime | None = None) -> list[str]:
        """Pipeline jobs whose last success is older than their period (never assume cron ran)."""
        return jobs.overdue(self.paths, self.config, _now(now))

    def disabled(self, namespace: str | None = None) -> bool:
        """Whether memory is off for ``namespace`` (default this client's): nothing is found
        or injected, and writes raise ``MemoryDisabled``."""
        return is_disabled(self.paths, namespace or self.namespace)

    # -- writing: appends the pipeline folds in ------------------------------------------

    def remember(self, content: str, *, project: str | None = None, now: datetime | None = None) -> dict[str, Any]:
        """Store ``content`` as a memory through the inbox (gated by the next run); until it
        is published, ``search`` and ``inject`` show it ``[pending]``. The pending row."""
        return pending.write(self.paths, self.view, content, now=_now(now), pii=self._pii, project=project).as_row()

    def _event(self, type: str, item_id: str, now: datetime | None, payload: dict[str, Any] | None = None) -> str:
        return browse.about(self.stores, self.view, type, item_id, _now(now), pii=self._pii, payload=payload)

    def reinforce(self, item_id: str, *, now: datetime | None = None) -> str:
        """The user confirmed this memory: the one thing that counts as a reference."""
        return self._event("reinforce", item_id, now)

    def demote(self, item_id: str, *, now: datetime | None = None) -> str:
        """This memory was unhelpful: rank it lower."""
        return self._event("demote", item_id, now)

    def update(self, item_id: str, content: str, tags: Sequence[str] | None = None, *,
               now: datetime | None = None) -> str:
        """Replace a memory's wording (and tags); the user's words win."""
        return self._event("update", item_id, now, {"content": content, "tags": None if tags is None else list(tags)})

    def forget(self, item_id: str, *, now: datetime | None = None) -> str:
        """Never inject this memory again (it is kept, purged, for the audit trail)."""
        return self._event("forget", item_id, now)

    def pin(self, item_id: str, *, now: datetime | None = None) -> str:
        """Keep this memory for good: the permanent tier, until ``unpin`` or ``forget``."""
        return self._event("pin", item_id, now)

    def unpin(self, item_id: str, *, now: datetime | None = None) -> str:
        """Undo ``pin``: the memory goes back to the tier its kind gives it."""
        return self._event("unpin", item_id, now)

    def erase(self, namespace: str | None = None, *, item_id: str | None = None, reason: str | None = None,
              by: str | None = None, now: datetime | None = None) -> str:
        """The right to be forgotten: an ``erase`` request for every memory of ``namespace``
        (default this client's) or one ``item_id``; the request's id."""
        return browse.erase(self.stores, self.view, namespace, item_id, _now(now), pii=self._pii, reason=reason, by=by)

    def request_run(self, job: str, *, now: datetime | None = None) -> str:
        """Ask the pipeline to run ``job`` (``materialize``, ``nightly``, ``weekly``, ``monthly``) soon."""
        return str(jobs.request_run(self.paths, job, _now(now)))

    def injection_of(self, item_ids: Sequence[str]) -> Injection:
        """An injection of these published items, for a caller holding only the block's ids."""
        return browse.injection_of(self.stores, self.view, item_ids)

    def record_response(self, injection: Injection, response_text: str, *, now: datetime | None = None,
                        session_id: str | None = None) -> dict[str, bool]:
        """Which injected items the reply used (``referenced``) and ignored (``ignored``): hit id → used."""
        return echo.record(injection, response_text, self.config, self.embedder.embed, self.paths.events, _now(now),
                           session_id=session_id, pii=self._pii)

    # -- a live session ------------------------------------------------------------------

    @cached_property
    def checkpoints(self) -> CheckpointStore:
        """The per-turn checkpoint store (SQLite in the data root, or ``[service] checkpoint_dsn``)."""
        return sessions.checkpoint_store(self.paths, self.config)

    def append_turn(self, session_id: str, turn: int, record: dict[str, Any], *, project: str | None = None,
                    now: datetime | None = None) -> dict[str, Any]:
        """Checkpoint one turn, durable when this returns; a turn with a signal worth keeping
        at once (``retrieval.agent.signals``) hands the session so far to the pipeline."""
        return sessions.append_turn(self.paths, lambda: self.checkpoints, self.view, self.config, session_id, turn,
                                    record, project=project, now=_now(now), pii=self._pii)

    def replay(self, session_id: str, upto_turn: int | None = None) -> list[dict[str, Any]]:
        """The session's checkpointed turns in order, up to ``upto_turn``: its state after a crash."""
        return sessions.replayed(self.checkpoints, self.view, session_id, upto_turn)

    def flush_session(self, session_id: str, messages: Messages | None = None, *, user: str | None = None,
                      project: str | None = None, workspace: str | None = None) -> str | None:
        """Hand a session's transcript to the pipeline (its checkpointed turns when no ``messages``), for
        ``user`` (default this client's namespace), ``workspace``: the agent's folder; the inbox file or None."""
        return sessions.flush(self.paths, lambda: self.checkpoints, self.view, session_id, messages, user=user,
                              project=project, pii=self._pii, config=self.config, workspace=workspace)
