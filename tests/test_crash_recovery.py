"""A crash at any stage: the next `memory materialize` completes, with the same items.

The pipeline is stopped after ingest wrote a session's turns, after extraction wrote its
facts, after the items were written to LanceDB, and while publishing (the tag moved, the
snapshot not yet) (``warehouse.crash_point``). Each time the agent keeps reading a
published version, the next ``memory materialize`` recovers (the dead run failed, its
``duckdb`` slot freed), and publishes exactly the items a run that never crashed
publishes: nothing lost, nothing duplicated.

In process (the fast loop), ``warehouse.crash_point`` raises at the point, and the
``materialize`` stops with the run it was in: the data root is left as a killed process
leaves it. A run left STARTED by a dead process is failed and its slot freed by
``recovery.recover`` (its own test here); one real ``memory materialize`` is killed with
SIGKILL in the slow loop, and the next one recovers both.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from memory_assets.cli import recovery
from memory_assets.cli.instance import local_instance
from memory_assets.cli import runner
from memory_assets.cli.runner import materialize_pending
from memory_assets.lib import warehouse
from memory_assets.lib.ingest.intake import ingest_paths
from retrieval import MemoryClient
from retrieval.config import load_config
from retrieval.paths import DataRoot
from tests.factories import item_rows, write_transcript

FIRST = ["I drive a 2019 Subaru WRX.", "My WRX oil change is due at 11,799 miles."]
LATER = {
    "s2": ["My sister Maya lives in Lisbon.", "Maya's birthday is on October 12."],
    "s3": ["I play the violin in a community orchestra.", "Rehearsals are on Thursday evenings."],
    "s4": ["I prefer morning meetings.", "Never schedule meetings on Fridays."],
}


def _materialize(root: Path):
    """``memory materialize`` in this process, on the data root's own Dagster instance."""
    paths = DataRoot.resolve(root)
    with local_instance(paths) as instance:
        return materialize_pending(paths, instance=instance)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A data root with one session published and three more waiting in the inbox, and
    what a run that never crashes publishes from it."""
    base = tmp_path_factory.mktemp("crash")
    root = base / "template"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DAGSTER_HOME", str(root / "dagster"))
        ingest_paths([write_transcript(base / "s1.jsonl", "s1", FIRST)], root, load_config())
        assert _materialize(root).items_materialized
        for n, (session, lines) in enumerate(LATER.items(), start=1):
            ingest_paths([write_transcript(base / f"{session}.jsonl", session, lines, day=n)], root, load_config())
        clean = base / "clean"
        shutil.copytree(root, clean)
        env.setenv("DAGSTER_HOME", str(clean / "dagster"))
        assert _materialize(clean).items_materialized
    return root, item_rows(root), item_rows(clean)


def _reaped() -> int:
    """The pid of a process that has exited: what a killed ``memory`` leaves in its runs' tags."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def _assert_recovered(root: Path, clean) -> None:
    """The next run published a clean run's items, and left no run unfinished."""
    after = item_rows(root)
    assert after == clean
    assert len({item_id for item_id, _, _ in after}) == len(after)  # nothing duplicated
    with dg.DagsterInstance.from_config(str(root / "dagster")) as instance:
        stuck = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED,
                                                                  dg.DagsterRunStatus.STARTING]))
        assert stuck == []
        assert not instance.event_log_storage.get_concurrency_run_ids()


def _assert_still_published(root: Path, before, clean, stage: str) -> None:
    seen = item_rows(root)
    if stage == "publish":
        assert seen in (before, clean)  # the tag moved; the snapshot is still the previous one
    else:
        assert seen == before
    assert MemoryClient(root).search("WRX oil change")


class Crash(Exception):
    """The process "dies" at a crash point (in process: the step fails there)."""


@pytest.mark.parametrize("stage", warehouse.CRASH_POINTS)
def test_a_crash_at_any_stage_loses_nothing_and_the_next_run_completes(template, tmp_path, monkeypatch, stage):
    source, before, clean = template
    root = tmp_path / "data"
    shutil.copytree(source, root)
    monkeypatch.setenv("DAGSTER_HOME", str(root / "dagster"))
    crashed: list[str] = []
    with monkeypatch.context() as crashing:
        def crash_point(name: str) -> None:
            if name == stage:
                crashed.append(name)
                raise Crash(name)

        real_run = runner._run

        def run_until_the_crash(*args, **kwargs):  # the process is gone: nothing runs after
            succeeded = real_run(*args, **kwargs)
            if crashed:
                raise Crash(stage)
            return succeeded

        crashing.setattr(warehouse, "crash_point", crash_point)
        crashing.setattr(runner, "_run", run_until_the_crash)
        with pytest.raises(Crash):
            _materialize(root)

    _assert_still_published(root, before, clean, stage)
    summary = _materialize(root)
    assert not summary.failed, summary
    _assert_recovered(root, clean)


def test_a_run_whose_process_is_gone_is_failed_and_its_slot_freed(tmp_path):
    paths = DataRoot.resolve(tmp_path / "data")
    with local_instance(paths) as instance:
        run = instance.create_run_for_job(dg.GraphDefinition("g", node_defs=[]).to_job(),
                                          tags={recovery.PID_TAG: str(_reaped()),
                                                recovery.HOST_TAG: recovery.socket.gethostname()})
        instance.handle_run_event(run.run_id, dg.DagsterEvent(
            event_type_value=dg.DagsterEventType.RUN_START.value, job_name=run.job_name))
        instance.event_log_storage.claim_concurrency_slot(recovery.POOL, run.run_id, "step")
        assert instance.event_log_storage.get_concurrency_run_ids() == {run.run_id}

        assert recovery.recover(instance) == [run.run_id]
        assert instance.get_run_by_id(run.run_id).status == dg.DagsterRunStatus.FAILURE
        assert not instance.event_log_storage.get_concurrency_run_ids()
        assert recovery.recover(instance) == []  # once


def _memory(root: Path, *args: str, crash_at: str | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MEMORY_DATA_ROOT": str(root),
           "DAGSTER_HOME": str(root / "dagster")}
    env.pop("MEMORY_CRASH_AT", None)
    if crash_at:
        env["MEMORY_CRASH_AT"] = crash_at
    return subprocess.run([sys.executable, "-m", "memory_assets.cli", "--data-root", str(root), *args],
                          env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_kill_9_of_a_real_materialize_while_publishing_loses_nothing(template, tmp_path):
    """The in-process crash, checked against the real thing once: SIGKILL at the last point."""
    source, before, clean, stage = *template, "publish"
    root = tmp_path / "data"
    shutil.copytree(source, root)

    crashed = _memory(root, "materialize", "--quiet", crash_at=stage)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    _assert_still_published(root, before, clean, stage)

    recovered = _memory(root, "materialize", "--quiet", timeout=300)
    assert recovered.returncode == 0, recovered.stdout + recovered.stderr
    assert "recovered from a crash" in recovered.stdout
    _assert_recovered(root, clean)
