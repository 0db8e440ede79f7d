"""The deployment, tested for real: ``python -m memory_assets.deploy.local`` (what ``make
deploy-local`` runs) brings up PostgreSQL and Redis from Debian's packages, a Celery worker, the
code location's gRPC server, the daemon and the webserver. Agents hand transcripts over with
``MemoryClient.flush_session``; the daemon's sensors launch the runs, whose steps execute on
the Celery worker; the published items reach ``MemoryClient``; SIGINT (Ctrl-C) stops every
process the launcher started.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import httpx
import pytest

from memory_assets.defs.scheduled_jobs import JOBS, record_success
from retrieval.agent.client import MemoryClient
from retrieval.paths import DataRoot
from tests.conftest import REPO, SAMPLES

pytestmark = pytest.mark.slow

# Bounds on waiting, not timings under test: the whole test takes about two minutes on 2 cores.
START_WITHIN = 300.0
PUBLISHED_WITHIN = 420.0

RUNS = """{ runsOrError { ... on Runs { results { runId jobName status tags { key value }
    assetSelection { path } } } } }"""
LOGS = """query ($runId: ID!) { logsForRun(runId: $runId) { ... on EventConnection {
    events { __typename ... on MessageEvent { message stepKey } } } } }"""
SENSOR = """query ($selector: SensorSelector!) { sensorOrError(sensorSelector: $selector) {
    ... on Sensor { sensorState { status } } } }"""


def _transcript(sample: Path) -> tuple[str, list[dict]]:
    lines = [json.loads(line) for line in sample.read_text().splitlines() if line.strip()]
    return lines[0]["session_id"], [{k: v for k, v in m.items() if k != "session_id"} for m in lines]


def _until(check, within: float, launcher: subprocess.Popen, what: str):
    """``check()`` once truthy; fails with the launcher's output if it exits or ``within`` passes."""
    deadline = time.monotonic() + within
    while True:
        found = check()
        if found:
            return found
        if launcher.poll() is not None:
            pytest.fail(f"the launcher exited {launcher.returncode} before {what}:\n{launcher.stdout.read()}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {within:.0f} s")
        time.sleep(2)


def _finished(runs: list[dict]) -> list[dict] | None:
    """``runs``, once none is queued, starting or running."""
    busy = {"QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING"}
    return runs if runs and not any(r["status"] in busy for r in runs) else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and " Z " not in Path(f"/proc/{pid}/stat").read_text()


def _processes_under(root: Path) -> list[str]:
    """Live processes whose command line or environment names the test's data root."""
    out = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes()
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if int(proc.name) != os.getpid() and str(root).encode() in cmdline + environ:
            out.append(proc.name + ": " + cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return out


def test_sensor_launched_runs_execute_on_celery_and_publish_what_agents_handed_over():
    # Postgres runs as the `postgres` user, which must reach the data root: not under pytest's
    # private (0700) tmp_path.
    root = Path(tempfile.mkdtemp(prefix="deploy-test-"))
    root.chmod(0o755)
    paths = DataRoot.resolve(root)
    # Every scheduled job "succeeded" just now: otherwise the cron fallback (overdue_jobs_sensor)
    # launches tonight's nightly, weekly and monthly jobs first, which is not what this tests.
    for job in JOBS:
        record_success(paths, job, datetime.now(timezone.utc))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "GX_ANALYTICS_ENABLED": "false"}
    for name in ("DAGSTER_HOME", "MEMORY_EXECUTOR", "MEMORY_CONFIG", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        env.pop(name, None)
    # The sensors look every 5 s instead of 30 (`[pipeline] sensor_seconds`): the code
    # server, the daemon and the worker read the same config file.
    config = root / "memory.toml"
    config.write_text("[pipeline]\nsensor_seconds = 5\n")
    env["MEMORY_CONFIG"] = str(config)
    launcher = subprocess.Popen([sys.executable, "-m", "memory_assets.deploy.local", "--data-root", str(root)],
                                cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    manifest_file = root / "deploy" / "deploy.json"
    manifest: dict = {}
    try:
        manifest = _until(lambda: manifest_file.exists() and json.loads(manifest_file.read_text()),
                          START_WITHIN, launcher, "ready deployment")
        assert set(manifest["parts"]) == {"postgres", "redis", "code-server", "celery-worker", "daemon", "webserver"}
        graphql = f"{manifest['urls']['ui']}/graphql"

        def query(text: str, **variables) -> dict:
            answer = httpx.post(graphql, json={"query": text, "variables": variables}, timeout=30).json()
            assert "errors" not in answer, answer
            return answer["data"]

        selector = {"repositoryLocationName": "memory_assets.definitions", "repositoryName": "__repository__",
                    "sensorName": "inbox_sensor"}
        assert query(SENSOR, selector=selector)["sensorOrError"]["sensorState"]["status"] == "RUNNING"

        client = MemoryClient(root)
        # One session: each more is one more run of Dagster processes on the Celery worker.
        assert client.flush_session(*_transcript(SAMPLES / "personal-assistant.jsonl"))

        _until(lambda: client.list(text="11,799"), PUBLISHED_WITHIN, launcher, "published item")
        injection = client.inject("When is my WRX oil change due?")
        assert "11,799" in injection.text

        # The item is readable once published_items is done; the run ends after its checks.
        runs = _until(lambda: _finished(query(RUNS)["runsOrError"]["results"]), PUBLISHED_WITHIN, launcher,
                      "end of every run")
        summary = [(r["jobName"], r["status"], {t["key"]: t["value"] for t in r["tags"]},
                    [a["path"] for a in r["assetSelection"] or []]) for r in runs]
        ingest = [r for r in runs if r["jobName"] == "ingest_session"]
        publish = [r for r in runs if ["published_items"] in [a["path"] for a in r["assetSelection"] or []]]
        assert ingest and publish, summary
        assert all(r["status"] == "SUCCESS" for r in ingest + publish), summary
        # Launched by the daemon's sensors: the inbox sensor, then the automation sensor.
        assert {"key": "dagster/sensor_name", "value": "inbox_sensor"} in ingest[0]["tags"]
        assert {"key": "dagster/sensor_name", "value": "memory_automation_sensor"} in publish[0]["tags"], summary
        # Every step of every run ran on the Celery worker, not in the run's own process.
        for run in runs:
            events = query(LOGS, runId=run["runId"])["logsForRun"]["events"]
            succeeded = {e["stepKey"] for e in events if e["__typename"] == "ExecutionStepSuccessEvent"}
            on_celery = {e["stepKey"] for e in events if "in celery worker" in (e.get("message") or "")}
            assert succeeded and succeeded <= on_celery, (run["jobName"], succeeded - on_celery)
        assert {"resources", "extracted_facts", "published_items"} <= {
            e["stepKey"] for r in ingest + publish for e in query(LOGS, runId=r["runId"])["logsForRun"]["events"]}
    finally:
        if launcher.poll() is None:
            launcher.send_signal(signal.SIGINT)  # Ctrl-C
        try:
            output, _ = launcher.communicate(timeout=180)
        except subprocess.TimeoutExpired:
            launcher.kill()
            output, _ = launcher.communicate()
        leftovers = [f"{name} (pid {part['pid']})" for name, part in manifest.get("parts", {}).items()
                     if _alive(part["pid"])]
        stray = _processes_under(root)
        for part in manifest.get("parts", {}).values():  # a failed stop must not outlive the test
            if _alive(part["pid"]):
                os.killpg(part["pid"], signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)
    assert launcher.returncode == 0, output
    assert "stopped." in output
    assert not leftovers and not stray, (leftovers, stray)
