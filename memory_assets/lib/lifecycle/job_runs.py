"""Recording when a scheduled job succeeded (the reading side is ``retrieval.jobs``).

Written by ``job_success_sensor`` (daemon runs) and by ``memory run`` (in-process runs).
"""

from __future__ import annotations

from datetime import datetime

from retrieval.jobs import last_success
from retrieval.paths import DataRoot
from memory_assets.lib import warehouse


def record_success(paths: DataRoot, job: str, at: datetime) -> None:
    runs = last_success(paths)
    if job in runs and datetime.fromisoformat(runs[job]) >= at:
        return
    runs[job] = at.isoformat()
    warehouse.write_json(paths.job_runs, runs, indent=1, sort_keys=True)
