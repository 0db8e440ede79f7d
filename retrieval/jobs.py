"""Which pipeline jobs are overdue: read by the agent at session start and by the
pipeline's cron-fallback sensor (never assume cron ran)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from retrieval.config import MemoryConfig
from retrieval.paths import DataRoot


def last_success(paths: DataRoot) -> dict[str, str]:
    """job name → ISO time of its last successful run (``warehouse/lifecycle/job_runs.json``)."""
    return json.loads(paths.job_runs.read_text()) if paths.job_runs.exists() else {}


def overdue(paths: DataRoot, config: MemoryConfig, now: datetime) -> list[str]:
    """Jobs whose last success is older than their period (``[jobs]``), or that never succeeded."""
    runs = last_success(paths)
    late = []
    for job, days in config.jobs.items():
        ran = runs.get(job)
        if ran is None or now - datetime.fromisoformat(ran) > timedelta(days=float(days)):
            late.append(job)
    return late
