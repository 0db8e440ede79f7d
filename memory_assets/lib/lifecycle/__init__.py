"""The nightly lifecycle ("sleep") as plain functions over item frames; every one takes ``now``.

* ``apply`` — one night: boosts, contradictions, reinforcement, decay, confidence,
  purge, expiry, promotion (``policy``);
* ``archive_unaccessed`` (weekly) and ``to_cold`` (monthly) — status transitions (``policy``);
* ``lessons`` — the ``directive`` of corrections, negatives, procedures, decisions (``lessons``);
* ``forward_triggers`` — the ``remind_on`` days of items, for preloading on the day (``triggers``);
* ``memory_md`` — MEMORY.md of promoted items (``promotion``).

The formulas are in ``retrieval.scoring``; the Dagster assets are thin shells over these.
"""

from memory_assets.lib.lifecycle.lessons import lessons
from memory_assets.lib.lifecycle.promotion import memory_md, should_promote
from memory_assets.lib.lifecycle.lifecycle_report import ACTIONS, LifecycleReport
from memory_assets.lib.lifecycle.policy import apply, archive_unaccessed, confirmed, sessions_of, to_cold
from memory_assets.lib.lifecycle.triggers import OVERDUE_DAYS, TRIGGER_SCHEMA, forward_triggers

__all__ = [
    "ACTIONS", "OVERDUE_DAYS", "TRIGGER_SCHEMA", "LifecycleReport", "apply", "archive_unaccessed", "confirmed",
    "forward_triggers", "lessons", "memory_md", "sessions_of", "should_promote", "to_cold",
]
