"""Which pipeline jobs are overdue: read by the agent at session start and by the
pipeline's cron-fallback sensor (never assume cron ran)."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from retrieval.config import MemoryConfig
from retrieval.files import atomic_write, move
from retrieval.moments import parse_utc
from retrieval.paths import DataRoot, location


def last_success(paths: DataRoot) -> dict[str, str]:
    """job name → ISO time of its last successful run (``warehouse/lifecycle/job_runs.json``)."""
    return json.loads(paths.job_runs.read_text()) if paths.job_runs.exists() else {}


def overdue(paths: DataRoot, config: MemoryConfig, now: datetime) -> list[str]:
    """Jobs whose last success is older than their period (``[jobs]``), or that never succeeded."""
    runs = last_success(paths)
    late = []
    for job, days in config.jobs.model_dump().items():
        ran = runs.get(job)
        if ran is None or now - parse_utc(ran) > timedelta(days=float(days)):
            late.append(job)
    return late


def catch_up(late: list[str], runs: dict[str, str]) -> str | None:
    """The one overdue job to launch now, of ``late`` (in the config's order, nightly first):
    the first that has run before, or the nightly. A weekly or monthly job that never ran
    waits for its schedule instead of being caught up on a new data root, and several late
    jobs run one after another, never at once: a first start costs at most the latest
    missed night, not a month of catch-up on every core at the same time."""
    return next((job for job in late if job == "nightly" or runs.get(job)), None)


# What an agent may ask the pipeline to run: a rebuild of the items, or a scheduled job.
REQUESTABLE = ("materialize", "nightly", "weekly", "monthly")


def request_run(paths: DataRoot, job: str, now: datetime) -> Path:
    """Append a request that the pipeline run ``job`` soon (one file; an agent only appends).

    ``overdue_jobs_sensor`` launches it under the Dagster daemon, and the next ``memory
    materialize`` runs it in-process: "never assume cron ran" needs no daemon.
    """
    if job not in REQUESTABLE:
        raise ValueError(f"cannot request {job!r}; expected one of {', '.join(REQUESTABLE)}")
    name = f"{now.strftime('%Y%m%dT%H%M%S%f')}-{job}-{uuid.uuid4().hex[:8]}.json"
    return atomic_write(paths.requests / name, json.dumps({"job": job, "requested_at": now.isoformat()}).encode())


def pending_requests(paths: DataRoot) -> list[dict[str, Any]]:
    """Requests not yet run, oldest first, each with its ``file``; a file that does not
    read as a request is skipped (it names itself in ``error``)."""
    out = []
    if not paths.requests.exists():
        return out
    for file in sorted(paths.requests.glob("*.json")):
        try:
            raw = json.loads(file.read_text(encoding="utf-8"))
            job = str(raw["job"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if job in REQUESTABLE:
            out.append({"job": job, "requested_at": raw.get("requested_at"), "file": str(file)})
    return out


def mark_done(paths: DataRoot, request: dict[str, Any]) -> None:
    """Move a request that was run under ``warehouse/requests_done/`` (kept, for the audit)."""
    source = location(request["file"])
    move(source, paths.warehouse / "requests_done" / source.name)
