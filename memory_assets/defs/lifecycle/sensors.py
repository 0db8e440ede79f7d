"""Never assume cron ran: overdue jobs run now, successes are recorded, triggers fire on the day."""

from datetime import datetime, timezone
from pathlib import Path

import dagster as dg
import polars as pl

from memory_assets.defs.lifecycle.schedules import monthly_job, nightly_job, weekly_job
from memory_assets.defs.runtime import MemoryRoot
from memory_assets.defs.scheduled_jobs import COVERS, JOBS, record_success
from memory_assets.lib import warehouse
from memory_assets.defs.items.sensors import materialize_items_job
from retrieval.jobs import catch_up, last_success, mark_done, overdue, pending_requests


@dg.sensor(jobs=[nightly_job, weekly_job, monthly_job, materialize_items_job], minimum_interval_seconds=900,
           default_status=dg.DefaultSensorStatus.RUNNING)
def overdue_jobs_sensor(context: dg.SensorEvaluationContext, memory: MemoryRoot) -> dg.SensorResult | dg.SkipReason:
    """The cron fallback: any job whose last success is older than its period (missed
    ticks, a machine that was off) is launched now — once per job per day — and so is
    every job an agent asked for (``MemoryClient.request_run``: an agent only appends a
    file), once per request."""
    now = datetime.now(timezone.utc)
    late = overdue(memory.paths, memory.config, now)
    requests = pending_requests(memory.paths)
    # A scheduled job runs tonight's ``nights`` partition: the night it makes up for. One
    # overdue job at a time, and none while a scheduled job is still queued or running.
    tonight = now.date().isoformat()
    job = catch_up(late, last_success(memory.paths)) if late and not _busy(context.instance) else None
    runs = [dg.RunRequest(job_name=job, run_key=f"overdue:{job}:{tonight}", partition_key=tonight,
                          tags={"memory/trigger": "overdue"})] if job else []
    for request in requests:
        job = "materialize_items" if request["job"] == "materialize" else request["job"]
        runs.append(dg.RunRequest(job_name=job, run_key=f"requested:{Path(request['file']).name}",
                                  partition_key=tonight if job in JOBS else None,
                                  tags={"memory/trigger": "agent-request"}))
        mark_done(memory.paths, request)
    if not runs:
        return dg.SkipReason("every job succeeded within its period (or waits for its turn), "
                             "and no agent asked for a run")
    return dg.SensorResult(run_requests=runs)


_BUSY = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
         dg.DagsterRunStatus.STARTED]


def _busy(instance: dg.DagsterInstance) -> bool:
    """Whether a scheduled job is queued or running: the next overdue one waits for it."""
    return any(r.dagster_run.job_name in JOBS for r in instance.get_run_records(dg.RunsFilter(statuses=_BUSY),
                                                                                 limit=100))


@dg.run_status_sensor(run_status=dg.DagsterRunStatus.SUCCESS, monitored_jobs=[nightly_job, weekly_job, monthly_job],
                      default_status=dg.DefaultSensorStatus.RUNNING)
def job_success_sensor(context: dg.RunStatusSensorContext) -> None:
    """Records each scheduled job's success where the agent and the fallback can read it."""
    from memory_assets.defs.runtime import default_resources

    memory = default_resources()["memory"]
    finished = context.dagster_run
    record = context.instance.get_run_record_by_id(finished.run_id)
    at = record.end_time if record and record.end_time else datetime.now(timezone.utc).timestamp()
    for job in COVERS.get(finished.job_name, (finished.job_name,)):
        record_success(memory.paths, job, datetime.fromtimestamp(at, tz=timezone.utc))


@dg.sensor(job=nightly_job, minimum_interval_seconds=3600, default_status=dg.DefaultSensorStatus.RUNNING)
def triggers_sensor(context: dg.SensorEvaluationContext, memory: MemoryRoot) -> dg.RunRequest | dg.SkipReason:
    """On the day a forward trigger is due ("next Friday", "in 6 months"), rebuilds the items
    once that morning so the trigger's memories are preloaded (boosted) for the agent."""
    today = datetime.now(timezone.utc).date()
    triggers = warehouse.read_frame(memory.paths.triggers)
    if triggers is None:
        return dg.SkipReason("no forward triggers yet")
    due = triggers.filter(pl.col("trigger_date") == today)
    if due.is_empty():
        return dg.SkipReason(f"no trigger due on {today}")
    return dg.RunRequest(run_key=f"triggers:{today.isoformat()}", partition_key=today.isoformat(),
                         tags={"memory/trigger": "forward-trigger"})
