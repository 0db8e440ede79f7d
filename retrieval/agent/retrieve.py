"""The retrieval core: ``retrieve(context, stores, config, options, now)`` → what to inject.

It reads the published stores and writes nothing: no event, no file. ``MemoryClient``
wires the stores and records what it injected; the evals and benchmarks call
``retrieve`` the same way. The steps (DESIGN.md, "Retrieval path"): rewrite the last
messages into a query; tier 1, category summary lines that answer it alone
(``tier1``); else tier 2, vector + full-text candidates fused, above the relevance
floor, scored, diversified, active items first (``rank``); then the trust pass
(conflicts, order, flags) and each line's short id.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import polars as pl

from retrieval import scoring
from retrieval.agent import sufficiency, trust
from retrieval.agent.candidates import candidates
from retrieval.agent.injection import Injection, build_block
from retrieval.agent.options import RetrievalOptions
from retrieval.agent.rewrite import SearchQuery, keywords
from retrieval.agent.search import Hit, fuse, to_hit, vectors_for
from retrieval.agent.stores import Messages, Stores, context_text
from retrieval.agent.view import RECALLABLE, View
from retrieval.citations import summary_lines
from retrieval.config import MemoryConfig
from retrieval.intent import ABOUT_SOMEONE
from retrieval.profiles import PROFILE_PREFIX, asked_about, profile_category
from retrieval.spans import spanned
from retrieval.text import sentiment as sentiment_of, tokens


@dataclass
class Retrieved:
    """What ``retrieve`` found: the answering tier, the hits in block order, each hit's
    trust flags and short-id label, the query searched, and how many lines the block may hold."""

    tier: str
    hits: list[Hit]
    flags: dict[str, list[str]] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    query: SearchQuery = field(default_factory=lambda: SearchQuery("", ""))
    cap: int = 10

def topic_of(terms: str, subjects: frozenset[str], attributes: Mapping[str, str] | None = None) -> tuple[str, ...] | None:
    """What a question asks about the people it names, as the first letters (``_STEM``)
    of its other words: "What coffee does Aaron like?" names Aaron (a capitalised word
    that is some candidate's ``subjects``; "July" and "North Carolina" are no one) and
    asks about coffee, ``("coff",)``. An attribute adds the relation it is stored as
    ("manager" → ``reports_to``: ``[graph] attributes``). None when it names no one or
    asks nothing else ("What attributes describe John?" asks about John:
    ``retrieval.intent.ABOUT_SOMEONE``)."""
    words = keywords(terms)
    names = {w.lower() for w in words if w[:1].isupper() and w.lower() in subjects}
    content = [w.lower() for w in words if w.lower() not in names and w.lower() not in ABOUT_SOMEONE and not w[:1].isdigit()]
    if not names or not content:
        return None
    content += [(attributes or {})[w] for w in content if w in (attributes or {})]
    return tuple(dict.fromkeys(w[:_STEM] for w in content))


# A question's word matches an item's word that begins with its first letters
# ("research" ~ "researching", "hobby" ~ "hobbies").
_STEM = 4


def _about(row: Mapping[str, Any], stems: tuple[str, ...]) -> bool:
    """The line is about the topic: a word of it (one that begins with one of ``stems``)
    is in its content or names its relation or subject (the fields extraction wrote:
    "Wojciech moved to Busan" is ``lives_in``, about "Where does Wojciech live?")."""
    said = f"{row.get('content') or ''} {(row.get('relation') or '').replace('_', ' ')} {row.get('subject_key') or ''}"
    return any(w.lower().startswith(stems) for w in tokens(said))


def _answering_first(groups: dict[str, list[tuple[float, float, dict[str, Any]]]],
                     lists: dict[str, list[dict[str, Any]]], terms: str,
                     config: MemoryConfig) -> dict[str, list[tuple[float, float, dict[str, Any]]]]:
    """``groups`` (status → scored rows) in the order the block takes them: active, then
    archived, then cold; but when an archived or cold line answers a question about
    someone (it is about the question's topic, ``topic_of``), the active lines about the
    topic, then those archived ones, then the rest. The topic is read only when some
    archived or cold line is a candidate."""
    if not any(groups[s] for s in RECALLABLE if s != "active"):
        return groups
    stems = topic_of(terms, frozenset(scoring.subject_of(r["content"]) for rows in lists.values() for r in rows),
                     config.graph.attributes)
    if stems is None:
        return groups
    split = {s: ([e for e in groups[s] if _about(e[2], stems)], [e for e in groups[s] if not _about(e[2], stems)])
             for s in RECALLABLE}
    answering = [e for s in RECALLABLE if s != "active" for e in split[s][0]]
    if not answering:
        return groups
    return {"active": split["active"][0], "answering": answering, "others": split["active"][1],
            **{s: split[s][1] for s in RECALLABLE if s != "active"}}


def _relevant(config: MemoryConfig, options: RetrievalOptions,
              lists: dict[str, list[dict[str, Any]]]) -> Callable[[str], bool]:
    """The relevance floor: an item the query is about has a cosine to it of at least
    ``[injection] min_similarity``, or full-text search matched it on a query word.
    Fused relevance is relative (the best row is always 1.0), so it cannot tell "the
    best of the relevant" from "the best of nothing"; this is the absolute test.

    (A line that matches only the person a question names still passes: tried and
    measured in docs/retrieval.md, "What the floor does not do yet".)"""
    if not options.relevance_floor:
        return lambda item_id: True
    floor = float(config.injection.min_similarity)
    close = {r["id"] for r in lists.get("vector", []) if 1.0 - float(r.get("_distance", 1.0)) >= floor}
    # An item the graph reached is about an entity the query names.
    matched = {r["id"] for r in lists.get("fts", [])} | {r["id"] for r in lists.get("graph", [])}
    return lambda item_id: item_id in close or item_id in matched


@spanned("tier 2")
def rank(stores: Stores, view: View, config: MemoryConfig, options: RetrievalOptions, query: str, k: int,
         now: datetime, sentiment: str = "neutral", terms: str | None = None, message: str = ""
         ) -> tuple[list[Hit], Callable[[list[int]], np.ndarray] | None]:
    """Tier 2: the ``k`` best hits above the relevance floor: active items first, then,
    while the block is not full, archived and then cold ones (× ``[injection]
    archived_multiplier`` / ``cold_multiplier``, tagged by the trust pass); and a
    function that reads the stored vectors of the hits at given positions (for the
    conflict check; None without hits)."""
    if not query.strip() or not stores.searchable():
        return [], None
    lists = candidates(stores, view, options, query, max(int(config.ranking.candidates), k), terms)
    fused = fuse(lists, {"graph": float(config.graph.weight)})
    if not fused:
        return [], None
    relevant = _relevant(config, options, lists)
    top = fused[0][1]
    # The names the query uses, for the subject modifier (scoring only).
    names = scoring.names_in(keywords(query if terms is None else terms)) if options.scoring else frozenset()
    # "When …?" and "How many …?" are answered by a time or a number: a line holding one
    # is the likelier answer (sufficiency.answers).
    asks = sufficiency.asked(message) if options.scoring and message else None
    typed = asks if asks in ("time", "number") else None
    cfg = config.injection
    penalty = {"active": 1.0, "archived": float(cfg.archived_multiplier), "cold": float(cfg.cold_multiplier)}
    groups: dict[str, list[tuple[float, float, dict[str, Any]]]] = {status: [] for status in RECALLABLE}
    for row, rrf in fused:
        if not relevant(row["id"]):
            continue
        relevance = rrf / top
        status = row.get("status") or "active"
        if status == "superseded":
            # Seen only as of a day it held (``View.held``), or when the query asks about
            # what was before ("what did I use before Neovim?"): ranked like an archived item.
            status = "active" if view.as_of is not None else "archived"
        if options.scoring:
            # An archived item is scored as it was when active, then ranked below.
            memory = scoring.memory_score(config, {**row, "status": "active"}, now)
            score = scoring.rank_score(config, relevance, memory,
                                       sentiment_match=sentiment != "neutral" and row.get("sentiment") == sentiment,
                                       subject_match=bool(names) and scoring.subject_of(row["content"]) in names,
                                       answer_match=typed is not None and sufficiency.answers(row["content"], typed, message))
        else:
            score = relevance
        off_domain = 1.0 if view.owns(row) else view.shared_penalty
        groups[status].append((score * penalty[status] * off_domain, relevance, row))
    hits: list[Hit] = []
    groups = _answering_first(groups, lists, terms if terms is not None else query, config)
    for status in groups:
        if len(hits) >= k:
            break
        scored = sorted(groups[status], key=lambda s: -s[0])
        if options.scoring:
            picked = scoring.diversify(config, [(s, (rel, row)) for s, rel, row in scored],
                                       [scoring.source_turns(row) for _, _, row in scored], k - len(hits))
            hits += [to_hit(row, relevance, score) for score, (relevance, row) in picked]
        else:
            hits += [to_hit(row, relevance, score) for score, relevance, row in scored[:k - len(hits)]]

    def vectors(positions: list[int]) -> np.ndarray:
        """The vectors of the hits at ``positions`` (only when asked): the stored ones from a
        local root; on object storage, where reading a row is a request away (1.2 s p50 on
        moto at 100k items), the local model's vectors of their contents, as it embedded
        them (within cosine 0.999 of the stored ones)."""
        chosen = [hits[p] for p in positions]
        index = stores.read_index()
        rows = stores.rows.positions([h.id for h in chosen]) if index is not None else [None]
        if index is not None and None not in rows:
            return index.vectors(rows)  # type: ignore[arg-type]
        if not stores.paths.is_local and stores.embedder.provider == "local":
            return stores.embedder.embed([h.content for h in chosen])
        return vectors_for(stores.table(), [h.row.get("_rowid") for h in chosen], [h.id for h in chosen])

    return hits, (vectors if hits else None)


@spanned("tier 1")
def tier1(stores: Stores, view: View, config: MemoryConfig, query: str, terms: str, message: str) -> list[Hit] | None:
    """Category summary lines that answer the query alone, or None when tier 2 must run.

    Sufficient means a summary is close to the query (cosine ≥ ``summary_sufficient``)
    and one of its lines answers what the latest ``message`` asks
    (``retrieval.agent.sufficiency``: the line alone holds ``summary_coverage`` of the
    query's terms and, for a question, an answer of the kind asked). Only such lines
    are served, most terms first, each with the items it cites
    (``retrieval.citations``): their ids (``row["item_ids"]``), source turns and
    lowest confidence; a line citing an item the reader may not see (no longer active,
    another namespace or scope) is not.
    """
    kind = sufficiency.asked(message)
    side = stores.side("summaries") if kind != "open" else None
    if side is None:
        return None
    words = sorted({t.lower() for t in keywords(terms)}, key=len, reverse=True)
    if not words:
        return None
    rows = side.nearest(stores.embed(query), 3, ~pl.col("category").str.starts_with(PROFILE_PREFIX))
    if not rows:
        return None
    best = 1.0 - float(rows[0]["_distance"])
    if best < float(config.injection.summary_sufficient):
        return None
    coverage = float(config.injection.summary_coverage)
    # A term matches at the start of a word: "start" finds "started", not "restart".
    term = re.compile(r"\b(?:" + "|".join(re.escape(t) for t in words) + ")")
    stores.current()  # refreshes the items snapshot the citations are looked up in
    hits = []
    for row in rows:
        lines = []
        for line, ids in summary_lines(row.get("markdown") or ""):
            covered = sufficiency.on_topic(line, term, len(words), coverage)
            if covered is not None and ids and sufficiency.answers(line, kind, message):
                lines.append((covered, line, ids))
        lines.sort(key=lambda c: -c[0])
        served = 0
        for _, line, ids in lines:
            if served == 3 or (items := _visible_citations(stores, view, ids)) is None:
                continue
            served += 1
            hits.append(_summary_hit(row, line, ids, items, len(hits), best))
    return _with_counterparts(stores, view, hits, best) if hits else None


def profile_tier(stores: Stores, view: View, message: str, cap: int) -> list[Hit] | None:
    """An entity's profile lines, when ``message`` asks about the entity as a whole
    (``retrieval.profiles``): the entity is looked up by name in the reader's namespace,
    and a line is served only when the reader may see every item it cites."""
    name = asked_about(message)
    return None if name is None else profile_lines(stores, view, name, cap)


def profile_lines(stores: Stores, view: View, name: str, cap: int) -> list[Hit] | None:
    """The profile of the entity called ``name`` (or an alias) in the reader's namespace,
    as lines (with the active items that contradict them), or None: no such entity or no
    line the reader may see."""
    side = stores.side("summaries")
    stores.current()  # the items snapshot and the graph, as published
    if side is None:
        return None
    entities = stores.graph.named(name, view.namespace)
    if not entities:
        return None
    rows = side.rows(pl.col("category").is_in([profile_category(e) for e in sorted(entities)]))
    hits: list[Hit] = []
    for row in sorted(rows, key=lambda r: r["category"]):
        for line, ids in summary_lines(row.get("markdown") or ""):
            if ids and (items := _visible_citations(stores, view, ids)) is not None:
                hits.append(_summary_hit(row, line, ids, items, len(hits), 1.0))
            if len(hits) >= cap:
                break
    return _with_counterparts(stores, view, hits, 1.0) if hits else None


def _visible_citations(stores: Stores, view: View, ids: list[str]) -> list[dict[str, Any]] | None:
    """The items a summary line cites, or None when the reader may not see one of them
    (no longer active, another namespace or scope) or one was reworded since it was
    written: then the line is not served."""
    found = stores.rows.rows(ids)
    items = [found.get(i) for i in ids]
    if any(stores.rows.corrections.reworded(i) for i in ids):
        return None  # the line quotes an old wording the user has just corrected
    return items if all(item is not None and view.visible(item) for item in items) else None


def _summary_hit(row: Mapping[str, Any], line: str, ids: list[str], items: list[Any], n: int, best: float) -> Hit:
    """A summary line as a hit: the items it cites lend it their importance (highest),
    confidence (lowest), sources and contradictions."""
    return Hit(
        id=f"summary:{row['category']}:{n}", content=line, category=row["category"],
        importance=max(float(i["importance"]) for i in items),
        confidence=min(float(i["confidence"]) for i in items), source_trust="trusted",
        session_id=str(items[0]["session_id"]),
        source_resource_ids=list(dict.fromkeys(r for i in items for r in i["source_resource_ids"] or [])),
        source_turn_ids=list(dict.fromkeys(t for i in items for t in i["source_turn_ids"] or [])),
        relevance=best, score=best,
        row={"updated_at": row.get("updated_at"), "item_ids": ids, "status": "active",
             "created_at": max((i["created_at"] for i in items if i.get("created_at")), default=None),
             "contradicts": list(dict.fromkeys(c for i in items for c in i.get("contradicts") or []))})


def _with_counterparts(stores: Stores, view: View, lines: list[Hit], relevance: float) -> list[Hit]:
    """Summary lines, each followed by the active items that contradict what it cites
    (and no line cites): the trust pass then flags both sides, as it does in tier 2,
    instead of tier 1 stating one side with no doubt."""
    cited = {i for hit in lines for i in trust.item_ids(hit)}
    out: list[Hit] = []
    for hit in lines:
        out.append(hit)
        others = [i for i in hit.row.get("contradicts") or [] if i not in cited]
        for item_id, row in stores.rows.rows(others).items():
            if view.visible(row):
                cited.add(item_id)
                out.append(to_hit(row, relevance, relevance))
    return out


def labels(stores: Stores, hits: Sequence[Hit]) -> dict[str, str]:
    """hit id → the short id(s) its line shows (``[m:4821]``; a summary line shows the
    items it cites)."""
    short = stores.rows.short_ids
    return {h.id: ", ".join(short.short(i) for i in trust.item_ids(h)) for h in hits}


def retrieve(context: str | Messages, stores: Stores, config: MemoryConfig, options: RetrievalOptions,
             now: datetime, *, view: View = View(), max_items: int | None = None,
             budget_aware: bool | None = None) -> Retrieved:
    """What the block for ``context`` should hold, as of ``now``; writes nothing.

    ``max_items`` caps the lines (default ``[injection] max_items``; budget-aware: at
    most ``budget_max_items`` and no costly path, neither the LLM rewrite nor tier 1).
    """
    cfg = config.injection
    frugal = options.budget_aware if budget_aware is None else budget_aware
    cap = int(max_items or (cfg.budget_max_items if frugal else cfg.max_items))
    if frugal:
        cap = min(cap, int(cfg.budget_max_items))
    query = stores.query(context, options, frugal)
    tier, hits, vectors = "items", None, None
    if options.tiers and not frugal and view.as_of is None:
        hits = profile_tier(stores, view, context_text(context, last=1), cap)
        tier = "profile"
        if not hits:
            hits = tier1(stores, view, config, query.text, query.terms, context_text(context, last=1))
            tier = "summaries" if hits else "items"
    if not hits:
        hits, vectors = rank(stores, view, config, options, query.text, cap, now, sentiment_of(context_text(context)),
                             query.terms, context_text(context, last=1))
    pairs = trust.conflicts(hits, vectors, float(cfg.conflict_similarity), float(cfg.change_conflict_similarity))
    hits = trust.order(hits, pairs)
    rules = triggered(stores, view, options, context, cap)
    if rules:
        ids = {h.id for h, _ in rules}
        hits = [h for h, _ in rules] + [h for h in hits if h.id not in ids]
    flags = trust.flags(hits, config, now, pairs=pairs, view=view)
    for hit, patterns in rules:
        flags[hit.id] = [f"[rule: {', '.join(patterns[:3])}]", *flags.get(hit.id, [])]
    return Retrieved(tier=tier, hits=hits, flags=flags, labels=labels(stores, hits), query=query, cap=cap)


def triggered(stores: Stores, view: View, options: RetrievalOptions, context: str | Messages,
              cap: int) -> list[tuple[Hit, list[str]]]:
    """The negative rules the context's words trigger (``retrieval.agent.triggers``), as hits
    to lead the block with, and the patterns each matched. None as of a past day."""
    limit = min(int(stores.config.injection.max_triggered), cap)
    if not options.triggers or view.as_of is not None or limit <= 0:
        return []
    stores.current()  # the snapshot as of the last publish
    index = stores.read_index()
    stores.negatives.load(stores.rows.key, stores.rows.frame, index.forms if index is not None else None)
    found = stores.negatives.matching(context_text(context), view.visible, limit)
    return [(to_hit(row, 1.0, 1.0), patterns) for row, patterns in found]


def block(found: Retrieved, config: MemoryConfig, now: datetime, *, token_budget: int | None = None) -> Injection:
    """The memory block for what ``retrieve`` found: at most ``found.cap`` lines within
    ``token_budget`` (default ``[injection] token_budget``), each with its flags and short id."""
    cfg = config.injection
    text, kept, tokens = build_block(found.hits, header=cfg.header, now=now, max_items=found.cap,
                                     token_budget=int(token_budget or cfg.token_budget), flags=found.flags,
                                     labels=found.labels)
    return Injection(text=text, items=kept, tier=found.tier if kept else "none", tokens=tokens,
                     query=found.query.text, terms=found.query.terms,
                     flags={h.id: found.flags.get(h.id, []) for h in kept},
                     labels={h.id: found.labels[h.id] for h in kept if h.id in found.labels})
