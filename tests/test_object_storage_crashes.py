"""The data root on object storage under crashes and concurrency, for real (moto's S3
server on 127.0.0.1, as ``tests/test_object_storage.py``): a ``memory materialize`` killed
with SIGKILL while publishing leaves the previous version readable and the next run
completes; two agent processes appending at once lose nothing.

Apart from ``test_object_storage.py`` so that the two files run on both workers at once
(the slow loop runs one file per worker).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.factories import write_transcript
from tests.s3_server import s3_server  # noqa: F401  (the fixture)
from tests.test_object_storage import FIRST, SECOND, _env, _inject, _memory, _pointer, _python

pytestmark = pytest.mark.slow


def test_kill_9_while_publishing_on_s3_leaves_the_previous_version(s3_server, tmp_path):  # noqa: F811
    bucket = s3_server.bucket("memory-crash")
    root = f"s3://{bucket}/m"
    env = _env(s3_server, tmp_path / "state", root)
    assert _memory(env, "ingest", str(write_transcript(tmp_path / "s1.jsonl", "s1", FIRST, day=0)), cwd=tmp_path).returncode == 0
    assert _memory(env, "materialize", "--quiet", cwd=tmp_path).returncode == 0
    before = _pointer(s3_server, bucket, "m")
    assert _memory(env, "ingest", str(write_transcript(tmp_path / "s2.jsonl", "s2", SECOND, day=1)), cwd=tmp_path).returncode == 0

    crashed = _memory({**env, "MEMORY_CRASH_AT": "publish"}, "materialize", "--quiet", cwd=tmp_path)
    assert crashed.returncode == -signal.SIGKILL
    # The new version's files and LanceDB version were written; the pointer was not.
    assert _pointer(s3_server, bucket, "m") == before
    maya, wrx = _inject(env, tmp_path, "Where does my sister Maya live?", "When is my WRX oil change due?")
    assert maya["generation"] == before["generation"] and "Lisbon" not in maya["text"]
    assert "11,799" in wrx["text"]

    done = _memory(env, "materialize", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    after = _pointer(s3_server, bucket, "m")
    assert after["generation"] == before["generation"] + 1 and after["version"] > before["version"]
    assert "Lisbon" in _inject(env, tmp_path, "Where does my sister Maya live?")["text"]


APPEND = """
    import sys
    from datetime import datetime, timedelta, timezone
    from retrieval import MemoryClient
    agent, count = sys.argv[1], int(sys.argv[2])
    client = MemoryClient()
    t0 = datetime(2026, 9, 2, 9, tzinfo=timezone.utc)
    for n in range(count):
        client.flush_session(f"{agent}-s{n}", [
            {"role": "user", "content": f"My {agent} project number {n} ships on Friday the {n + 1}th.",
             "ts": (t0 + timedelta(minutes=n)).isoformat()},
            {"role": "assistant", "content": "Noted.", "ts": (t0 + timedelta(minutes=n, seconds=5)).isoformat()}])
        client.remember(f"The {agent} build uses cache key {n}.", now=t0 + timedelta(minutes=n))
"""


def test_two_agents_appending_at_once_lose_nothing(s3_server, tmp_path):  # noqa: F811
    bucket = s3_server.bucket("memory-append")
    env = _env(s3_server, tmp_path / "state", f"s3://{bucket}/shared")
    count = 4  # two processes writing at once, four sessions and four notes each
    agents = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(APPEND), agent, str(count)], env=env,
                               cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
              for agent in ("alpha", "beta")]
    for agent in agents:
        _, err = agent.communicate(timeout=300)
        assert agent.returncode == 0, err[-3000:]
    sessions = {k.split("/")[2] for k in s3_server.keys(bucket, "shared/inbox/")}
    flushed = {f"{a}-s{n}" for a in ("alpha", "beta") for n in range(count)}
    assert flushed <= sessions and len([s for s in sessions if s.startswith("remember-")]) == 2 * count

    done = _memory(env, "materialize", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    facts = {k.rsplit("/", 1)[1].removesuffix(".parquet") for k in s3_server.keys(bucket, "shared/warehouse/extracted_facts/")}
    assert sessions <= facts, sorted(sessions - facts)
    # Every remembered fact is an item or merged into one (two near-identical notes merge).
    found = _python(env, """
        import json
        import polars as pl
        from retrieval import MemoryClient
        from memory_assets.lib import warehouse
        client = MemoryClient()
        facts = warehouse.read_facts(client.paths)
        noted = facts.filter(pl.col("source_session").str.starts_with("remember-"))
        items = client.store.items()
        kept = set(items["id"].to_list()) | {i for ids in items["merged_from"].to_list() if ids for i in ids}
        print(json.dumps({"noted": noted.height, "lost": sorted(set(noted["id"].to_list()) - kept)}))
    """, tmp_path)
    assert found.returncode == 0, found.stderr[-3000:]
    outcome = json.loads(found.stdout.strip().splitlines()[-1])
    assert outcome == {"noted": 2 * count, "lost": []}
