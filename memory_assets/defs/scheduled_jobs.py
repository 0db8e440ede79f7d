"""The scheduled jobs' selections, run configs and crons, shared by schedules, sensors and
``memory run``, and the record of when each last succeeded (read by ``retrieval.jobs``)."""

from __future__ import annotations

from datetime import date, datetime, time, timezone
from typing import Any

from memory_assets.lib import warehouse
from retrieval.jobs import last_success
from retrieval.moments import parse_utc
from retrieval.paths import DataRoot

JOBS = ("nightly", "weekly", "monthly")
# A weekly or monthly run does the nightly work too, so its success counts for both.
COVERS = {"nightly": ("nightly",), "weekly": ("weekly", "nightly"), "monthly": ("monthly", "nightly")}

# When each job's schedule fires (UTC): nightly 02:00, weekly Sunday 01:00, monthly the 1st 03:00.
CRONS = {"nightly": "0 2 * * *", "weekly": "0 1 * * 0", "monthly": "0 3 1 * *"}

# Every run that builds and publishes memory_items carries this tag, and the instance lets one
# such run proceed at a time (dagster.yaml: concurrency.runs.tag_concurrency_limits): two at
# once would each stage a version and one would publish the other's, unaudited. The
# deployment's daemon queues the second; `memory materialize` runs them one by one anyway.
ITEMS_WRITER_TAGS = {"memory/writes": "items"}

SELECTIONS: dict[str, list[str]] = {
    "nightly": ["memory_items", "entities", "edges", "published_items", "lessons_and_triggers", "category_summaries"],
    "weekly": ["archive_sweep", "memory_items", "entities", "edges", "published_items", "lessons_and_triggers", "category_summaries",
               "archive_clusters"],
    "monthly": ["cold_sweep", "memory_items", "entities", "edges", "published_items", "items_index", "lessons_and_triggers", "category_summaries",
                "health_report"],
}


def run_config(job: str, now: datetime | None = None) -> dict[str, Any]:
    """The run config of ``job``; ``now`` pins every step's clock (tests, replays, ``--now``)."""
    clock = now.isoformat() if now else ""
    ops: dict[str, Any] = {
        "archive_sweep": {"config": {"now": clock}},
        "cold_sweep": {"config": {"now": clock}},
        "memory_items": {"config": {"now": clock}},
        "lessons_and_triggers": {"config": {"now": clock}},
        "category_summaries": {"config": {"now": clock, "rebuild": job in ("weekly", "monthly")}},
        "health_report": {"config": {"now": clock}},
    }
    return {"ops": {k: v for k, v in ops.items() if k in SELECTIONS[job]}}


def tick(job: str, day: date) -> datetime:
    """The time ``job``'s schedule fires on ``day``: ``memory run nightly --date 2026-09-10``
    is that night's run, replayed with the clock it would have had."""
    minute, hour = (int(f) for f in CRONS[job].split()[:2])
    return datetime.combine(day, time(hour, minute), tzinfo=timezone.utc)


def record_success(paths: DataRoot, job: str, at: datetime) -> None:
    """Record that ``job`` succeeded at ``at`` (``job_success_sensor`` for daemon runs,
    ``memory run`` in process); the cron fallback and ``MemoryClient.overdue_jobs`` read it."""
    runs = last_success(paths)
    if job in runs and parse_utc(runs[job]) >= at:
        return
    runs[job] = at.isoformat()
    warehouse.write_json(paths.job_runs, runs, indent=1, sort_keys=True)
