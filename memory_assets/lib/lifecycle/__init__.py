"""The nightly lifecycle ("sleep") as plain functions over item frames; every one takes ``now``.

* ``apply`` — one night: boosts, contradictions, reinforcement, decay, confidence,
  purge, expiry, promotion (``policy``);
* ``archive_unaccessed`` (weekly) and ``to_cold`` (monthly) — status transitions (``policy``);
* ``lessons`` — the ``directive`` of corrections, negatives, procedures, decisions;
  ``forward_triggers`` — the ``remind_on`` days of items, for preloading on the day;
  ``memory_md`` — MEMORY.md of promoted items; and ``publish_housekeeping``, which writes
  them (``housekeeping``);
* ``sweeps`` — the weekly and monthly sweeps, decided upstream of the items build.

The formulas are in ``retrieval.scoring``; the Dagster assets are thin shells over these.
"""

from memory_assets.lib.lifecycle.housekeeping import OVERDUE_DAYS, TRIGGER_SCHEMA, forward_triggers, lessons, memory_md
from memory_assets.lib.lifecycle.policy import (ACTIONS, LifecycleReport, apply, archive_unaccessed, confirmed,
                                                sessions_of, should_promote, to_cold)

__all__ = [
    "ACTIONS", "OVERDUE_DAYS", "TRIGGER_SCHEMA", "LifecycleReport", "apply", "archive_unaccessed", "confirmed",
    "forward_triggers", "lessons", "memory_md", "sessions_of", "should_promote", "to_cold",
]
