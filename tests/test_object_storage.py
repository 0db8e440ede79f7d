"""The data root on object storage, for real: an S3-compatible server (``moto`` in server
mode on 127.0.0.1, ``tests/s3_server.py``), reached by the standard ``AWS_*`` variables.

Every step runs as its own process, as on separate machines: ``memory ingest`` and agents'
``flush_session`` append objects; ``memory materialize`` ingests, extracts, checks and
publishes (the publish pointer, one conditional PUT); a second process reads through
``MemoryClient.inject``; ``memory run nightly``; ``memory rollback`` (a SIGKILL while
publishing and two agents appending at once: ``test_object_storage_crashes.py``). Nothing
is written to a local folder named after the URI, and the only local state is the
Dagster instance and DuckDB's scratch file under ``MEMORY_LOCAL_STATE``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.factories import write_transcript
from tests.s3_server import s3_server  # noqa: F401  (the fixture)

pytestmark = pytest.mark.slow

T0 = datetime(2026, 9, 1, 9, tzinfo=timezone.utc)
FIRST = ["I drive a 2019 Subaru WRX.", "My WRX oil change is due at 11,799 miles."]
SECOND = ["My sister Maya lives in Lisbon.", "Maya's birthday is on October 12."]


def _env(s3, state: Path, root: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MEMORY_", "DAGSTER_HOME"))}
    return {**env, **s3.env, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
            "GX_ANALYTICS_ENABLED": "false", "MEMORY_DATA_ROOT": root, "MEMORY_LOCAL_STATE": str(state), **extra}


def _memory(env: dict[str, str], *args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memory_assets.cli", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def _python(env: dict[str, str], code: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


INJECT = """
    import json, sys
    from retrieval import MemoryClient
    from retrieval import published
    client = MemoryClient()
    pointer = published.read(client.paths)
    for query in json.loads(sys.argv[1]):
        block = client.inject(query, record=False)
        print(json.dumps({"text": block.text, "generation": pointer.generation if pointer else None,
                          "version": pointer.version if pointer else None}))
"""


def _inject(env, cwd, *queries: str) -> dict | list[dict]:
    """What a new reader process gets injected for each of ``queries`` (one process for all)."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(INJECT), json.dumps(queries)], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = [json.loads(line) for line in done.stdout.strip().splitlines()[-len(queries):]]
    return seen[0] if len(queries) == 1 else seen


def _pointer(s3, bucket: str, prefix: str) -> dict:
    body = s3.client().get_object(Bucket=bucket, Key=f"{prefix}/warehouse/memory_items/published.json")["Body"]
    return json.loads(body.read())


@pytest.fixture(scope="module")
def published_root(s3_server, tmp_path_factory):  # noqa: F811
    """A data root on s3:// with one session published through the whole pipeline."""
    bucket = s3_server.bucket("memory-e2e")
    base = tmp_path_factory.mktemp("s3root")
    root = f"s3://{bucket}/agents"
    env = _env(s3_server, base / "state", root)
    ingest = _memory(env, "ingest", str(write_transcript(base / "s1.jsonl", "s1", FIRST, day=0)), cwd=base)
    assert ingest.returncode == 0, ingest.stderr[-3000:]
    done = _memory(env, "materialize", "--quiet", cwd=base)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return s3_server, bucket, base, env


def test_the_pipeline_publishes_to_s3_and_a_second_process_reads_it(published_root):
    s3, bucket, base, env = published_root
    keys = s3.keys(bucket, "agents/")
    # The agent's transcript, the pipeline's tables, LanceDB and the pointer are objects in the bucket.
    assert any(k.startswith("agents/inbox/s1/") and k.endswith(".jsonl") for k in keys)
    assert any(k.startswith("agents/warehouse/resources/s1/") for k in keys)
    assert "agents/warehouse/extracted_facts/s1.parquet" in keys
    assert any(k.startswith("agents/lancedb/items.lance/_versions/") for k in keys)
    pointer = _pointer(s3, bucket, "agents")
    assert pointer["generation"] == 1 and f"agents/{pointer['items']}" in keys
    assert f"agents/{pointer['entities']}" in keys and f"agents/{pointer['edges']}" in keys
    # The blocking checks ran on the version before it was published.
    verdicts = [k for k in keys if k.startswith("agents/warehouse/quality/")]
    assert verdicts, keys
    # Nothing went to a local folder named after the URI; the local state is the instance and scratch.
    assert not (base / "s3:").exists()
    # The published read index was fetched into the local state once (by the check that audits it),
    # not rebuilt: the same files as under the root.
    assert {p.name for p in (base / "state").iterdir()} <= {"dagster", "analytics.duckdb", "analytics.duckdb.wal",
                                                            "read-indexes"}
    index_name = pointer["index"].rsplit("/", 1)[-1]
    fetched = base / "state" / "read-indexes" / index_name
    stored = {k.split(f"{index_name}/", 1)[1] for k in keys if f"/{index_name}/" in k}
    assert stored and {str(p.relative_to(fetched)) for p in fetched.rglob("*") if p.is_file()} == stored

    seen = _inject(env, base, "When is my WRX oil change due?")
    assert "11,799" in seen["text"] and seen["generation"] == 1


def test_nightly_then_rollback_on_s3(published_root):
    s3, bucket, base, env = published_root
    assert _memory(env, "ingest", str(write_transcript(base / "s2.jsonl", "s2", SECOND, day=1)), cwd=base).returncode == 0
    done = _memory(env, "materialize", "--quiet", cwd=base)
    assert done.returncode == 0, done.stderr[-3000:]
    second = _pointer(s3, bucket, "agents")
    assert second["generation"] == 2
    assert "Lisbon" in _inject(env, base, "Where does my sister Maya live?")["text"]

    nightly = _memory(env, "run", "nightly", cwd=base)
    assert nightly.returncode == 0, nightly.stdout[-2000:] + nightly.stderr[-3000:]
    keys = s3.keys(bucket, "agents/")
    assert any(k.startswith("agents/summaries/") for k in keys), "the nightly job wrote no summaries"
    assert "agents/warehouse/lifecycle/job_runs.json" in keys
    after_nightly = _pointer(s3, bucket, "agents")
    assert after_nightly["generation"] > second["generation"]

    rolled = _memory(env, "rollback", "--to", str(second["version"]), cwd=base)
    assert rolled.returncode == 0, rolled.stderr[-3000:]
    back = _pointer(s3, bucket, "agents")
    assert back["version"] == second["version"] and back["generation"] == after_nightly["generation"] + 1
    seen = _inject(env, base, "Where does my sister Maya live?")
    assert seen["version"] == second["version"] and "Lisbon" in seen["text"]

    rolled = _memory(env, "rollback", cwd=base)  # one further back: before Maya
    assert rolled.returncode == 0, rolled.stderr[-3000:]
    seen = _inject(env, base, "Where does my sister Maya live?")
    assert seen["version"] < second["version"] and "Lisbon" not in seen["text"]
    released = _memory(env, "publish", cwd=base)
    assert released.returncode == 0, released.stderr[-3000:]
    assert "Lisbon" in _inject(env, base, "Where does my sister Maya live?")["text"]


def test_a_stale_publisher_cannot_overwrite_a_newer_pointer(s3_server, monkeypatch):  # noqa: F811
    """The pointer is written by a conditional PUT: a publisher whose read is stale (another
    published in between) gets WriteConflict and the newer pointer stays; a first write
    loses to one that got there first."""
    from memory_assets.lib import warehouse

    for name, value in s3_server.env.items():
        monkeypatch.setenv(name, value)
    bucket = s3_server.bucket("memory-pointer")
    target = f"s3://{bucket}/root/warehouse/memory_items/published.json"
    assert warehouse.read_versioned(target) == (None, None)
    warehouse.write_if_unchanged(target, b'{"generation": 1}', None, existed=False)
    with pytest.raises(warehouse.WriteConflict):  # a second "first" publisher
        warehouse.write_if_unchanged(target, b'{"generation": 1, "late": true}', None, existed=False)
    data, token = warehouse.read_versioned(target)
    assert data == b'{"generation": 1}' and token
    warehouse.write_if_unchanged(target, b'{"generation": 2}', token, existed=True)
    with pytest.raises(warehouse.WriteConflict):  # read generation 1, wrote after generation 2 landed
        warehouse.write_if_unchanged(target, b'{"generation": 2, "stale": true}', token, existed=True)
    assert warehouse.read_versioned(target)[0] == b'{"generation": 2}'


def test_an_object_store_root_is_a_upath_with_local_state_aside(tmp_path, monkeypatch):
    from upath import UPath

    from retrieval.paths import DataRoot

    monkeypatch.delenv("MEMORY_LOCAL_STATE", raising=False)
    paths = DataRoot.resolve("s3://bucket/team/")
    assert isinstance(paths.root, UPath) and not paths.is_local and paths.uri == "s3://bucket/team"
    assert str(paths.inbox / "s1" / "a.jsonl") == "s3://bucket/team/inbox/s1/a.jsonl"
    assert paths.relative(paths.items_dir / "versions" / "v.parquet") == "warehouse/memory_items/versions/v.parquet"
    assert str(paths.at("warehouse/x.parquet")) == "s3://bucket/team/warehouse/x.parquet"
    # The Dagster instance and DuckDB's scratch file need a disk: a folder per root URI.
    assert isinstance(paths.dagster_home, Path) and isinstance(paths.duckdb, Path)
    assert DataRoot.resolve("s3://bucket/other").local != paths.local
    monkeypatch.setenv("MEMORY_LOCAL_STATE", str(tmp_path / "state"))
    assert paths.dagster_home == tmp_path / "state" / "dagster"
    local = DataRoot.resolve(tmp_path / "data")
    assert local.is_local and local.local == local.root and local.dagster_home == local.root / "dagster"


def test_a_conflict_on_object_storage_is_found_without_reading_stored_vectors(s3_server, tmp_path, monkeypatch):  # noqa: F811
    """Two unlinked items that disagree (the same oil change, two mileages) are flagged in
    the block on an s3:// root as on a local one; on both the pair's vectors come from the
    version's read index (on the bucket, fetched once into the local state), never from a
    read of the rows in LanceDB (on the bucket a request each: 1.2 s p50 on moto at 100k)."""
    import polars as pl

    from evals.bench.s3 import s3_env
    from memory_assets.lib.items import publish
    from memory_assets.lib.items.consolidation import facts_to_items
    from retrieval.ids import content_hash
    from retrieval import MemoryClient
    from retrieval.agent import search
    from memory_assets.lib.extraction.fields import said_fields
    from retrieval.config import load_config
    from retrieval.embeddings import Embedder
    from retrieval.paths import DataRoot
    from retrieval.read_index import ReadIndex
    from retrieval.schema import FACT_SCHEMA, ITEM_SCHEMA

    now = datetime(2026, 10, 1, tzinfo=timezone.utc)
    texts = {"due-a": "Aaron's WRX oil change is due at 11,799 miles",
             "due-b": "Aaron's WRX oil change is due at 12,500 miles",
             "tires": "Aaron rotated the WRX tires in March"}
    facts = pl.DataFrame([{
        "id": fid, "content": text, "category": "vehicle", "kind": "fact", "memory_kind": "note", "tags": [],
        "entities": [], "importance": 0.8, "confidence": 0.9 if fid != "due-b" else 0.7, "strength": "explicit",
        "sentiment": "neutral", "tier": "standard", "scope": "global", "namespace": "default",
        "source_trust": "trusted", "provenance": "user_stated", "source_resource_ids": [f"r-{fid}"],
        "source_turn_ids": [f"D1:{fid}"], "content_hash": content_hash(text), "created_at": now - timedelta(days=3),
        "prompt_version": "test", "extractor": "offline", **said_fields(text)} for fid, text in texts.items()],
        schema=FACT_SCHEMA)
    items = facts_to_items(facts, now).with_columns(embedding_model=pl.lit("local:all-MiniLM-L6-v2"))
    items = items.select(list(ITEM_SCHEMA))
    vectors = Embedder(load_config()).embed(items["content"].to_list())
    flags = {}
    real, real_index = search.vectors_for, ReadIndex.vectors
    with s3_env(s3_server, tmp_path / "state"):
        for where in (str(tmp_path / "local"), f"s3://{s3_server.bucket('conflicts')}/root"):
            paths = DataRoot.resolve(where)
            publish.publish(paths, publish.write_items(paths, items, vectors, now))
            reads, indexed = [], []
            monkeypatch.setattr("retrieval.agent.retrieve.vectors_for", lambda *a: (reads.append(a), real(*a))[1])
            monkeypatch.setattr(ReadIndex, "vectors", lambda self, rows: (indexed.append(rows), real_index(self, rows))[1])
            injection = MemoryClient(paths.uri if not paths.is_local else paths.root).inject(
                "When is Aaron's WRX oil change due?", now=now, record=False)
            flags[paths.is_local] = ({h.id: [f for f in injection.flags[h.id] if f.startswith("[conflict")]
                                      for h in injection.items if h.id.startswith("due")}, len(reads), len(indexed))
    local, remote = flags[True], flags[False]
    assert local[0] == remote[0] and set(local[0]) == {"due-a", "due-b"}
    assert local[0]["due-a"] == ["[conflict]"] and local[0]["due-b"] == ["[conflict: lower confidence]"]
    assert local[1:] == remote[1:] == (0, 1)  # the index's stored vectors, once; LanceDB never
