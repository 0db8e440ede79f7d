"""Short item ids for the injected block: ``[m:3f2a]``, so the agent's model can name a line.

An item id is a 20-hex content hash; a model reading the block needs something short to
pass back to ``reinforce``, ``demote``, ``update`` or ``forget`` (koshi's ``[id:N]``). The
short id is the id's shortest prefix of at least ``MIN_LENGTH`` characters that no other
published item shares, so it is stable while the memory grows (it only lengthens in the
rare case a new item shares its prefix), and ``resolve`` turns it back into the one id.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

PREFIX = "m:"
MIN_LENGTH = 4


class AmbiguousId(LookupError):
    """A short id that more than one published item starts with."""


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def short_id(item_id: str, ordered: Sequence[str]) -> str:
    """``m:<prefix>`` for ``item_id``, unique among ``ordered`` (every published id, sorted)."""
    at = bisect_left(ordered, item_id)
    shared = 0
    for other in (at - 1, at + 1 if at < len(ordered) and ordered[at] == item_id else at):
        if 0 <= other < len(ordered) and ordered[other] != item_id:
            shared = max(shared, _common(item_id, ordered[other]))
    return PREFIX + item_id[:max(MIN_LENGTH, shared + 1)]


def resolve(ref: str, ordered: Sequence[str]) -> str | None:
    """The one id ``ref`` names (a full id, or a short id with or without ``m:``), or None.

    Raises ``AmbiguousId`` when a short prefix matches several items.
    """
    ref = ref.strip().strip("[]")
    prefix = ref[len(PREFIX):] if ref.startswith(PREFIX) else ref
    if not prefix:
        return None
    at = bisect_left(ordered, prefix)
    matches = []
    while at < len(ordered) and ordered[at].startswith(prefix) and len(matches) < 5:
        matches.append(ordered[at])
        at += 1
    if prefix in matches:
        return prefix
    if len(matches) > 1:
        raise AmbiguousId(f"{ref!r} matches several items ({', '.join(matches)}…); give more of the id")
    return matches[0] if matches else None
