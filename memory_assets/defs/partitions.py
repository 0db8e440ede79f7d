"""The two ways work is partitioned: by agent session, and by night.

* ``sessions`` — one partition per agent session, added by the inbox sensor as sessions
  arrive; ingest and extraction run per session.
* ``nights`` — one partition per day, whose key is the clock of that day's scheduled runs
  (the nightly, weekly and monthly jobs): ``memory run nightly --date 2026-09-10`` and a
  UI backfill of that day replay the night as it would have run then. The schedules
  launch the partition of the day they fire on, so today's partition exists before it
  ends (``end_offset=1``).
"""

import dagster as dg

sessions = dg.DynamicPartitionsDefinition(name="sessions")

# The first night the memory can be replayed as of (a transcript from before then can
# still be ingested; its night just cannot be replayed through Dagster).
NIGHTS_START = "2020-01-01"
nights = dg.DailyPartitionsDefinition(start_date=NIGHTS_START, end_offset=1)
