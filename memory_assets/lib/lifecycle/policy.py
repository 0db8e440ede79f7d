"""The nightly "sleep": boosts, contradictions, reinforcement, decay, confidence, purge,
expiry and promotion over the item set, in one pass (``apply``), plus the weekly and
monthly transitions (``archive_unaccessed``, ``to_cold``).

The formulas live in ``retrieval.scoring``; this module decides which rule runs when and
which status follows. Two properties hold for every rule:

* **Derived, not accumulated.** ``apply`` receives items as ``consolidate`` rebuilds them:
  ``importance`` and ``confidence`` are the *base* values the facts give (consolidate
  recomputes them every run and does not carry them), and the feedback counters are
  replayed from the event log. Scores are computed from those and from timestamps, so a
  second run of the same night at the same ``now`` changes nothing. (If the frame has
  ``base_importance`` / ``base_confidence`` columns, those are the base instead, and
  ``apply`` can then run on its own output.)
* **Status only moves forward, only from ``active``.** Superseded, archived, cold and
  purged items keep their status; nothing is deleted (the caller writes purged items to
  an archive table). ``updated_at`` is set to ``now`` on a row whose state changed
  (status, supersession, contradictions, promotion, expiry) — not when a derived score
  moved, or decay would make every item look freshly updated.

Order of ``apply`` and why:

1. retrieval priority (today's boost, echo/fizzle) — depends on nothing else;
2. contradictions and supersession — they change status and feed the confidence
   penalty, so they run first, among the items active as the night starts;
3. importance: reinforcement, then decay — purge and promotion read it;
4. confidence: confirmation bonus, contradiction penalty — purge and speculative
   expiry read it;
5. purge — what decayed to nothing goes to the purge archive before expiry, so the
   archived set (the input of archive insights) holds items that mattered once;
6. expiry: category TTL, speculative TTL;
7. promotion — last, so nothing retired tonight is promoted.

"Used" (for decay, TTL, archive and cold) is ``scoring.last_used_at``: the last
user-confirmed reference, else creation. Injection is *not* use: an item that keeps
getting injected because it resembles chatter, but that no user ever confirms, must be
able to expire — otherwise recalled junk keeps itself alive (DESIGN principle 7's loop).
Items also carry no injection timestamp, only a count. ``updated_at`` is not use either:
the pipeline itself bumps it when it supersedes or archives.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import polars as pl

from memory_assets.lib.lifecycle import contradictions
from memory_assets.lib.lifecycle.contradictions import Neighbors
from retrieval import scoring
from retrieval.config import MemoryConfig
from retrieval.spans import spanned
from retrieval.text import opposed


# --- what one pass did --------------------------------------------------------------------

# Every action a pass can take, in the order ``apply`` takes them (then the weekly and
# monthly transitions). Scores are derived afresh each night, so their counts say how
# many active items the rule touches tonight; status changes count what changed tonight.
ACTIONS = (
    "boosted",              # created in the last 24 h: today's retrieval boost
    "superseded",           # a newer item that says it replaces this one
    "contradicted",         # flagged against another item, on both sides
    "reinforced",           # importance × 1.1 per user-confirmed reference
    "decayed",              # importance × weekly decay, one or more unreferenced weeks
    "confirmed",            # confidence + bonus: stated in more than one session
    "penalized",            # confidence − penalty: an unresolved contradiction
    "candidate_confirmed",  # below the usefulness bar, now stated in another session: active
    "candidate_expired",    # below the usefulness bar, unconfirmed for speculative_ttl_days
    "purged",               # effective score below lifecycle.purge_below (never the permanent tier)
    "expired",              # category TTL passed without a reference
    "speculative_expired",  # low confidence, unconfirmed for speculative_ttl_days
    "promoted",             # into MEMORY.md
    "archived",             # weekly: not used for archive_after_days
    "cold",                 # monthly: not used for cold_after_days
)


@dataclass
class LifecycleReport:
    """Counts and ids per action (see ``ACTIONS``); every action is present, zero or not."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ACTIONS, 0))
    ids: dict[str, list[str]] = field(default_factory=lambda: {a: [] for a in ACTIONS})

    def record(self, action: str, item_id: str) -> None:
        self.counts[action] += 1
        self.ids[action].append(item_id)

    def add(self, other: "LifecycleReport") -> None:
        """Fold ``other``'s counts and ids into this report (a sweep after the night's pass)."""
        for action, count in other.counts.items():
            self.counts[action] += count
            self.ids[action].extend(other.ids[action])

    def metadata(self, sample: int = 20) -> dict[str, Any]:
        """For a Dagster materialization: every count, and up to ``sample`` ids per action taken."""
        return {"counts": dict(self.counts),
                "ids": {a: ids[:sample] for a, ids in self.ids.items() if ids}}


# --- promotion into MEMORY.md --------------------------------------------------------------
# An item is promoted when it is important and users confirmed it repeatedly — above
# ``lifecycle.promote_importance`` (0.8) with at least ``promote_references`` (3)
# user-confirmed references; untrusted items need 0.9 and 5. Injection is never a
# reference, so being shown often promotes nothing.

def should_promote(config: MemoryConfig, row: dict) -> bool:
    """``row`` is scored: its importance is already reinforced and decayed."""
    cfg = config.lifecycle
    untrusted = row.get("source_trust") == "untrusted"
    importance_bar = cfg.promote_importance_untrusted if untrusted else cfg.promote_importance
    references_bar = cfg.promote_references_untrusted if untrusted else cfg.promote_references
    return float(row.get("importance") or 0.0) > importance_bar and int(row.get("reference_count") or 0) >= references_bar

# What a lifecycle pass may change on a row; a change here sets updated_at.
_STATE = ("status", "supersedes", "superseded_by", "contradicts", "promoted", "expires_at")
# The columns ``apply`` writes, and the ones it reads (only these are turned into dicts).
_WRITTEN = ("retrieval_priority", "importance", "confidence", *_STATE, "updated_at")
_READ = (
    "id", "content", "category", "kind", "tier", "namespace", "project", "source_trust", "provenance", "session_id",
    "source_turn_ids", "created_at", "first_seen_at", "last_referenced_at", "reference_count", "echo_count", "fizzle_count",
    "reinforcement", "supersedes_hint", "base_importance", "base_confidence", "directive",
)
# "conv-26-s3:4" (canonical <session>:<turn>) and LoCoMo "D3:4" (D<session>:<turn>).
_TURN_ID = re.compile(r"^(?P<session>.+):\d+$")


# Rows turned into dicts at a time: a pass holds one chunk of dicts, not the whole memory's
# (a million items as dicts of thirty fields is gigabytes).
CHUNK_ROWS = 50_000


def _rows(items: pl.DataFrame, columns: tuple[str, ...]) -> list[dict]:
    return items.select([c for c in dict.fromkeys(columns) if c in items.columns]).to_dicts()


def _chunks(items: pl.DataFrame, columns: tuple[str, ...], size: int = CHUNK_ROWS):
    """(offset, rows as dicts) for each run of ``size`` rows, only ``columns``."""
    for offset in range(0, items.height, size):
        yield offset, _rows(items.slice(offset, size), columns)


def _written(parts: list[pl.DataFrame], items: pl.DataFrame, columns: tuple[str, ...]) -> pl.DataFrame:
    """``items`` with ``columns`` replaced by the chunks' values (``parts``, in row order)."""
    values = pl.concat(parts, how="vertical") if len(parts) > 1 else parts[0]
    return items.with_columns([values[c] for c in columns])


def _frame(rows: list[dict], items: pl.DataFrame, columns: tuple[str, ...]) -> pl.DataFrame:
    return pl.DataFrame({c: pl.Series(c, [r[c] for r in rows], dtype=items.schema[c]) for c in columns})


def _state(row: dict) -> tuple:
    return tuple(tuple(v) if isinstance(v, list) else v for v in (row.get(k) for k in _STATE))


def _base(row: dict, column: str) -> float:
    base = row.get(f"base_{column}")
    return float(base if base is not None else row[column] or 0.0)


def _lengths(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The vectors (float32) and what each is divided by to make it a unit vector (its
    length, 1 for a zero vector): divided where used, not copied whole (1.5 GB at 1M)."""
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True) if v.size else np.ones((len(v), 1), np.float32)
    return v, np.where(norms == 0, 1.0, norms)


def sessions_of(row: dict) -> set[str]:
    """The sessions that stated an item: from its turn ids, which merged items union.

    Resource ids are content hashes (no session in them), and a merged item keeps only
    the survivor's ``session_id``, so the turn ids are the one record of every source.
    A turn id that is not ``<session>:<turn>`` (a custom external id) names no session;
    with none parsable, the item's own ``session_id`` is its only session.
    """
    found = {m["session"] for t in row.get("source_turn_ids") or [] if (m := _TURN_ID.match(t))}
    if not found and row.get("session_id"):
        found.add(row["session_id"])
    return found


def confirmed(row: dict) -> bool:
    """Stated in more than one session: another source confirms it."""
    return len(sessions_of(row)) > 1


def _replaces(row: dict) -> bool:
    """The item says it replaces an earlier one: a resolved supersession hint, an
    unresolved one, a correction, or a user's update."""
    return bool(row.get("supersedes") or row.get("supersedes_hint")
                or row.get("kind") == "correction" or row.get("provenance") == "user_corrected")


# What the contradiction pass reads and changes on the rows of its pairs.
_PAIRED = ("id", "content", "status", "created_at", "contradicts", "supersedes", "superseded_by", "kind",
           "provenance", "supersedes_hint", "numbers", "denies")


def _contradictions(items: pl.DataFrame, vectors: np.ndarray, lengths: np.ndarray, config: MemoryConfig,
                    neighbors: Neighbors | None, report: LifecycleReport,
                    changed: Sequence[int] | None = None) -> dict[int, dict]:
    """Flag or supersede active pairs about one subject that disagree (see ``contradictions``).
    Returns the rows of the pairs looked at (position → row, as changed), the only rows
    this pass can change."""
    threshold = float(config.lifecycle.contradiction_similarity)
    pairs = contradictions.candidate_pairs(contradictions.group_codes(items), vectors, threshold,
                                           neighbors=neighbors, only=changed, lengths=lengths)
    if not pairs:
        return {}
    involved = sorted({i for _s, i, _j in pairs} | {j for _s, _i, j in pairs})
    rows = dict(zip(involved, _rows(items[involved], _PAIRED)))
    for _sim, i, j in pairs:
        a, b = rows[i], rows[j]
        if a["status"] != "active" or b["status"] != "active" or b["id"] in (a["contradicts"] or []):
            continue
        if not opposed(a, b):
            continue
        old, new = sorted((a, b), key=lambda r: (r["created_at"], r["id"]))
        if old["created_at"] < new["created_at"] and _replaces(new):
            old["status"], old["superseded_by"] = "superseded", new["id"]
            new["supersedes"] = new["supersedes"] or old["id"]
            report.record("superseded", old["id"])
            continue
        for one, other in ((a, b), (b, a)):
            one["contradicts"] = [*(one["contradicts"] or []), other["id"]]
            report.record("contradicted", one["id"])
    return rows


def _statuses(items: pl.DataFrame, paired: dict[int, dict]) -> dict[str, str]:
    """id → status after the contradiction pass, for every item some item contradicts."""
    named = set(items.select(pl.col("contradicts").explode().drop_nulls().unique()).to_series().to_list())
    for row in paired.values():
        named.update(row["contradicts"] or [])
    if not named:
        return {}
    status = dict(items.filter(pl.col("id").is_in(sorted(named))).select("id", "status").iter_rows())
    status.update({row["id"]: row["status"] for row in paired.values() if row["id"] in status})
    return status


def _unresolved(row: dict, status: dict[str, str]) -> bool:
    """A contradiction stays open until one side is superseded. An archived or purged
    counterpart does not settle it (nobody said which was right), which also keeps the
    penalty the same on a re-run after tonight's purges. ``status``: id → status after
    the contradiction pass."""
    return any(other in status and status[other] != "superseded" for other in row.get("contradicts") or [])


def _expiry(row: dict, config: MemoryConfig, now: datetime) -> tuple[str, datetime] | None:
    """(action, when it expired) for an active item past its category TTL or, when
    speculative and unconfirmed, past the speculative TTL; the earlier one wins."""
    cfg = config.lifecycle
    used = scoring.last_used_at(row)
    if used is None:
        return None
    due: list[tuple[datetime, str]] = []
    category = config.categories.get(row.get("category") or "")
    # The permanent tier never decays, so it never expires by time either.
    if category is not None and category.ttl_days > 0 and row.get("tier") != "permanent":
        due.append((used + timedelta(days=category.ttl_days), "expired"))
    if (row["confidence"] < float(cfg.speculative_below) and not confirmed(row)
            and row.get("tier") != "permanent"):
        due.append((used + timedelta(days=float(cfg.speculative_ttl_days)), "speculative_expired"))
    past = sorted(d for d in due if d[0] <= now)
    return (past[0][1], past[0][0]) if past else None


def _settle_candidate(row: dict, config: MemoryConfig, now: datetime, report: LifecycleReport) -> None:
    """A candidate (below the gate's usefulness bar) becomes active once another session
    states it, and is purged when the speculative TTL passes unconfirmed."""
    if confirmed(row):
        row["status"] = "active"
        report.record("candidate_confirmed", row["id"])
        return
    used = scoring.last_used_at(row)
    ttl = timedelta(days=float(config.lifecycle.speculative_ttl_days))
    if used is not None and used + ttl <= now:
        row["status"], row["expires_at"] = "purged", used + ttl
        report.record("candidate_expired", row["id"])


@spanned("lifecycle.apply")
def apply(items: pl.DataFrame, vectors: np.ndarray, config: MemoryConfig, now: datetime, *,
          neighbors: Neighbors | None = None, changed: Sequence[int] | None = None) -> tuple[pl.DataFrame, LifecycleReport]:
    """One night of the lifecycle over every item (order and rules: module docstring).

    Args:
        items: ITEM_SCHEMA rows as ``consolidate`` returns them (base importance and
            confidence, feedback folded in, lifecycle fields carried).
        vectors: one vector per row, aligned with ``items``.
        config: lifecycle, decay, category and importance constants.
        now: the run's clock (timezone-aware).
        neighbors: for each row index, candidate neighbour row indices for contradiction
            detection (a list per row, or a mapping for the rows that changed); when
            None, the nearest 10 within each (namespace, category) by numpy.
        changed: positions of the rows new or reworded since the previous version; when
            given, only their neighbours are looked at for contradictions (None: all rows).
    Returns:
        the items, same rows and schema, and what was done.
    """
    report = LifecycleReport()
    if items.is_empty():
        return items, report
    if len(vectors) != items.height:
        raise ValueError(f"lifecycle.apply: {len(vectors)} vectors for {items.height} items; they must align")
    # Pairs first: they change only the rows they pair, and the penalty reads the statuses
    # they leave. The rest of the night is row by row, a chunk of rows at a time.
    paired = _contradictions(items, *_lengths(vectors), config, neighbors, report, changed)
    status = _statuses(items, paired)
    parts = []
    for offset, rows in _chunks(items, (*_READ, *_WRITTEN)):
        _night(rows, offset, paired, status, config, now, report)
        parts.append(_frame(rows, items, _WRITTEN))
    return _written(parts, items, _WRITTEN), report


def _night(rows: list[dict], offset: int, paired: dict[int, dict], status: dict[str, str],
           config: MemoryConfig, now: datetime, report: LifecycleReport) -> None:
    """The night's row-by-row rules on one chunk of rows (``offset``: the first one's
    position), in place; ``paired``: what the contradiction pass changed."""
    cfg = config.lifecycle
    before = [_state(r) for r in rows]
    base_importance = [_base(r, "importance") for r in rows]
    base_confidence = [_base(r, "confidence") for r in rows]

    for n, row in enumerate(rows):
        row["retrieval_priority"] = scoring.retrieval_priority(config, row, now)
        if row["status"] == "active" and scoring.created_today(row, now):
            report.record("boosted", row["id"])
        if (offset + n) in paired:
            row.update({k: paired[offset + n][k] for k in ("status", "superseded_by", "supersedes", "contradicts")})

    for row, importance, conf in zip(rows, base_importance, base_confidence):
        row["importance"] = scoring.lifecycle_importance(config, {**row, "importance": importance}, now)
        is_confirmed, is_contradicted = confirmed(row), _unresolved(row, status)
        row["confidence"] = scoring.lifecycle_confidence(config, conf, confirmed=is_confirmed,
                                                         contradicted=is_contradicted)
        if row["status"] != "active":
            continue
        if row.get("reference_count"):
            report.record("reinforced", row["id"])
        if row.get("tier") != "permanent" and scoring.weeks_unreferenced(row, now) > 0:
            report.record("decayed", row["id"])
        if is_confirmed:
            report.record("confirmed", row["id"])
        if is_contradicted:
            report.record("penalized", row["id"])

    for row in rows:
        if row["status"] == "candidate":
            _settle_candidate(row, config, now, report)
        if row["status"] != "active":
            continue
        # Permanent means permanent: only the user's word (forget, unpin) ends it.
        if row.get("tier") != "permanent" and scoring.effective_score(config, row) < float(cfg.purge_below):
            row["status"] = "purged"
            report.record("purged", row["id"])
        elif (expiry := _expiry(row, config, now)) is not None:
            row["status"], row["expires_at"] = "archived", expiry[1]
            report.record(expiry[0], row["id"])
        elif not row.get("promoted") and should_promote(config, row):
            row["promoted"] = True
            report.record("promoted", row["id"])

    for row, state in zip(rows, before):
        if _state(row) != state:
            row["updated_at"] = now


def _retire(items: pl.DataFrame, now: datetime, *, after_days: float, source: tuple[str, ...],
            target: str, only: Collection[str] | None = None) -> tuple[pl.DataFrame, LifecycleReport]:
    report = LifecycleReport()
    if items.is_empty():
        return items, report
    written = ("status", "updated_at")
    parts = []
    for _offset, rows in _chunks(items, ("id", "status", "tier", "promoted", "last_referenced_at", "created_at",
                                         "first_seen_at", "updated_at")):
        for row in rows:
            used = scoring.last_used_at(row)
            # Permanent and promoted memories were learned for good: time alone never retires them.
            if ((only is None or row["id"] in only) and row["status"] in source and row.get("tier") != "permanent"
                    and not row.get("promoted") and used is not None and used + timedelta(days=after_days) <= now):
                row["status"], row["updated_at"] = target, now
                report.record(target, row["id"])
        parts.append(_frame(rows, items, written))
    return _written(parts, items, written), report


def archive_unaccessed(items: pl.DataFrame, config: MemoryConfig, now: datetime, *,
                       only: Collection[str] | None = None) -> tuple[pl.DataFrame, LifecycleReport]:
    """Weekly: an active item not used for ``lifecycle.archive_after_days`` (90) is archived.

    "Used" is ``scoring.last_used_at`` (the last user-confirmed reference, else
    creation); injection does not count (module docstring). The permanent tier is exempt.
    ``only``: consider these ids alone (a sweep decided earlier, checked again).
    """
    return _retire(items, now, after_days=float(config.lifecycle.archive_after_days),
                   source=("active",), target="archived", only=only)


def to_cold(items: pl.DataFrame, config: MemoryConfig, now: datetime, *,
            only: Collection[str] | None = None) -> tuple[pl.DataFrame, LifecycleReport]:
    """Monthly: an active or archived item not used for ``lifecycle.cold_after_days`` (180)
    goes cold (cheap storage, searched last). The permanent tier is exempt."""
    return _retire(items, now, after_days=float(config.lifecycle.cold_after_days),
                   source=("active", "archived"), target="cold", only=only)
