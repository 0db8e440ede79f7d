"""Short item ids for the injected block: ``[m:4821]``, so the agent's model can name a line.

An item id is a 20-hex content hash; a model reading the block needs something short to
pass back to ``reinforce``, ``demote``, ``update``, ``forget`` or ``pin`` (koshi's
``[id:N]``). The short id is a prefix of the digits of the id's hash: digits, because
the tokenizer reads "4821" as two tokens where "3f2a" takes five, and a block of ten
lines must stay inside its token budget. It is the shortest prefix of at least
``MIN_DIGITS`` that no other published item shares, so it is stable while the memory
grows (it lengthens only in the rare case a new item shares it), and ``ShortIds.resolve``
turns it back into the one id.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Iterable

from retrieval.text import normalize

PREFIX = "m:"
MIN_DIGITS = 4
# A write not published yet is ``pending:<session>``, its session ``remember-<hex>``
# (``retrieval.agent.pending``); the pipeline folds a correction of it into its item.
PENDING = "pending"
REMEMBER_PREFIX = "remember-"


class AmbiguousId(LookupError):
    """A short id that more than one published item starts with."""


def content_hash(content: str) -> str:
    """SHA-256 of the normalized text: the same fact in other spacing or case is one fact
    (what dedup, extraction and import key a memory's text by)."""
    return hashlib.sha256(normalize(content).encode("utf-8")).hexdigest()


def digits(item_id: str) -> str:
    """The 20 digits a short id is a prefix of (from the id's SHA-256, so any id works)."""
    return str(int(hashlib.sha256(item_id.encode("utf-8")).hexdigest()[:16], 16)).zfill(20)


def _common(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


class ShortIds:
    """The short ids of a set of item ids (every published item)."""

    def __init__(self, item_ids: Iterable[str]):
        pairs = sorted((digits(i), i) for i in item_ids)
        self._digits = [d for d, _ in pairs]
        self._ids = [i for _, i in pairs]
        self._known = set(self._ids)

    def short(self, item_id: str) -> str:
        """``m:<digits>``: unique among the ids this was built from."""
        mine = digits(item_id)
        at = bisect_left(self._digits, mine)
        shared = 0
        for other in (at - 1, at, at + 1):
            if 0 <= other < len(self._digits) and self._ids[other] != item_id:
                shared = max(shared, _common(mine, self._digits[other]))
        return PREFIX + mine[:max(MIN_DIGITS, shared + 1)]

    def resolve(self, ref: str) -> str | None:
        """The one id ``ref`` names (a full id, or a short id with or without ``m:`` and
        brackets), or None. Raises ``AmbiguousId`` when a prefix fits several items."""
        ref = ref.strip().strip("[]").strip()
        if ref in self._known:
            return ref
        prefix = ref[len(PREFIX):] if ref.startswith(PREFIX) else ref
        if not prefix.isdigit():
            return None
        at = bisect_left(self._digits, prefix)
        matches = []
        while at < len(self._digits) and self._digits[at].startswith(prefix) and len(matches) < 5:
            matches.append(self._ids[at])
            at += 1
        if len(matches) > 1:
            raise AmbiguousId(f"{ref!r} names several items ({', '.join(matches)}); give more of its digits")
        return matches[0] if matches else None
