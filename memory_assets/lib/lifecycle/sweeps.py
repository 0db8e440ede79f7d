"""Weekly and monthly sweeps: what time alone retires, decided by their own assets.

A sweep is a decision with a clock: ``archive`` (weekly; items unused for
``[lifecycle] archive_after_days``) and ``cold`` (monthly; unused for ``cold_after_days``,
and every item embedded again and checked for contradictions against every other).
``decide`` reads the published items and writes the ids the rule picks as of the run's
clock; ``memory_items`` is the one writer of item versions, so it applies the pending
sweeps (``apply``), checking each id again (an item used since the decision stays),
and ``published_items`` files them under ``applied/`` once the version is live. A
sweep whose version fails its checks stays pending and is applied by the next run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import polars as pl

from memory_assets.lib import warehouse
from memory_assets.lib.lifecycle.policy import LifecycleReport, archive_unaccessed, to_cold
from retrieval.config import MemoryConfig
from retrieval.files import stamp
from retrieval.paths import DataRoot

Rule = Callable[..., tuple[pl.DataFrame, LifecycleReport]]
RULES: dict[str, Rule] = {"archive": archive_unaccessed, "cold": to_cold}
ACTIONS = {"archive": "archived", "cold": "cold"}  # the report's action for each kind
# The monthly sweep also asks for the full refresh: every vector again, every pair checked.
REFRESHES = frozenset({"cold"})


@dataclass(frozen=True)
class Sweep:
    kind: str
    decided_at: str
    ids: tuple[str, ...]
    file: str

    @property
    def refresh(self) -> bool:
        return self.kind in REFRESHES


def decide(kind: str, items: pl.DataFrame, config: MemoryConfig, now: datetime) -> list[str]:
    """The ids ``kind``'s rule retires in ``items`` as of ``now``."""
    _, report = RULES[kind](items, config, now)
    return sorted(report.ids[ACTIONS[kind]])


def write(paths: DataRoot, kind: str, ids: Sequence[str], now: datetime) -> Sweep:
    """Record a sweep for ``memory_items`` to apply."""
    name = f"{kind}-{stamp(now)}.json"
    warehouse.write_json(paths.sweeps / name, {"kind": kind, "decided_at": now.isoformat(), "ids": list(ids)})
    return Sweep(kind, now.isoformat(), tuple(ids), name)


def pending(paths: DataRoot) -> list[Sweep]:
    """The sweeps not yet applied to a published version, oldest first."""
    out = []
    for path in warehouse.files(paths.sweeps, "*.json"):
        raw = warehouse.read_json(path)
        out.append(Sweep(raw["kind"], raw["decided_at"], tuple(raw["ids"]), str(path).rsplit("/", 1)[-1]))
    return out


def apply(items: pl.DataFrame, sweeps: Sequence[Sweep], config: MemoryConfig,
          now: datetime) -> tuple[pl.DataFrame, LifecycleReport]:
    """``items`` with every pending sweep applied, each id checked against its rule again."""
    report = LifecycleReport()
    for sweep in sweeps:
        items, more = RULES[sweep.kind](items, config, now, only=frozenset(sweep.ids))
        report.add(more)
    return items, report


def settle(paths: DataRoot, names: Sequence[str]) -> int:
    """File the sweeps a published version applied under ``applied/``."""
    moved = 0
    for name in names:
        if warehouse.exists(paths.sweeps / name):
            warehouse.move(paths.sweeps / name, paths.sweeps / "applied" / name)
            moved += 1
    return moved
