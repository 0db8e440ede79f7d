"""One bound per input, one definition (issue 30, item 1): the in-process client, the
CLI's transcript reader and the service's request models refuse the same sizes, naming
the bound."""

from __future__ import annotations

import pytest

from memory_assets.lib.ingest.transcripts import parse_transcript
from retrieval import limits
from retrieval.agent.client import MemoryClient
from retrieval.service import requests


def test_the_service_models_take_their_bounds_from_the_one_definition():
    assert requests.MEMORY_MAX_CHARS is limits.MEMORY_MAX_CHARS
    assert requests.MESSAGE_MAX_CHARS is limits.MESSAGE_MAX_CHARS
    assert requests.NESTING_MAX is limits.NESTING_MAX


def test_the_in_process_client_refuses_what_the_service_refuses(data_root):
    client = MemoryClient(data_root)
    with pytest.raises(limits.OverLimit, match="MEMORY_MAX_CHARS"):
        client.remember("x " * (limits.MEMORY_MAX_CHARS // 2 + 1))
    assert client.remember("x " * (limits.MEMORY_MAX_CHARS // 2 - 1))["status"] == "pending"
    with pytest.raises(limits.OverLimit, match="MESSAGE_MAX_CHARS"):
        client.flush_session("s1", [{"role": "user", "content": "y" * (limits.MESSAGE_MAX_CHARS + 1)}])
    with pytest.raises(limits.OverLimit, match="MESSAGE_MAX_CHARS"):
        client.append_turn("s2", 1, {"user_input": "z" * (limits.MESSAGE_MAX_CHARS + 1)})
    with pytest.raises(limits.OverLimit, match="MESSAGES_MAX"):
        client.flush_session("s3", [{"role": "user", "content": "hi"}] * (limits.MESSAGES_MAX + 1))
    assert not (data_root / "inbox" / "s1").exists() and not (data_root / "inbox" / "s3").exists()


def test_the_cli_reader_refuses_a_message_over_the_same_bound(tmp_path):
    import json

    path = tmp_path / "t.jsonl"
    good = {"session_id": "s1", "turn": 1, "role": "user", "content": "hello", "ts": "2026-10-01T09:00:00Z"}
    over = {**good, "turn": 2, "content": "w" * (limits.MESSAGE_MAX_CHARS + 1)}
    at = {**good, "turn": 3, "content": "w" * limits.MESSAGE_MAX_CHARS}
    path.write_text("\n".join(json.dumps(m) for m in (good, over, at)) + "\n")
    parsed = parse_transcript(path, max_message_bytes=400_000)
    assert [m["turn"] for m in parsed.messages] == [1, 3]
    assert "line 2" in str(parsed.errors[0]) and "MESSAGE_MAX_CHARS" in str(parsed.errors[0])
