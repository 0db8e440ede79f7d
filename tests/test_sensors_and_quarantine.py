"""Automation: the inbox sensor makes partitions and runs; a quarantined session is retried."""

from __future__ import annotations

import json

import dagster as dg
import polars as pl

from memory_assets.defs.extraction.sensors import quarantine_retry_sensor
from memory_assets.defs.partitions import RANGE_END_TAG, RANGE_START_TAG
from memory_assets.defs.ingest.sensors import inbox_sensor
from memory_assets.defs.runtime import MemoryRoot
from memory_assets.lib.extraction import quarantine
from memory_assets.lib.ingest.intake import ingest_paths
from memory_assets.cli.runner import materialize_pending
from retrieval.config import load_config
from retrieval.paths import DataRoot
from retrieval.store import ItemStore
from tests.conftest import SAMPLES


def _session(path, session_id="s-llm"):
    lines = [
        {"session_id": session_id, "turn": 1, "role": "user", "speaker": "Aaron",
         "content": "I drive a 2019 Subaru WRX and the oil change is due at 11,799 miles.",
         "ts": "2026-09-01T09:00:00+00:00"},
        {"session_id": session_id, "turn": 2, "role": "assistant", "speaker": "assistant",
         "content": "Noted.", "ts": "2026-09-01T09:00:05+00:00"},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


PA_SESSIONS = ["pa-2026-09-02", "pa-2026-09-09", "pa-2026-09-16", "pa-2026-09-23"]


def _sensor(data_root, instance):
    return inbox_sensor(dg.build_sensor_context(instance=instance, resources={"memory": MemoryRoot(data_root=str(data_root))}))


def test_inbox_sensor_adds_a_partition_per_new_session_and_one_run_per_batch(data_root, instance):
    ingest_paths([SAMPLES / "personal-assistant.jsonl"], data_root, load_config())
    result = _sensor(data_root, instance)
    added = result.dynamic_partitions_requests[0]
    assert added.partitions_def_name == "sessions" and list(added.partition_keys) == PA_SESSIONS
    # The four sessions are one run over the range of their partitions.
    [request] = result.run_requests
    assert request.partition_key is None
    assert (request.tags[RANGE_START_TAG], request.tags[RANGE_END_TAG]) == (PA_SESSIONS[0], PA_SESSIONS[-1])
    again = _sensor(data_root, instance)
    assert [r.run_key for r in again.run_requests] == [r.run_key for r in result.run_requests]


def test_inbox_sensor_batches_at_most_sessions_per_run(data_root, instance, monkeypatch):
    import memory_assets.defs.ingest.sensors as sensors

    monkeypatch.setattr(sensors, "sessions_per_run", lambda config: 3)
    ingest_paths([SAMPLES / "personal-assistant.jsonl"], data_root, load_config())
    requests = _sensor(data_root, instance).run_requests
    assert [(r.tags.get(RANGE_START_TAG), r.tags.get(RANGE_END_TAG), r.partition_key) for r in requests] == [
        (PA_SESSIONS[0], PA_SESSIONS[2], None), (None, None, PA_SESSIONS[3])]


def _unreadable(monkeypatch, bad: str):
    """Ingest fails on session ``bad`` (and only there); returns the real step to put back."""
    import memory_assets.defs.ingest.assets as ingest_assets

    real = ingest_assets.store_session

    def broken(paths, session_id, config, now):
        if session_id == bad:
            raise RuntimeError("a session the batch cannot read")
        return real(paths, session_id, config, now)

    monkeypatch.setattr(ingest_assets, "store_session", broken)
    return real


def test_a_failed_batch_is_asked_again_one_session_at_a_time_and_nothing_is_lost(data_root, instance, monkeypatch):
    import memory_assets.defs.ingest.assets as ingest_assets
    from memory_assets.cli.runner import _job, _run, pending_sessions

    paths = DataRoot.resolve(data_root)
    ingest_paths([SAMPLES / "personal-assistant.jsonl"], data_root, load_config())
    first = _sensor(data_root, instance)
    instance.add_dynamic_partitions("sessions", list(first.dynamic_partitions_requests[0].partition_keys))
    [batch] = first.run_requests
    job = _job(str(data_root), "offline", "ingest_session")
    real = _unreadable(monkeypatch, PA_SESSIONS[2])
    assert not _run(job, instance, tags=dict(batch.tags))
    # The sessions stored before the failure wait for extraction (the unextracted-sessions
    # sensor's and `memory materialize`'s work); the unread rest is asked as a batch again.
    assert pending_sessions(paths) == (PA_SESSIONS[2:], PA_SESSIONS[:2])
    [rest] = _sensor(data_root, instance).run_requests
    assert (rest.tags[RANGE_START_TAG], rest.tags[RANGE_END_TAG]) == (PA_SESSIONS[2], PA_SESSIONS[3])
    assert not _run(job, instance, tags=dict(rest.tags))
    # That batch failed too: now one run per session, each with a run key of its own.
    retried = _sensor(data_root, instance).run_requests
    assert [r.partition_key for r in retried] == PA_SESSIONS[2:]
    assert len({r.run_key for r in retried} | {batch.run_key, rest.run_key}) == 4
    monkeypatch.setattr(ingest_assets, "store_session", real)
    for request in retried:
        assert _run(job, instance, partition_key=request.partition_key, tags={})
    extract = _job(str(data_root), "offline", "extract_session")
    for session_id in pending_sessions(paths)[1]:
        assert _run(extract, instance, partition_key=session_id, tags={})
    assert instance.get_materialized_partitions(dg.AssetKey("extracted_facts")) == set(PA_SESSIONS)
    assert all(paths.session_file(paths.extracted_facts, s).exists() for s in PA_SESSIONS)


def test_materialize_runs_one_batch_and_a_bad_session_fails_alone(data_root, instance, monkeypatch):
    import memory_assets.defs.ingest.assets as ingest_assets

    ingest_paths([SAMPLES / "personal-assistant.jsonl"], data_root, load_config())
    real = _unreadable(monkeypatch, PA_SESSIONS[1])
    summary = materialize_pending(DataRoot.resolve(data_root), extractor="offline", instance=instance)
    assert summary.failed == [PA_SESSIONS[1]]
    assert sorted(summary.sessions) == [s for s in PA_SESSIONS if s != PA_SESSIONS[1]]
    runs = [r for r in instance.get_runs() if r.job_name == "ingest_session"]
    # One run for the batch (failed), then one per session.
    assert sorted(r.tags.get("dagster/partition", "batch") for r in runs) == sorted(["batch", *PA_SESSIONS])
    # Nothing is lost: the bad session's files are still unread, and the next run takes it.
    monkeypatch.setattr(ingest_assets, "store_session", real)
    again = materialize_pending(DataRoot.resolve(data_root), extractor="offline", instance=instance)
    assert again.sessions == [PA_SESSIONS[1]] and not again.failed


def test_inbox_sensor_skips_when_everything_is_read(data_root, instance):
    context = dg.build_sensor_context(instance=instance, resources={"memory": MemoryRoot(data_root=str(data_root))})
    assert isinstance(inbox_sensor(context), dg.SkipReason)


def test_malformed_llm_output_quarantines_the_session_and_a_later_run_retries_it(tmp_path, data_root, instance, fake_openai):
    paths = DataRoot.resolve(data_root)
    ingest_paths([_session(tmp_path / "s.jsonl")], data_root, load_config())
    fake_openai.responder = lambda request: "this is not JSON {"

    first = materialize_pending(paths, extractor="llm", instance=instance)
    records = quarantine.open_records(paths)
    assert first.quarantined == ["s-llm"]
    assert records[0]["raw_response"] == "this is not JSON {" and "JSON" in records[0]["reason"]
    # Extracted offline meanwhile, so the agent is not left without the session's memories.
    offline = pl.read_parquet(paths.extracted_facts / "s-llm.parquet")
    assert offline.height and set(offline["extractor"].to_list()) == {"offline"}
    assert ItemStore(paths).items().height

    sensor = quarantine_retry_sensor(dg.build_sensor_context(
        instance=instance, resources={"memory": MemoryRoot(data_root=str(data_root))}))
    assert [r.partition_key for r in sensor.run_requests] == ["s-llm"]

    fake_openai.responder = lambda request: json.dumps({"facts": [{
        "content": "Aaron drives a 2019 Subaru WRX", "category": "vehicle", "kind": "fact",
        "tier": "standard", "strength": "explicit", "sentiment": "neutral", "tags": ["car"],
        "entities": ["Subaru WRX"], "source_turns": [1], "source_trust": "trusted",
        "provenance": "user_stated", "remember": False, "action_required": False, "supersedes": None}]})
    second = materialize_pending(paths, extractor="llm", instance=instance)
    assert second.sessions == ["s-llm"] and second.quarantined == []
    facts = pl.read_parquet(paths.extracted_facts / "s-llm.parquet")
    assert facts["content"].to_list() == ["Aaron drives a 2019 Subaru WRX"]
    assert facts["extractor"].to_list() == ["llm"]
    assert list((paths.quarantine / "s-llm" / "resolved").glob("*.json"))  # kept, not deleted

    event = instance.get_latest_materialization_event(dg.AssetKey("extracted_facts"))
    metadata = event.asset_materialization.metadata
    assert metadata["prompt_tokens"].value > 0 and metadata["completion_tokens"].value > 0
    assert metadata["extractor"].value == "llm"
