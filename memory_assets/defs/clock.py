"""The run's clock: one ``now`` per run, taken once. Every time-based rule takes ``now``.

A run may set it (``--now``, tests). Otherwise it is the run's own time: for a scheduled
job's run of a ``nights`` partition, that night's tick (the partition key is the clock:
``memory run nightly --date 2026-09-10`` and a UI backfill of that day run as of
2026-09-10 02:00); else the tick a schedule fired for (``dagster/scheduled_execution_time``);
else when the run was created. Every asset of one run therefore reads the same ``now``,
however long the run takes, and a re-executed run sees the time it was first asked for.
"""

from datetime import date, datetime, timezone

import dagster as dg

from memory_assets.defs.scheduled_jobs import JOBS, tick
from retrieval.moments import parse_utc, utc

SCHEDULED_TAG = "dagster/scheduled_execution_time"


def run_now(context: dg.OpExecutionContext | None) -> datetime:
    """The run's time: its night's tick, else its schedule tick, else its creation; the wall
    clock outside a run."""
    if context is None:
        return datetime.now(timezone.utc)
    if context.job_name in JOBS and context.has_partition_key:  # a scheduled job's night
        return tick(context.job_name, date.fromisoformat(context.partition_key))
    scheduled = context.run.tags.get(SCHEDULED_TAG)
    if scheduled:
        return parse_utc(scheduled)
    record = context.instance.get_run_record_by_id(context.run_id)
    return utc(record.create_timestamp) if record is not None else datetime.now(timezone.utc)


class Clock(dg.Config):
    """``now`` as ISO-8601; empty means the run's own time (``run_now``)."""

    now: str = ""

    def resolve(self, context: dg.OpExecutionContext | None = None) -> datetime:
        return parse_utc(self.now) if self.now else run_now(context)
