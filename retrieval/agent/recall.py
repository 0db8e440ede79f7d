"""What a reader is given: the items for a query (``search``), what retrieval found for
a conversation (``found``) and the block made of it (``inject``), each with the reader's
own writes the pipeline has not published yet, flagged ``[pending]`` (read-your-writes,
``retrieval.agent.pending``).

``MemoryClient.search`` and ``inject`` call these with the reader's ``View``; ``inject``
records what was injected (an ``injected`` event), the retrieval itself
(``retrieval.agent.retrieve``) writes nothing.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from retrieval import credentials, events
from retrieval.agent import trust
from retrieval.agent.echo import cited
from retrieval.agent.injection import Injection
from retrieval.agent.options import RetrievalOptions
from retrieval.agent.pending import PENDING, Overlay
from retrieval.agent.retrieve import Retrieved, block, rank, retrieve
from retrieval.agent.rewrite import CONTEXT_MESSAGES, keywords
from retrieval.agent.search import Hit
from retrieval.agent.stores import Messages, Stores
from retrieval.agent.view import View
from retrieval.config import MemoryConfig
from retrieval.disabled import is_disabled
from retrieval.spans import timed
from retrieval.text import QUERY_STOPWORDS


def redacted_context(context: str | Messages, pii: tuple[str, ...]) -> str | Messages:
    """The part of ``context`` retrieval reads (the last ``CONTEXT_MESSAGES`` messages),
    with credentials and personal data redacted, as the agent handed it over: the query,
    its rewrite and the ``injected`` event are all derived from it, so a secret in the
    conversation never reaches a rewrite (which splits ``a_b`` into ``a b``, past any
    rule), the LLM or the event log."""
    if isinstance(context, str):
        return credentials.redact(context, pii=pii)
    return [{**m, "content": credentials.redact(str(m.get("content", "")), pii=pii)}
            for m in list(context)[-CONTEXT_MESSAGES:]]


def pending_hits(stores: Stores, overlay: Overlay, view: View, config: MemoryConfig, query: str) -> list[Hit]:
    """What ``view``'s reader wrote with ``remember`` that the pipeline has not published
    yet and ``query`` is about, for its project (None: any)."""
    floor = float(config.injection.min_similarity)
    hits = overlay.matching(query, lambda: stores.embed(query) if query.strip() else None, view, floor=floor)
    corrections = stores.rows.corrections
    if not hits or not corrections:
        return hits
    out = []
    for hit in hits:  # the reader's word about a pending write counts at once, as about an item
        row = corrections.apply(dict(hit.row))
        if row["status"] == PENDING:
            out.append(hit if row["content"] == hit.content else replace(hit, content=row["content"], row=row))
    return out


def below_the_users_word(hits: list[Hit], claims: list[Hit]) -> list[Hit]:
    """``hits`` with each of another agent's ``claims`` placed right after the first line
    not itself a claim that shares a content word with it (the user's word on the same
    thing), else last."""
    out = list(hits)
    for claim in claims:
        words = _words(claim.content)
        at = next((i for i, h in enumerate(out) if not trust.claimed(h) and words & _words(h.content)), len(out) - 1)
        out.insert(at + 1, claim)
    return out


def _words(text: str) -> set[str]:
    return {w.lower() for w in keywords(text)} - QUERY_STOPWORDS


def search(stores: Stores, overlay: Overlay, view: View, config: MemoryConfig, options: RetrievalOptions,
           query: str, k: int, now: datetime) -> list[Hit]:
    """The ``k`` best items for ``query``, the reader's pending writes first, another
    agent's below the user's word on the same thing (not as of a
    past day: what was true then was published); none when the reader's memory is off
    (``memory disable``)."""
    if is_disabled(stores.paths, view.namespace):
        return []
    hits = rank(stores, view, config, options, query, k, now)[0]
    if view.as_of is not None:
        return hits
    pending = pending_hits(stores, overlay, view, config, query)
    if not pending:
        return hits
    own = [h for h in pending if not trust.claimed(h)]
    return below_the_users_word(own + hits, [h for h in pending if trust.claimed(h)])[:k]


def found(context: str | Messages, stores: Stores, overlay: Overlay, view: View, config: MemoryConfig,
          options: RetrievalOptions, now: datetime, *, max_items: int | None, budget_aware: bool | None) -> Retrieved:
    """What ``retrieve`` finds for ``context`` (already redacted), with the reader's
    pending writes the query is about ahead of it, flagged ``[pending]``."""
    out = retrieve(context, stores, config, options, now, view=view, max_items=max_items,
                   budget_aware=budget_aware)
    if view.as_of is None and (pending := pending_hits(stores, overlay, view, config, out.query.text)):
        # The reader's own pending words lead; another agent's pending claim follows the
        # user's word about the same thing, never above it.
        own = [h for h in pending if not trust.claimed(h)]
        out.hits = below_the_users_word(own + out.hits, [h for h in pending if trust.claimed(h)])
        out.flags.update({h.id: ["[pending]", *(["[from: agent]"] if trust.claimed(h) else [])] for h in pending})
        out.labels.update({h.id: h.row["ref"] for h in pending if h.row.get("ref")})  # a remember's short id
    return out


def inject(context: str | Messages, stores: Stores, overlay: Overlay, view: View, config: MemoryConfig,
           options: RetrievalOptions, now: datetime, *, pii: tuple[str, ...], max_items: int | None,
           token_budget: int | None, budget_aware: bool | None, session_id: str | None, record: bool) -> Injection:
    """The memory block for ``context`` (``MemoryClient.inject``): what ``found`` finds for
    it once redacted (``redacted_context``), as ``block`` renders it in ``token_budget``;
    ``record``: an ``injected`` event names the items it cites (never a reference). An
    empty block of tier ``disabled`` when the reader's memory is off (``memory disable``)."""
    with timed("inject"):
        if is_disabled(stores.paths, view.namespace):
            return Injection(text="", tier="disabled")
        out = found(redacted_context(context, pii), stores, overlay, view, config, options, now,
                    max_items=max_items, budget_aware=budget_aware)
        injection = block(out, config, now, token_budget=token_budget)
        if record and (injected := cited(injection.items)):
            events.record(stores.paths.events, "injected", injected, now, session_id=session_id,
                          payload={"tier": injection.tier, "query": out.query.text}, pii=pii)
        return injection
