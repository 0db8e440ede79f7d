"""``memory disable`` / ``memory enable``: a namespace's memory off — nothing injected,
nothing captured, a clear refusal — and on again, across restarts."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from memory_assets.cli import main as memory
from memory_assets.cli.runner import materialize_pending
from retrieval import MemoryClient
from retrieval.disabled import MemoryDisabled
from retrieval.paths import DataRoot


@pytest.fixture
def built(tmp_path):
    root = tmp_path / "data"
    agent = MemoryClient(root)
    agent.flush_session("alice-1", [{"role": "user", "content": "I drive a red 2019 Subaru WRX."}], user="alice")
    agent.flush_session("bob-1", [{"role": "user", "content": "I drive a blue Honda Civic hatchback."}], user="bob")
    with dg.instance_for_test() as instance:
        materialize_pending(DataRoot.resolve(root), instance=instance, extractor="offline")
    return root


def _inbox_files(root) -> set[str]:
    return {str(p.relative_to(root)) for p in (root / "inbox").rglob("*.jsonl")}


def test_a_disabled_namespace_gets_nothing_injected_and_nothing_stored(built, capsys):
    assert memory(["--data-root", str(built), "disable", "--namespace", "alice"]) == 0
    assert "memory for alice is off" in capsys.readouterr().out
    before = _inbox_files(built)

    alice = MemoryClient(built, namespace="alice")  # a new process reads the flag from the data root
    assert alice.disabled()
    injection = alice.inject("What car do I drive?")
    assert (injection.text, injection.tier, injection.items) == ("", "disabled", [])
    assert alice.search("car") == []
    writes = [lambda: alice.flush_session("alice-2", [{"role": "user", "content": "I sold the WRX."}]),
              lambda: alice.remember("My new car is a Volvo."),
              lambda: alice.append_turn("alice-live", 1, {"user_input": "I sold the WRX.", "llm_output": "OK."}),
              lambda: MemoryClient(built, namespace="*").flush_session(
                  "alice-3", [{"role": "user", "content": "I sold the WRX."}], user="alice")]
    for write in writes:
        with pytest.raises(MemoryDisabled, match="memory is disabled for alice"):
            write()
    assert _inbox_files(built) == before  # nothing captured
    assert not list((built / "events").glob("*-injected-*.json"))  # nor an injection recorded

    bob = MemoryClient(built, namespace="bob")  # another namespace is not affected
    assert "Honda" in bob.inject("What car do I drive?", record=False).text
    assert bob.flush_session("bob-2", [{"role": "user", "content": "I also ride a bike."}]) is not None
    # What alice stored stays hers to see, export, forget or erase.
    assert [r["content"] for r in alice.list()] and "Subaru" in alice.list()[0]["content"]

    assert memory(["--data-root", str(built), "enable", "--namespace", "alice"]) == 0
    assert "memory for alice is on again" in capsys.readouterr().out
    again = MemoryClient(built, namespace="alice")
    assert not again.disabled() and "Subaru" in again.inject("What car do I drive?", record=False).text
    assert again.flush_session("alice-2", [{"role": "user", "content": "I sold the WRX."}]) is not None


def test_the_flag_is_a_file_agents_read_and_the_operator_writes(tmp_path, capsys):
    root = tmp_path / "data"
    assert memory(["--data-root", str(root), "disable", "--namespace", "alice"]) == 0
    assert memory(["--data-root", str(root), "disable", "--namespace", "alice"]) == 0
    assert "(it already was)" in capsys.readouterr().out
    flag = json.loads((root / "settings" / "disabled.json").read_text())
    assert set(flag["disabled"]) == {"alice"} and flag["disabled"]["alice"]["since"]
    assert not list((root / "settings").glob(".*"))  # written atomically: no temporary left


def test_ingesting_a_disabled_namespaces_transcript_is_refused(tmp_path, capsys):
    root = tmp_path / "data"
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"session_id": "s1", "turn": 1, "role": "user", "namespace": "alice",
                                      "content": "I drive a WRX.", "ts": "2026-09-01T09:00:00+00:00"}) + "\n")
    assert memory(["--data-root", str(root), "disable", "--namespace", "alice"]) == 0
    assert memory(["--data-root", str(root), "ingest", str(transcript)]) == 1
    assert "MemoryDisabled: memory is disabled for alice" in capsys.readouterr().err
    assert not (root / "inbox").exists()
