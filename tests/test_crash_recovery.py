"""kill -9 at any stage: the next `memory materialize` completes, with the same items.

A real ``memory materialize`` process is killed with SIGKILL (``MEMORY_CRASH_AT``,
``warehouse.crash_point``) after ingest wrote a session's turns, after extraction
wrote its facts, after the items were written to LanceDB, and while publishing (the tag
moved, the snapshot not yet). Each time the agent keeps reading a published version,
the next ``memory materialize`` recovers (the dead run failed, its ``duckdb`` slot
freed), and publishes exactly the items a run that never crashed publishes: nothing
lost, nothing duplicated.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import dagster as dg
import pytest

from retrieval import MemoryClient
from retrieval.paths import DataRoot
from retrieval.store import ItemStore

T0 = datetime(2026, 9, 1, 9, tzinfo=timezone.utc)
FIRST = ["I drive a 2019 Subaru WRX.", "My WRX oil change is due at 11,799 miles."]
LATER = {
    "s2": ["My sister Maya lives in Lisbon.", "Maya's birthday is on October 12."],
    "s3": ["I play the violin in a community orchestra.", "Rehearsals are on Thursday evenings."],
    "s4": ["I prefer morning meetings.", "Never schedule meetings on Fridays."],
}


def _memory(root: Path, *args: str, crash_at: str | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MEMORY_DATA_ROOT": str(root),
           "DAGSTER_HOME": str(root / "dagster")}
    env.pop("MEMORY_CRASH_AT", None)
    if crash_at:
        env["MEMORY_CRASH_AT"] = crash_at
    return subprocess.run([sys.executable, "-m", "memory_assets.cli", "--data-root", str(root), *args],
                          env=env, capture_output=True, text=True, timeout=timeout)


def _write(path: Path, session_id: str, lines: list[str], day: int) -> Path:
    path.write_text("".join(json.dumps({"session_id": session_id, "turn": i, "role": "user", "content": text,
                                        "ts": (T0 + timedelta(days=day, minutes=i)).isoformat()}) + "\n"
                            for i, text in enumerate(lines, start=1)))
    return path


def _items(root: Path) -> list[tuple[str, str, str]]:
    frame = ItemStore(DataRoot.resolve(root)).items()
    return sorted(zip(frame["id"].to_list(), frame["content"].to_list(), frame["status"].to_list()))


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A data root with one session published and three more waiting in the inbox, and
    what a run that never crashes publishes from it."""
    base = tmp_path_factory.mktemp("crash")
    root = base / "template"
    assert _memory(root, "ingest", str(_write(base / "s1.jsonl", "s1", FIRST, 0))).returncode == 0
    assert _memory(root, "materialize", "--quiet").returncode == 0
    for n, (session, lines) in enumerate(LATER.items(), start=1):
        assert _memory(root, "ingest", str(_write(base / f"{session}.jsonl", session, lines, n))).returncode == 0
    clean = base / "clean"
    shutil.copytree(root, clean)
    done = _memory(clean, "materialize", "--quiet")
    assert done.returncode == 0, done.stderr
    return root, _items(root), _items(clean)


@pytest.mark.parametrize("stage", ["ingest", "extraction", "items_write", "publish"])
def test_kill_9_at_any_stage_loses_nothing_and_the_next_run_completes(template, tmp_path, stage):
    source, before, clean = template
    root = tmp_path / "data"
    shutil.copytree(source, root)

    crashed = _memory(root, "materialize", "--quiet", crash_at=stage)
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr

    # The agent still reads a published, audited version.
    seen = _items(root)
    if stage == "publish":
        assert seen in (before, clean)  # the tag moved; the snapshot is still the previous one
    else:
        assert seen == before
    assert MemoryClient(root).search("WRX oil change")

    recovered = _memory(root, "materialize", "--quiet", timeout=300)
    assert recovered.returncode == 0, recovered.stdout + recovered.stderr
    assert "recovered from a crash" in recovered.stdout
    after = _items(root)
    assert after == clean
    assert len({item_id for item_id, _, _ in after}) == len(after)  # nothing duplicated

    with dg.DagsterInstance.from_config(str(root / "dagster")) as instance:
        stuck = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED,
                                                                  dg.DagsterRunStatus.STARTING]))
        assert stuck == []
        assert not instance.event_log_storage.get_concurrency_run_ids()
