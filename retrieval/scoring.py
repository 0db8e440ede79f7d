"""One formula, one place (DESIGN principle 5): how much a memory is worth right now.

Both the pipeline (importance at write time, decay at night) and retrieval (ranking at
injection time) call these functions; every constant comes from ``defaults.toml``.

How each design rule maps into the one formula::

    base importance  = category weight                      [categories.*.weight]
                     + 0.2 if the user said "remember this" [importance.remember_boost]
                     + 0.15 if action is required / overdue [importance.action_required_boost]
                     × 0.5 if the source is untrusted       [importance.untrusted_multiplier]
                     capped at 0.5 when untrusted, at 1.0 otherwise
    confidence       = 0.9 explicit / 0.7 implied / 0.5 inferred   [confidence.*]
    recency decay    = 0.5 ** (days / half-life(kind, strength))   [decay.half_life_days]
                       (permanent tier: 1.0, never decays)
    score decay      = exp(-0.01 · days since last reference)       [decay.score_decay_per_day]
    reinforcement    = exp(0.2 · score), reinforce +3, demote −1    [decay.reinforce_step …]

    lifecycle        = 1 + retrieval_priority (today's boost, echo +0.1, fizzle −0.05);
                       0 unless the item is active (superseded/archived/purged never rank)
    trust            = 0.7 for untrusted sources                     [ranking.untrusted_multiplier]

    memory score     = base importance × recency decay × score decay
                       × confidence × reinforcement × lifecycle × trust
    rank             = relevance × max(memory score, 0.01) ** 0.25 × 1.1 if the sentiment matches
                              [ranking.memory_floor, ranking.memory_weight, ranking.sentiment_match]
                       × 1.25 if the item's subject is a name the query uses
                              [ranking.subject_match]
                       × 0.5 per item ranked above it from one of its source turns
                              [ranking.same_source_penalty]

With memory_weight = 1 and no floor the rank is the literal product of every factor; the
defaults let relevance lead and the lifecycle break ties (see the README's ablation table).

Time, defined once each::

    age_of(row)      = days since a user last confirmed it, else since it was said:
                       the block's "age:", [stale], the health report
    is_stale(row)    = age_of > 90 days                              [decay.stale_after_days]
    idle_days(row)   = days since the memory last used it (or learned it): the decays above
    preload_boost(p) = min(0.5, p + 0.1): an item created today, or on its trigger's day
                              [lifecycle.today_boost, lifecycle.priority_cap]

Which side of a conflict to believe::

    belief(confidence, said_at) = the higher confidence, then the later statement:
                       the trust pass's order, tier 1 and the offline summaries
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import TypeVar

from retrieval.config import MemoryConfig
from retrieval.text import TOKEN

T = TypeVar("T")


def base_importance(config: MemoryConfig, category: str, *, source_trust: str = "trusted",
                    remember: bool = False, action_required: bool = False) -> float:
    """Importance at write time, from the category weight and the extractor's flags."""
    imp = config.category(category).weight
    if remember:
        imp += config.importance.remember_boost
    if action_required:
        imp += config.importance.action_required_boost
    imp = min(imp, 1.0)
    if source_trust == "untrusted":
        imp = min(imp * config.importance.untrusted_multiplier, config.importance.untrusted_cap)
    return round(imp, 4)


def confidence(config: MemoryConfig, strength: str) -> float:
    return config.confidence_for(strength)


def half_life_days(config: MemoryConfig, kind: str, strength: str) -> float:
    if strength == "inferred":
        return float(config.decay.inferred_half_life_days)
    return float(config.decay.half_life_days.get(kind, config.decay.half_life_days["fact"]))


def recency_decay(config: MemoryConfig, *, tier: str, kind: str, strength: str, age_days: float) -> float:
    """Half-life decay by kind; the permanent tier never decays."""
    if tier == "permanent":
        return 1.0
    return 0.5 ** (max(age_days, 0.0) / half_life_days(config, kind, strength))


def score_decay(config: MemoryConfig, days_since_reference: float) -> float:
    return math.exp(-config.decay.score_decay_per_day * max(days_since_reference, 0.0))


def reinforcement(config: MemoryConfig, score: float) -> float:
    return math.exp(config.decay.reinforcement_rate * score)


def belief(confidence: float, stated_at: datetime | None) -> tuple[float, float]:
    """How to pick the side of a conflict to believe: the higher confidence, then the
    later statement. Tier 2, tier 1 and the offline summaries all compare with this."""
    return float(confidence), stated_at.timestamp() if stated_at is not None else float("-inf")


def age_days(then: datetime | None, now: datetime) -> float:
    if then is None:
        return 0.0
    return max((now - then).total_seconds() / 86400.0, 0.0)


def memory_score(config: MemoryConfig, row: dict, now: datetime) -> float:
    """Everything but relevance: importance × recency × score decay × confidence ×
    reinforcement × lifecycle × trust. ``row`` is an item row (dict)."""
    days = idle_days(row, now)
    value = (
        float(row.get("importance") or 0.0)
        * recency_decay(config, tier=row.get("tier") or "standard", kind=row.get("kind") or "fact",
                        strength=row.get("strength") or "explicit", age_days=days)
        * score_decay(config, days)
        * float(row.get("confidence") or 0.0)
        * reinforcement(config, float(row.get("reinforcement") or 0.0))
        * lifecycle_multiplier(row)
    )
    if row.get("source_trust") == "untrusted":
        value *= config.ranking.untrusted_multiplier
    return value


def lifecycle_multiplier(row: dict) -> float:
    """Today's boost and echo/fizzle live in ``retrieval_priority``; only active items count."""
    if (row.get("status") or "active") != "active":
        return 0.0
    return max(0.0, 1.0 + float(row.get("retrieval_priority") or 0.0))


def rank_score(config: MemoryConfig, relevance: float, memory: float, *, sentiment_match: bool = False,
               subject_match: bool = False, answer_match: bool = False) -> float:
    """The one ranking formula: relevance × memory_score^w × sentiment, subject and
    answer-type modifiers."""
    floor = float(config.ranking.memory_floor) or 1e-12
    value = relevance * (max(memory, floor) ** config.ranking.memory_weight)
    if sentiment_match:
        value *= config.ranking.sentiment_match
    if subject_match:
        value *= config.ranking.subject_match
    if answer_match:
        value *= config.ranking.answer_match
    return value


def subject_of(content: str) -> str:
    """The word an item's content opens with, lowercased, a possessive dropped: "Nate"
    for "Nate's turtles love the sun" and for "Nate said: …"."""
    found = TOKEN.match(content.lstrip())
    word = found.group(0) if found and found.group(0)[0].isalpha() else ""
    return word.lower().removesuffix("'s").removesuffix("’s")


def names_in(terms: Sequence[str]) -> frozenset[str]:
    """The names among a query's keywords (``retrieval.agent.rewrite.keywords``: stopwords such
    as a capitalised "What" are already gone), lowercased: what ``subject_of`` is matched
    against. "What did Nate share with Joanna?" names Nate and Joanna, so a fact about
    either outranks an equally relevant one about someone else."""
    return frozenset(t.lower() for t in terms if t[:1].isupper())


def source_turns(row: dict) -> list[str]:
    """The turns an item was extracted from (resource ids; LoCoMo-style turn ids without them)."""
    return list(row.get("source_resource_ids") or row.get("source_turn_ids") or [])


def diversify(config: MemoryConfig, scored: Sequence[tuple[float, T]], turns: Sequence[Sequence[str]],
              k: int) -> list[tuple[float, T]]:
    """The best ``k`` of ``scored`` (score, anything) when each pick from an already
    represented source turn counts less: an entry's score × ``same_source_penalty`` per
    entry already picked that shares one of its ``turns`` (greedy, best adjusted score
    first). Several facts cut from one turn then fill one slot, not five, and the block
    covers more of the conversation.  [ranking.same_source_penalty]

    Returns (adjusted score, item) pairs, best first; ``scored`` must be best first.
    """
    penalty = float(config.ranking.same_source_penalty)
    sources = [frozenset(t) for t in turns]
    left = list(range(len(scored)))
    picked: list[tuple[float, T]] = []
    picked_sources: list[frozenset[str]] = []
    while left and len(picked) < k:
        best, best_at = -math.inf, 0
        for at, i in enumerate(left):
            raw = scored[i][0]
            if raw <= best:
                break  # best first, and a penalty only lowers: nothing further can win
            repeats = sum(1 for p in picked_sources if p & sources[i]) if sources[i] else 0
            value = raw * penalty ** repeats
            if value > best:
                best, best_at = value, at
        i = left.pop(best_at)
        picked.append((best, scored[i][1]))
        picked_sources.append(sources[i])
    return picked


# --- The nightly lifecycle (memory_assets/lib/lifecycle) -----------------------------
# Applied to the items consolidate() rebuilds every run, whose importance and confidence
# are the *base* values the facts give. Each value below is derived from a base value,
# the feedback counters and timestamps — never accumulated — so running the same night
# twice at the same ``now`` changes nothing.


def last_used_at(row: dict) -> datetime | None:
    """When a user last confirmed the item (reinforce, update), else when a transcript
    last stated it (a re-statement merges into the newer item). Injection is not use, and
    neither is ``updated_at``: the pipeline itself bumps it (supersession, archiving)."""
    if row.get("last_referenced_at"):
        return row["last_referenced_at"]
    # Counted from when the memory learned it: a backfilled 2023 transcript starts fresh.
    seen = [t for t in (row.get("created_at"), row.get("first_seen_at")) if t is not None]
    return max(seen) if seen else None


def _said_at(row: dict) -> datetime | None:
    return row.get("last_referenced_at") or row.get("created_at")


def age_of(row: dict, now: datetime) -> float:
    """How old what an item says is, in days: since a user last confirmed it
    (``last_referenced_at``), else since it was said (``created_at``, the turn's time).
    The one definition of an item's age: the block's ``age:``, the trust pass's
    ``[stale]`` and the health report read it, so they agree about one item. (Decay reads
    ``idle_days`` instead: how long the memory has gone unused since it learned the fact,
    so a backfilled 2023 transcript is old news but does not start out decayed.)"""
    return age_days(_said_at(row), now)


def idle_days(row: dict, now: datetime) -> float:
    """Days since the memory last used the item (``last_used_at``): what recency decay,
    score decay and the weekly importance decay count."""
    return age_days(last_used_at(row), now)


def is_stale(config: MemoryConfig, row: dict, now: datetime) -> bool:
    """Not confirmed for more than ``[decay] stale_after_days``: the block tags it ``[stale]``."""
    return _said_at(row) is not None and age_of(row, now) > config.decay.stale_after_days


def weeks_unreferenced(row: dict, now: datetime) -> int:
    return int(idle_days(row, now) // 7)


def lifecycle_importance(config: MemoryConfig, row: dict, now: datetime) -> float:
    """Base importance (``row["importance"]``) after reinforcement and decay:

    × 1.1 per user-confirmed reference (``reference_count``; injection never counts),
    capped at 1.0 — at ``importance.untrusted_cap`` for untrusted sources — then
    × 0.95 (standard) / 0.80 (transient) per whole week since the last reference or
    creation; the permanent tier never decays.  [lifecycle.reinforce_multiplier, weekly_decay]
    """
    cap = float(config.importance.untrusted_cap) if row.get("source_trust") == "untrusted" else 1.0
    reinforced, decayed = _importance_factors(config, row, now)
    return round(min(cap, float(row.get("importance") or 0.0) * reinforced) * decayed, 6)


def _importance_factors(config: MemoryConfig, row: dict, now: datetime) -> tuple[float, float]:
    """(× reinforcement, × decay) that ``lifecycle_importance`` applies to a base importance."""
    cfg = config.lifecycle
    reinforced = float(cfg.reinforce_multiplier) ** int(row.get("reference_count") or 0)
    tier = row.get("tier") or "standard"
    if tier == "permanent":
        return reinforced, 1.0
    weekly = cfg.weekly_decay
    return reinforced, float(weekly.get(tier, weekly["standard"])) ** weeks_unreferenced(row, now)


def base_scores(config: MemoryConfig, row: dict, now: datetime, *, confirmed: bool,
                contradicted: bool) -> tuple[float, float]:
    """The base (importance, confidence) that ``lifecycle_importance`` and
    ``lifecycle_confidence`` turned into a scored row's own as of ``now``: their inverse.

    An item that arrives already scored (``memory import`` of another data root's export)
    gets its base back, so the lifecycle reinforces, decays and confirms it once, not twice.
    A value at a cap or a bound reads back as the smallest base that reaches it, which
    the forward formulas turn into the same value again.
    """
    reinforced, decayed = _importance_factors(config, row, now)
    factor = reinforced * decayed
    importance = float(row.get("importance") or 0.0)
    base_importance = min(1.0, importance / factor) if factor > 0 else importance
    cfg = config.lifecycle
    confidence = float(row.get("confidence") or 0.0)
    confidence -= float(cfg.confirm_bonus) if confirmed else 0.0
    confidence += float(cfg.contradiction_penalty) if contradicted else 0.0
    return round(base_importance, 6), round(min(1.0, max(0.0, confidence)), 6)


def lifecycle_confidence(config: MemoryConfig, confidence: float, *, confirmed: bool, contradicted: bool) -> float:
    """Base confidence + 0.1 when another session states the same fact, − 0.2 while a
    contradiction is unresolved, within [0, 1].  [lifecycle.confirm_bonus, contradiction_penalty]"""
    cfg = config.lifecycle
    value = confidence + (float(cfg.confirm_bonus) if confirmed else 0.0)
    value -= float(cfg.contradiction_penalty) if contradicted else 0.0
    return round(min(1.0, max(0.0, value)), 6)


def created_today(row: dict, now: datetime) -> bool:
    """Created in the 24 hours before ``now``: today's items get a retrieval boost."""
    created = row.get("created_at")
    return created is not None and 0.0 <= (now - created).total_seconds() < 86400.0


def preload_boost(config: MemoryConfig, priority: float = 0.0) -> float:
    """``priority`` raised by today's boost, within the cap: an item created in the last
    24 h, or on its forward trigger's day, surfaces unasked.  [lifecycle.today_boost, priority_cap]"""
    return min(config.lifecycle.priority_cap, priority + config.lifecycle.today_boost)


def retrieval_priority(config: MemoryConfig, row: dict, now: datetime) -> float:
    """The lifecycle multiplier's input: +0.1 for an item created in the last 24 h
    (``preload_boost``), +0.1 per reply that used it (echo), −0.05 per reply that ignored
    it (fizzle), within ±0.5.  [lifecycle.today_boost, echo_boost, fizzle_penalty, priority_cap]"""
    cfg = config.lifecycle
    value = preload_boost(config) if created_today(row, now) else 0.0
    value += float(cfg.echo_boost) * int(row.get("echo_count") or 0)
    value -= float(cfg.fizzle_penalty) * int(row.get("fizzle_count") or 0)
    cap = float(cfg.priority_cap)
    return round(max(-cap, min(cap, value)), 6)


def effective_score(config: MemoryConfig, row: dict) -> float:
    """What an item is still worth keeping, on a row the lifecycle has scored (importance
    already reinforced and decayed, confidence already adjusted): importance × confidence
    × exp(0.2 · reinforcement score). Below ``lifecycle.purge_below`` the item is purged.
    (Ranking uses ``memory_score``; this is the keep-or-purge measure, with no relevance,
    recency or trust factor: time is already in the decayed importance.)"""
    return (float(row.get("importance") or 0.0) * float(row.get("confidence") or 0.0)
            * reinforcement(config, float(row.get("reinforcement") or 0.0)))
