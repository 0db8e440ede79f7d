"""Automation: the inbox sensor makes partitions and runs; a quarantined session is retried."""

from __future__ import annotations

import json

import dagster as dg
import polars as pl

from memory_assets.defs.extraction.sensors import quarantine_retry_sensor
from memory_assets.defs.ingest.sensors import inbox_sensor
from memory_assets.defs.runtime import MemoryRoot
from memory_assets.lib.extraction import quarantine
from memory_assets.lib.ingest.intake import ingest_paths
from memory_assets.cli.runner import materialize_pending
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


def test_inbox_sensor_adds_a_partition_and_a_run_per_new_session(data_root, instance):
    ingest_paths([SAMPLES / "personal-assistant.jsonl"], data_root)
    context = dg.build_sensor_context(instance=instance, resources={"memory": MemoryRoot(data_root=str(data_root))})
    result = inbox_sensor(context)
    assert {r.partition_key for r in result.run_requests} == {"pa-2026-09-02", "pa-2026-09-09", "pa-2026-09-16", "pa-2026-09-23"}
    added = result.dynamic_partitions_requests[0]
    assert added.partitions_def_name == "sessions" and len(added.partition_keys) == 4
    again = inbox_sensor(dg.build_sensor_context(instance=instance, resources={"memory": MemoryRoot(data_root=str(data_root))}))
    assert [r.run_key for r in again.run_requests] == [r.run_key for r in result.run_requests]


def test_inbox_sensor_skips_when_everything_is_read(data_root, instance):
    context = dg.build_sensor_context(instance=instance, resources={"memory": MemoryRoot(data_root=str(data_root))})
    assert isinstance(inbox_sensor(context), dg.SkipReason)


def test_malformed_llm_output_quarantines_the_session_and_a_later_run_retries_it(tmp_path, data_root, instance, fake_openai):
    paths = DataRoot.resolve(data_root)
    ingest_paths([_session(tmp_path / "s.jsonl")], data_root)
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
