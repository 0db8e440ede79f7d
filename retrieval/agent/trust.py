"""The trust pass: what the agent should know about each memory before it relies on it.

One pass for both tiers: a tier-1 summary line carries the ids, confidence and links of
the items it cites, so it is flagged by the same rules as an item.

Flags, appended to the item's line in the block:
- ``[conflict]`` on both sides of a pair in the set that disagree (an explicit
  ``contradicts`` link: a contradiction or a slot given two values, or two near-identical
  statements with different numbers or opposite polarity), ``[conflict: lower
  confidence]`` instead on the side held with lower confidence; ``order`` puts the
  higher-confidence side first, the newer one on a tie (DESIGN principle 9: newest first);
- ``[uncertain]`` below the configured confidence (0.7, the write gate's usefulness bar:
  a confirmed candidate, or an item a contradiction lowered);
- ``[archived]`` / ``[cold]`` for an item recalled from the archive to fill the block;
- ``[stale]`` when not confirmed for the configured days (90);
- ``[untrusted]`` for facts from tool output or untrusted data;
- ``[from: agent]`` for another agent's claim (``agent_stated``: written through a key of
  another agent, ``retrieval.service.keys``). On a conflict with anything else it is the
  side not believed, whatever its confidence or age (``[conflict: agent claim]``): a claim
  never outranks the user without a newer statement from the user;
- ``[shared: NAME]`` for a line from a namespace shared with the reader, not its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from retrieval.agent.search import Hit
from retrieval.agent.view import View
from retrieval.config import MemoryConfig
from retrieval.schema import AGENT_STATED
from retrieval.scoring import belief, is_stale
from retrieval.text import opposed

# The hits' vectors: an array aligned with the hits, or a function that reads the rows
# of the hits at the given positions (only the ones a conflict check needs).
Vectors = np.ndarray | Callable[[list[int]], np.ndarray]


def item_ids(hit: Hit) -> list[str]:
    """The items a hit stands for: itself, or the items a summary line cites."""
    return list(hit.row.get("item_ids") or [hit.id])


def conflicts(hits: Sequence[Hit], vectors: Vectors | None, threshold: float,
              change_threshold: float | None = None) -> set[tuple[str, str]]:
    """Pairs of ids in ``hits`` that contradict each other: an explicit ``contradicts`` link;
    two statements ``opposed`` (numbers, polarity) at least ``threshold`` alike; or a change
    stated later of what an earlier session's fact says of the same subject (``replaces``)
    at least ``change_threshold`` alike, which the pipeline left standing side by side (when
    unsure, both are shown, marked).

    The fields' test comes first: only a pair that passes it and is not linked already
    needs its vectors, so a block without such a pair reads none.
    """
    pairs: set[tuple[str, str]] = set()
    owner = {item: hit.id for hit in hits for item in item_ids(hit)}
    for hit in hits:
        for other in hit.row.get("contradicts") or []:
            if other in owner and owner[other] != hit.id:
                pairs.add(tuple(sorted((hit.id, owner[other]))))  # type: ignore[arg-type]
    if vectors is None or len(hits) < 2:
        return pairs
    suspects = []
    for i in range(len(hits)):
        for j in range(i + 1, len(hits)):
            if tuple(sorted((hits[i].id, hits[j].id))) in pairs:
                continue
            a, b = hits[i].row, hits[j].row
            if opposed(a, b):
                suspects.append((i, j, threshold))
            elif change_threshold is not None and (replaces(a, b) or replaces(b, a)):
                suspects.append((i, j, change_threshold))
    if not suspects:
        return pairs
    needed = sorted({k for i, j, _ in suspects for k in (i, j)})
    rows = vectors[needed] if isinstance(vectors, np.ndarray) else vectors(needed)
    at = {k: n for n, k in enumerate(needed)}
    for i, j, bar in suspects:
        if float(rows[at[i]] @ rows[at[j]]) >= bar:
            pairs.add(tuple(sorted((hits[i].id, hits[j].id))))  # type: ignore[arg-type]
    return pairs


def replaces(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """``new`` states a change (``states_change``, neither side tentative) about someone
    ``old`` is about too (the owner of its ``subject_key``: its own, or one ``old`` names
    among its ``entities``), said later and in another session: by its fields, a candidate
    for the value that replaced ``old``'s."""
    if not new.get("states_change") or new.get("tentative") or old.get("tentative"):
        return False
    if "episode" in (old.get("memory_kind"), new.get("memory_kind")):
        return False  # a one-off event has no value to replace, nor is one a new value
    who = _owner(new)  # "dmitri's mail" → dmitri: the change is about Dmitri's thing
    if not who or who != _owner(old) and who not in {str(e).lower() for e in old.get("entities") or []}:
        return False
    if not old.get("session_id") or old.get("session_id") == new.get("session_id"):
        return False
    before, after = old.get("created_at"), new.get("created_at")
    return before is not None and after is not None and before < after


def _owner(row: Mapping[str, Any]) -> str:
    """Whose a subject is: "dmitri's mail" → "dmitri", "diego" → "diego"."""
    return (row.get("subject_key") or "").lower().split("'s")[0].strip()


def claimed(hit: Hit) -> bool:
    """Another agent's claim (``agent_stated``), not the user's word."""
    return hit.row.get("provenance") == AGENT_STATED


def _likelier(a: Hit, b: Hit) -> bool:
    """``a`` is the side to believe: the user's word over another agent's claim, else the
    stronger belief (confidence, decayed by age)."""
    if claimed(a) != claimed(b):
        return claimed(b)
    when = lambda h: h.row.get("created_at") or h.row.get("updated_at")  # noqa: E731
    return belief(a.confidence, when(a)) > belief(b.confidence, when(b))


def losers(hits: Sequence[Hit], pairs: set[tuple[str, str]]) -> set[str]:
    """The side of each conflicting pair not to believe: another agent's claim against
    the user's word, else the one held with lower confidence (none on a tie: then both
    are plain ``[conflict]``, the newer first)."""
    by_id = {h.id: h for h in hits}
    out = set()
    for a, b in pairs:
        if a not in by_id or b not in by_id:
            continue
        first, second = by_id[a], by_id[b]
        if claimed(first) != claimed(second):
            out.add(a if claimed(first) else b)
        elif first.confidence != second.confidence:
            out.add(b if first.confidence > second.confidence else a)
    return out


def order(hits: Sequence[Hit], pairs: set[tuple[str, str]]) -> list[Hit]:
    """``hits`` with the more likely side of every conflicting pair ranked above the other.

    The hits joined by conflicts keep the places they hold between them and are laid out
    again in those places: each one after every side it loses to, otherwise by its rank.
    Swapping pair by pair is not enough: with two claims against one user line, the second
    swap could lift a claim back above the user's word. The "likelier" relation is a strict
    order (the user's word first, then belief), so the layout always exists.
    """
    out = list(hits)
    at = {h.id: i for i, h in enumerate(out)}
    linked: dict[int, set[int]] = {}
    beaten_by: dict[int, set[int]] = {}
    for a, b in pairs:
        if a not in at or b not in at:
            continue
        i, j = at[a], at[b]
        linked.setdefault(i, set()).add(j)
        linked.setdefault(j, set()).add(i)
        if _likelier(out[i], out[j]):
            beaten_by.setdefault(j, set()).add(i)
        elif _likelier(out[j], out[i]):
            beaten_by.setdefault(i, set()).add(j)
    result, seen = list(out), set()
    for start in sorted(linked):
        if start in seen:
            continue
        group, stack = set(), [start]
        while stack:
            k = stack.pop()
            if k not in group:
                group.add(k)
                stack.extend(linked[k] - group)
        seen |= group
        left, laid = set(group), []
        while left:
            free = [k for k in left if not beaten_by.get(k, set()) & left]
            laid.append(min(free or left))
            left.remove(laid[-1])
        for slot, k in zip(sorted(group), laid):
            result[slot] = out[k]
    return result


def flags(hits: Sequence[Hit], config: MemoryConfig, now: datetime, vectors: Vectors | None = None, *,
          pairs: set[tuple[str, str]] | None = None, view: View | None = None) -> dict[str, list[str]]:
    """id → the flags to show on its line, in a fixed order. ``pairs``: the conflicting
    pairs when the caller already found them (``conflicts``); ``view``: the reader's (None:
    nothing is shared)."""
    cfg = config.injection
    if pairs is None:
        pairs = conflicts(hits, vectors, float(cfg.conflict_similarity), float(cfg.change_conflict_similarity))
    conflicted = {i for pair in pairs for i in pair}
    lower = losers(hits, pairs)
    out: dict[str, list[str]] = {}
    for hit in hits:
        marks: list[str] = []
        if hit.id in conflicted:
            marks.append(("[conflict: agent claim]" if claimed(hit) else "[conflict: lower confidence]")
                         if hit.id in lower else "[conflict]")
        if hit.confidence < float(cfg.uncertain_below):
            marks.append("[uncertain]")
        if hit.row.get("status") in ("archived", "cold", "superseded"):
            marks.append(f"[{hit.row['status']}]")
        if is_stale(config, hit.row, now):
            marks.append("[stale]")
        if hit.source_trust == "untrusted":
            marks.append("[untrusted]")
        if claimed(hit):
            marks.append("[from: agent]")
        if view is not None and (shared := view.shared_from(hit.row)):
            marks.append(f"[shared: {shared}]")
        if marks:
            out[hit.id] = marks
    return out
