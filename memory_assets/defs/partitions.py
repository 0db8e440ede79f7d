"""The two ways work is partitioned: by agent session, and by night.

* ``sessions`` — one partition per agent session, added by the inbox sensor as sessions
  arrive; ingest and extraction run per session.
* ``nights`` — one partition per day, whose key is the clock of that day's scheduled runs
  (the nightly, weekly and monthly jobs): ``memory run nightly --date 2026-09-10`` and a
  UI backfill of that day replay the night as it would have run then. The schedules
  launch the partition of the day they fire on, so today's partition exists before it
  ends (``end_offset=1``).
"""

from collections.abc import Iterable, Sequence

import dagster as dg

from memory_assets.defs.runtime import location_config
from retrieval.config import MemoryConfig

sessions = dg.DynamicPartitionsDefinition(name="sessions")

# Dagster's documented run tags for one run over a range of partitions: the range names
# every partition key between its two ends, in the partitions' order.
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


def sessions_per_run(config: MemoryConfig) -> int:
    """``[pipeline] sessions_per_run``: sessions ingested and extracted by one run."""
    return int(config.pipeline.sessions_per_run)


def sensor_seconds(config: MemoryConfig) -> int:
    """``[pipeline] sensor_seconds``: how often the inbox and automation sensors run."""
    return int(config.pipeline.sensor_seconds)


# A UI backfill over sessions runs this many partitions per run too (read when the code
# location loads, from the config the `memory` resource reads).
session_backfills = dg.BackfillPolicy.multi_run(max_partitions_per_run=sessions_per_run(location_config()))


def with_new_sessions(known: Sequence[str], pending: Iterable[str]) -> tuple[list[str], list[str]]:
    """(every ``sessions`` partition in order once the pending sessions not yet partitions
    are added, at the end and sorted; those new ones) from the partitions ``known`` now."""
    seen = set(known)
    new = sorted(s for s in set(pending) if s not in seen)
    return [*known, *new], new


def session_batches(known: Sequence[str], pending: Iterable[str], size: int) -> list[list[str]]:
    """``pending`` sessions as runs of at most ``size``, each a stretch of ``known`` (the
    ``sessions`` partitions, in their order) holding only pending sessions: a range run
    would also take every partition between its ends. A pending session that is not a
    partition yet is left out (add it first)."""
    wanted = set(pending)
    batches: list[list[str]] = []
    current: list[str] = []
    for key in known:
        if key in wanted:
            current.append(key)
            if len(current) >= size:
                batches.append(current)
                current = []
        elif current:
            batches.append(current)
            current = []
    if current:
        batches.append(current)
    return batches


def batch_tags(batch: Sequence[str]) -> dict[str, str]:
    """The tags of one run over ``batch`` (a stretch from ``session_batches``)."""
    return {RANGE_START_TAG: batch[0], RANGE_END_TAG: batch[-1]}

# The first night the memory can be replayed as of (a transcript from before then can
# still be ingested; its night just cannot be replayed through Dagster).
NIGHTS_START = "2020-01-01"
nights = dg.DailyPartitionsDefinition(start_date=NIGHTS_START, end_offset=1)
