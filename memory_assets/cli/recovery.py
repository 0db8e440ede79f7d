"""After a crash: runs whose process is gone are failed, and the slots they held are freed.

A ``memory`` command runs the pipeline in its own process. Killed (kill -9, an OOM, a
closed laptop), it leaves its run STARTED for ever, holding its claim on the ``duckdb``
pool (every pool admits one step: ``dagster.yaml``); the next run would then wait on
that slot for ever. So every ``memory`` command that runs the pipeline first calls
``recover``:

* a run this machine's ``memory`` launched (tags ``memory/pid`` and ``memory/host``)
  whose process no longer exists is reported failed;
* a slot held by a run that has finished (failed, or was cancelled) is freed.

Runs launched by a Dagster daemon carry no pid: in a deployment, Dagster's run
monitoring (``run_monitoring`` in ``dagster.yaml``) fails those whose worker died.

``wait_for_pool`` bounds the wait for a slot a live run holds, and names that run.
"""

from __future__ import annotations

import os
import socket
import time

import dagster as dg

from memory_assets.cli import interrupts

PID_TAG = "memory/pid"
HOST_TAG = "memory/host"
POOL = "duckdb"
UNFINISHED = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING,
              dg.DagsterRunStatus.NOT_STARTED]


class SlotTimeout(RuntimeError):
    """A live run held the pool's slot for longer than the wait allows."""


def launcher_tags() -> dict[str, str]:
    """Tags that let a later ``memory`` command tell whether this process still runs."""
    return {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}


def _alive(run: dg.DagsterRun) -> bool | None:
    """Whether the process that launched ``run`` exists (None: not ours to judge)."""
    pid, host = run.tags.get(PID_TAG), run.tags.get(HOST_TAG)
    if not pid or host != socket.gethostname():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover(instance: dg.DagsterInstance) -> list[str]:
    """Fail the runs whose process is gone and free the slots of finished runs; their ids."""
    recovered: list[str] = []
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=UNFINISHED)):
        if _alive(run) is False:
            instance.report_run_failed(run, f"the process that ran it (pid {run.tags[PID_TAG]}) is gone; "
                                            "marked failed by `memory` so its slots are freed")
            recovered.append(run.run_id)
    storage = instance.event_log_storage
    for run_id in storage.get_concurrency_run_ids():
        run = instance.get_run_by_id(run_id)
        if run is None or run.is_finished:
            storage.free_concurrency_slots_for_run(run_id)
            if run_id not in recovered:
                recovered.append(run_id)
    return recovered


def holders(instance: dg.DagsterInstance, pool: str = POOL) -> set[str]:
    """Runs that hold a slot of ``pool`` now."""
    if pool not in instance.event_log_storage.get_concurrency_keys():
        return set()
    return set(instance.event_log_storage.get_concurrency_info(pool).active_run_ids)


def wait_for_pool(instance: dg.DagsterInstance, seconds: float, pool: str = POOL, poll: float = 1.0) -> None:
    """Return once no run holds ``pool``'s slot; after ``seconds``, raise ``SlotTimeout``
    naming the run that holds it and how to free it."""
    deadline = time.monotonic() + seconds
    while True:
        interrupts.check()  # Ctrl-C while waiting: stop now, not once the slot is free
        held = holders(instance, pool)
        if not held:
            return
        recover(instance)
        held = holders(instance, pool)
        if not held:
            return
        if time.monotonic() >= deadline:
            names = ", ".join(sorted(held))
            raise SlotTimeout(
                f"the {pool!r} pool's only slot is held by run {names}, still running after {seconds:.0f} s. "
                f"Let it finish, or stop it (`dagster run delete {sorted(held)[0]}`, or kill its process: the "
                f"next `memory` command then frees the slot); MEMORY_SLOT_WAIT_SECONDS sets the wait.")
        time.sleep(poll)
