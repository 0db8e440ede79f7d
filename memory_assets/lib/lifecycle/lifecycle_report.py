"""What one lifecycle pass did: a count and the affected item ids per action."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
