"""Recording when a scheduled job succeeded (the reading side is ``retrieval.jobs``).

Written by ``job_success_sensor`` (daemon runs) and by ``memory run`` (in-process runs).
"""

from __future__ import annotations

import json
import os
from datetime import datetime

from retrieval.jobs import last_success
from retrieval.paths import DataRoot


def record_success(paths: DataRoot, job: str, at: datetime) -> None:
    runs = last_success(paths)
    if job in runs and datetime.fromisoformat(runs[job]) >= at:
        return
    runs[job] = at.isoformat()
    paths.job_runs.parent.mkdir(parents=True, exist_ok=True)
    tmp = paths.job_runs.with_suffix(".tmp")
    tmp.write_text(json.dumps(runs, indent=1, sort_keys=True))
    os.replace(tmp, paths.job_runs)
