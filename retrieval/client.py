"""``MemoryClient``: what an agent imports to read its memory and hand over transcripts."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any

import numpy as np

from retrieval import credentials, events, jobs, scoring, sufficiency, trust
from retrieval.citations import summary_lines
from retrieval.config import MemoryConfig, load_config
from retrieval.embeddings import Embedder
from retrieval.inbox import write_session
from retrieval.injection import Injection, build_block
from retrieval.options import RetrievalOptions
from retrieval.paths import DataRoot
from retrieval.llm import llm_configured
from retrieval.rewrite import LLMRewriter, SearchQuery, keywords, rewrite
from retrieval.text import QUERY_STOPWORDS
from retrieval.text import sentiment as sentiment_of
from retrieval.schema import ITEM_SCHEMA, ROLES
from retrieval.search import Hit, fts_list, fts_query, fuse, to_hit, vector_list, vectors_for
from retrieval.store import INSIGHTS_TABLE, ItemStore, PublishedRows

Messages = Sequence[Mapping[str, Any]]
# What search may return: active items first; archived, then cold ones only to fill the
# block ("forgotten by filing" is not forgetting: koshi and Engram keep the archive searchable).
RECALLABLE = ("active", "archived", "cold")
# What an item row holds, as in the Parquet snapshot: read from LanceDB for ids the snapshot lacks.
_ATTRIBUTES = list(ITEM_SCHEMA)
_REOPEN_SECONDS = 5.0  # how stale the cached table may get before a new publish is picked up


# Where a reply's sentences end, for the paraphrase test of record_response.
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def _redacted_context(context: str | Messages, pii: tuple[str, ...]) -> str | Messages:
    """``context`` with credentials and personal data redacted, as the agent handed it
    over: the query, its rewrite and the ``injected`` event are all derived from it, so
    a secret in the conversation never reaches a rewrite (which splits ``a_b`` into
    ``a b``, past any rule), the LLM or the event log."""
    if isinstance(context, str):
        return credentials.redact(context, pii=pii)
    return [{**m, "content": credentials.redact(str(m.get("content", "")), pii=pii)} for m in context]


def _context_text(context: str | Messages, last: int = 5) -> str:
    if isinstance(context, str):
        return context
    return "\n".join(str(m.get("content", "")) for m in list(context)[-last:])


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
        self.namespace = None if namespace == "*" else (namespace or str(self.config.pipeline.namespace))
        self.scopes = tuple(scopes) if scopes else None
        self.store = ItemStore(self.paths)
        self._embedder: Embedder | None = None
        self._tables: dict[str, tuple[float, Any]] = {}
        self._rewriter: LLMRewriter | None = None
        self._rows = PublishedRows(self.paths.published_items)
        self._pool: ThreadPoolExecutor | None = None
        self._last_embedding: tuple[str, np.ndarray] | None = None
        self.last_tier: str = "none"

    # -- reading -----------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = Embedder(self.config)
        return self._embedder

    def _table(self, name: str = "items") -> Any | None:
        # A missing table (no summaries yet) is remembered too, so each call does not
        # look for it again; either is looked up anew after _REOPEN_SECONDS.
        opened_at, table = self._tables.get(name, (-_REOPEN_SECONDS - 1.0, None))
        if time.monotonic() - opened_at > _REOPEN_SECONDS:
            table = self.store.table() if name == "items" else self.store.summaries_table()
            self._tables[name] = (time.monotonic(), table)
            if name == "items":
                self._rows.refresh()
        return table

    def _embed(self, text: str) -> np.ndarray:
        """The query's vector; tier 1 and tier 2 share one embedding of the same query."""
        if self._last_embedding is None or self._last_embedding[0] != text:
            self._last_embedding = (text, self.embedder.embed_one(text))
        return self._last_embedding[1]

    def _candidates(self, table: Any, query: str, limit: int, terms: str | None = None) -> dict[str, list[dict[str, Any]]]:
        """The vector and full-text candidate lists (at most ``limit`` each), every row
        with all its item attributes, only rows the agent may see. ``query`` is embedded;
        ``terms`` (default: ``query``) is the full-text query.

        Both queries fetch ids only and run unfiltered for twice ``limit`` rows: the
        attributes come from the in-memory published snapshot (from LanceDB for an id it
        does not hold yet), and so does the filter (active, namespace, scopes), applied
        before anything is ranked. A list that loses so many rows to the filter that it
        falls short is asked again with the filter inside LanceDB (exact, slower). The
        full-text query runs on a worker thread while the query is embedded (LanceDB
        releases the GIL).
        """
        fusion = self.options.fusion
        fetch = 2 * limit
        terms = query if terms is None else terms
        fts = None
        if fusion in ("hybrid", "fts") and fts_query(terms):
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memory-fts")
            fts = self._pool.submit(fts_list, table, terms, limit=fetch, where=None)
        lists: dict[str, list[dict[str, Any]]] = {}
        if fusion in ("hybrid", "vector"):
            lists["vector"] = vector_list(table, self._embed(query), limit=fetch, where=None)
        if fts is not None:
            lists["fts"] = fts.result()
        attributes = self._attributes(table, lists)
        out: dict[str, list[dict[str, Any]]] = {}
        for name, rows in lists.items():
            visible = [{**attributes[r["id"]], **r} for r in rows
                       if r["id"] in attributes and self._visible(attributes[r["id"]], RECALLABLE)]
            if len(visible) < limit and len(rows) == fetch:
                # The filter dropped too many: let LanceDB filter before it ranks.
                where = self._where(RECALLABLE)
                again = (vector_list(table, self._embed(query), limit=limit, where=where)
                         if name == "vector" else fts_list(table, terms, limit=limit, where=where))
                attributes.update(self._attributes(table, {name: again}))
                visible = [{**attributes[r["id"]], **r} for r in again if r["id"] in attributes]
            out[name] = visible[:limit]
        return out

    def _attributes(self, table: Any, lists: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
        """id → item row for every id in ``lists``: the snapshot, else LanceDB."""
        ids = list(dict.fromkeys(r["id"] for rows in lists.values() for r in rows))
        attributes = self._rows.rows(ids)
        missing = [r["_rowid"] for rows in lists.values() for r in rows if r["id"] not in attributes]
        if missing:
            fetched = table.take_row_ids(list(dict.fromkeys(missing))).select(_ATTRIBUTES).to_list()
            attributes.update({row["id"]: row for row in fetched})
        return attributes

    def _visible(self, row: Mapping[str, Any], statuses: Sequence[str] = ("active",)) -> bool:
        """What ``_where`` says, for a row in hand: a status in ``statuses``, in the
        namespace and scopes."""
        return (row.get("status") in statuses
                and (not self.namespace or row.get("namespace") == self.namespace)
                and (not self.scopes or row.get("scope") in self.scopes))

    def _where(self, statuses: Sequence[str] = ("active",)) -> str:
        clauses = ["status IN (" + ", ".join(f"'{s}'" for s in statuses) + ")"]
        if self.namespace:
            clauses.append(f"namespace = '{self.namespace.replace(chr(39), chr(39) * 2)}'")
        if self.scopes:
            clauses.append("scope IN (" + ", ".join(f"'{s}'" for s in self.scopes) + ")")
        return " AND ".join(clauses)

    def _query(self, context: str | Messages, budget_aware: bool) -> SearchQuery:
        if not self.options.rewrite:
            raw = _context_text(context)
            return SearchQuery(raw, raw)
        if self.config.llm_enabled and llm_configured() and not budget_aware and self._rewriter is None:
            self._rewriter = LLMRewriter(self.config)
        return rewrite(context, llm=None if budget_aware else self._rewriter)

    def _relevant(self, lists: dict[str, list[dict[str, Any]]]) -> Callable[[str], bool]:
        """The relevance floor: an item the query is about has a cosine to it of at least
        ``[injection] min_similarity``, or full-text search matched it on a query word.
        Fused relevance is relative (the best row is always 1.0), so it cannot tell "the
        best of the relevant" from "the best of nothing"; this is the absolute test."""
        if not self.options.relevance_floor:
            return lambda item_id: True
        floor = float(self.config.injection.min_similarity)
        close = {r["id"] for r in lists.get("vector", []) if 1.0 - float(r.get("_distance", 1.0)) >= floor}
        matched = {r["id"] for r in lists.get("fts", [])}
        return lambda item_id: item_id in close or item_id in matched

    def _rank(self, query: str, k: int, now: datetime, sentiment: str = "neutral",
              terms: str | None = None) -> tuple[list[Hit], Callable[[list[int]], np.ndarray] | None]:
        """The ``k`` best hits above the relevance floor: active items first, then, while
        the block is not full, archived and then cold ones (× ``[injection]
        archived_multiplier`` / ``cold_multiplier``, tagged by the trust pass); and a
        function that reads the stored vectors of the hits at given positions (for the
        conflict check; None without hits)."""
        table = self._table()
        if table is None or not query.strip():
            return [], None
        lists = self._candidates(table, query, max(int(self.config.ranking.candidates), k), terms)
        fused = fuse(lists)
        if not fused:
            return [], None
        relevant = self._relevant(lists)
        top = fused[0][1]
        # The names the query uses, for the subject modifier (scoring only).
        names = scoring.names_in(keywords(query if terms is None else terms)) if self.options.scoring else frozenset()
        cfg = self.config.injection
        penalty = {"active": 1.0, "archived": float(cfg.archived_multiplier), "cold": float(cfg.cold_multiplier)}
        groups: dict[str, list[tuple[float, float, dict[str, Any]]]] = {status: [] for status in RECALLABLE}
        for row, rrf in fused:
            if not relevant(row["id"]):
                continue
            relevance = rrf / top
            status = row.get("status") or "active"
            if self.options.scoring:
                # An archived item is scored as it was when active, then ranked below.
                memory = scoring.memory_score(self.config, {**row, "status": "active"}, now)
                score = scoring.rank_score(self.config, relevance, memory,
                                           sentiment_match=sentiment != "neutral" and row.get("sentiment") == sentiment,
                                           subject_match=bool(names) and scoring.subject_of(row["content"]) in names)
            else:
                score = relevance
            groups[status].append((score * penalty[status], relevance, row))
        hits: list[Hit] = []
        for status in RECALLABLE:
            if len(hits) >= k:
                break
            scored = sorted(groups[status], key=lambda s: -s[0])
            if self.options.scoring:
                picked = scoring.diversify(self.config, [(s, (rel, row)) for s, rel, row in scored],
                                           [scoring.source_turns(row) for _, _, row in scored], k - len(hits))
                hits += [to_hit(row, relevance, score) for score, (relevance, row) in picked]
            else:
                hits += [to_hit(row, relevance, score) for score, relevance, row in scored[:k - len(hits)]]

        def vectors(positions: list[int]) -> np.ndarray:
            """The stored vectors of the hits at ``positions`` (read only when asked)."""
            chosen = [hits[p] for p in positions]
            return vectors_for(table, [h.row["_rowid"] for h in chosen], [h.id for h in chosen])

        return hits, (vectors if hits else None)

    def search(self, query: str, k: int = 10, *, now: datetime | None = None) -> list[Hit]:
        """The ``k`` best items for ``query`` above the relevance floor: vector +
        full-text, fused and scored; active items first, then archived and cold ones
        while fewer than ``k`` were found (their ``status`` says which).

        Args:
            query: what to look for (searched as given; ``inject`` rewrites first).
            k: how many items.
            now: the clock for decay (default: now).
        """
        return self._rank(query, k, now or datetime.now(timezone.utc))[0]

    def _tier1(self, query: str, terms: str, message: str) -> list[Hit] | None:
        """Category summary lines that answer the query alone, or None when tier 2 must run.

        Sufficient means a summary is close to the query (cosine ≥ ``summary_sufficient``)
        and one of its lines answers what the latest ``message`` asks
        (``retrieval.sufficiency``: the line alone holds ``summary_coverage`` of the
        query's terms and, for a question, an answer of the kind asked). Only such lines
        are served, most terms first, each with the items it cites
        (``retrieval.citations``): their ids (``row["item_ids"]``), source turns and
        lowest confidence; a line citing an item the agent may not see (no longer active,
        another namespace or scope) is not.
        """
        kind = sufficiency.asked(message)
        table = self._table("summaries") if kind != "open" else None
        if table is None:
            return None
        terms = sorted({t.lower() for t in keywords(terms)}, key=len, reverse=True)
        if not terms:
            return None
        rows = table.search(self._embed(query)).distance_type("cosine").limit(3).to_list()
        if not rows:
            return None
        best = 1.0 - float(rows[0]["_distance"])
        if best < float(self.config.injection.summary_sufficient):
            return None
        coverage = float(self.config.injection.summary_coverage)
        # A term matches at the start of a word: "start" finds "started", not "restart".
        term = re.compile(r"\b(?:" + "|".join(re.escape(t) for t in terms) + ")")
        self._table()  # refreshes the items snapshot the citations are looked up in
        hits = []
        for row in rows:
            lines = []
            for line, ids in summary_lines(row.get("markdown") or ""):
                covered = sufficiency.on_topic(line, term, len(terms), coverage)
                if covered is not None and ids and sufficiency.answers(line, kind, message):
                    lines.append((covered, line, ids))
            lines.sort(key=lambda c: -c[0])
            served = 0
            for _, line, ids in lines:
                found = self._rows.rows(ids)
                items = [found.get(i) for i in ids]
                if served == 3 or not all(item is not None and self._visible(item) for item in items):
                    continue
                served += 1
                hits.append(Hit(
                    id=f"summary:{row['category']}:{len(hits)}", content=line, category=row["category"],
                    importance=max(float(i["importance"]) for i in items),
                    confidence=min(float(i["confidence"]) for i in items), source_trust="trusted",
                    session_id=str(items[0]["session_id"]),
                    source_resource_ids=list(dict.fromkeys(r for i in items for r in i["source_resource_ids"] or [])),
                    source_turn_ids=list(dict.fromkeys(t for i in items for t in i["source_turn_ids"] or [])),
                    relevance=best, score=best,
                    row={"updated_at": row.get("updated_at"), "item_ids": ids, "status": "active",
                         "created_at": max((i["created_at"] for i in items if i.get("created_at")), default=None),
                         "contradicts": list(dict.fromkeys(c for i in items for c in i.get("contradicts") or []))}))
        return self._with_counterparts(hits, best) if hits else None

    def _with_counterparts(self, lines: list[Hit], relevance: float) -> list[Hit]:
        """Summary lines, each followed by the active items that contradict what it cites
        (and no line cites): the trust pass then flags both sides, as it does in tier 2,
        instead of tier 1 stating one side with no doubt."""
        cited = {i for hit in lines for i in trust.item_ids(hit)}
        out: list[Hit] = []
        for hit in lines:
            out.append(hit)
            others = [i for i in hit.row.get("contradicts") or [] if i not in cited]
            for item_id, row in self._rows.rows(others).items():
                if self._visible(row):
                    cited.add(item_id)
                    out.append(to_hit(row, relevance, relevance))
        return out

    def inject(self, context: str | Messages, *, max_items: int | None = None, token_budget: int | None = None,
               now: datetime | None = None, budget_aware: bool | None = None, session_id: str | None = None,
               record: bool = True) -> Injection:
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
        Returns:
            the block text, the items in it, the tier that answered and the tokens used.
        """
        now = now or datetime.now(timezone.utc)
        cfg = self.config.injection
        frugal = self.options.budget_aware if budget_aware is None else budget_aware
        cap = int(max_items or (cfg.budget_max_items if frugal else cfg.max_items))
        if frugal:
            cap = min(cap, int(cfg.budget_max_items))
        budget = int(token_budget or cfg.token_budget)
        context = _redacted_context(context, self._pii)
        query = self._query(context, frugal)
        tier, hits, vectors = "items", None, None
        if self.options.tiers and not frugal:
            hits = self._tier1(query.text, query.terms, _context_text(context, last=1))
            tier = "summaries" if hits else "items"
        if not hits:
            hits, vectors = self._rank(query.text, cap, now, sentiment_of(_context_text(context)), query.terms)
        pairs = trust.conflicts(hits, vectors, float(cfg.conflict_similarity))
        hits = trust.order(hits, pairs)
        marks = trust.flags(hits, self.config, now, pairs=pairs)
        labels = self._labels(hits)
        text, kept, tokens = build_block(hits, header=cfg.header, now=now, max_items=cap,
                                         token_budget=budget, flags=marks, labels=labels)
        self.last_tier = tier if kept else "none"
        injection = Injection(text=text, items=kept, tier=self.last_tier, tokens=tokens, query=query.text,
                              terms=query.terms, flags={h.id: marks.get(h.id, []) for h in kept},
                              labels={h.id: labels[h.id] for h in kept if h.id in labels})
        # Every tier records what it injected: a summary line counts for the items it cites.
        injected = list(dict.fromkeys(i for h in kept for i in trust.item_ids(h)))
        if record and injected:
            events.record(self.paths.events, "injected", injected, now, session_id=session_id,
                          payload={"tier": self.last_tier, "query": query.text})
        return injection

    def _labels(self, hits: Sequence[Hit]) -> dict[str, str]:
        """hit id → the short id(s) its line shows (``[m:4821]``; a summary line shows the
        items it cites)."""
        short = self._rows.short_ids
        return {h.id: ", ".join(short.short(i) for i in trust.item_ids(h)) for h in hits}

    # -- feedback (append-only events) ----------------------------------------------------

    def _known(self, item_id: str) -> str:
        """The published item ``item_id`` names: a full id or a short one from the block
        (``m:4821``). Raises ``ItemStore.DoesNotExist`` (with the data root) or
        ``retrieval.ids.AmbiguousId``."""
        self._rows.refresh()
        found = self._rows.short_ids.resolve(item_id)
        if found is None:
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

    def erase(self, namespace: str | None = None, *, now: datetime | None = None) -> None:
        """Purge every memory of ``namespace`` (default: this client's): the user's right
        to be forgotten. The next pipeline run applies it; nothing is injected from it after."""
        target = namespace or self.namespace
        if not target:
            raise ValueError("erase needs a namespace (this client reads every namespace)")
        events.record(self.paths.events, "erase", [], now or datetime.now(timezone.utc),
                      payload={"namespace": target})

    def request_run(self, job: str, *, now: datetime | None = None) -> str:
        """Ask the pipeline to run ``job`` (``materialize``, ``nightly``, ``weekly``,
        ``monthly``) soon: for an agent that finds ``overdue_jobs()`` non-empty. It only
        appends a request; ``overdue_jobs_sensor`` or the next ``memory materialize`` runs it."""
        return str(jobs.request_run(self.paths, job, now or datetime.now(timezone.utc)))

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

    def flush_session(self, session_id: str, messages: Messages, *, user: str | None = None) -> str | None:
        """Hand a session's transcript to the pipeline (session end, or before compaction).

        Messages need ``role`` and ``content``; ``turn``, ``ts``, ``speaker`` and ``trust``
        are filled in when missing. ``user`` is the namespace the session's memories
        belong to (default: this client's), so two users' memories never mix in one
        block. Credentials, configured PII and off-the-record exchanges are removed
        before the file is written (``inbox.write_session``). Returns the inbox file, or
        None if it was already there.
        """
        now = datetime.now(timezone.utc).isoformat()
        namespace = user or self.namespace
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
            })
        path = write_session(self.paths.inbox, session_id, canonical, pii=self._pii)
        return str(path) if path else None

    def lessons(self) -> list[str]:
        """Lessons learned from corrections ("User prefers X over Y"), as the pipeline published them."""
        if not self.paths.lessons.exists():
            return []
        return [str(x) for x in json.loads(self.paths.lessons.read_text(encoding="utf-8"))]

    def due_triggers(self, now: datetime | None = None, *, mark_fired: bool = True) -> list[dict[str, Any]]:
        """Forward triggers due on ``now``'s day, or overdue, that have not fired yet.

        Each comes back once: returning it writes a ``fired`` event at ``now``
        (``mark_fired``), so tomorrow's call does not repeat yesterday's reminder. Each
        row has ``key``.
        """
        if not self.paths.triggers.exists():
            return []
        import polars as pl

        now = now or datetime.now(timezone.utc)
        due = pl.read_parquet(self.paths.triggers).filter(pl.col("trigger_date") <= now.date()).to_dicts()
        fired = events.fired_triggers(self.paths)
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
        rows = table.search(self._embed(query)).distance_type("cosine").limit(k).to_list()
        return [{**{c: v for c, v in r.items() if c not in ("vector", "_distance")},
                 "similarity": 1.0 - float(r["_distance"])} for r in rows]

    def overdue_jobs(self, now: datetime | None = None) -> list[str]:
        """Pipeline jobs whose last success is older than their period (never assume cron ran).

        An agent calls this at session start; a non-empty answer means the memory it is
        about to read may be behind (run ``memory run <job>`` or check the Dagster daemon).
        """
        return jobs.overdue(self.paths, self.config, now or datetime.now(timezone.utc))
