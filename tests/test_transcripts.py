"""Ingestion: every format becomes canonical turns; bad input gets an error naming file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memory_assets.lib.ingest.intake import ingest_paths
from memory_assets.lib.ingest.transcripts import TranscriptError, parse_transcript
from retrieval.config import load_config
from tests.conftest import LOCOMO, SAMPLES

GOOD = {"session_id": "s1", "turn": 1, "role": "user", "content": "I drive a 2019 Subaru WRX.",
        "ts": "2026-09-01T09:00:00+00:00", "speaker": "Aaron"}


def _jsonl(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n")
    return path


def test_canonical_jsonl_keeps_speaker_trust_and_time():
    parsed = parse_transcript(SAMPLES / "coding-agent.jsonl")
    assert parsed.format == "jsonl" and not parsed.errors
    tool = next(m for m in parsed.messages if m["role"] == "tool")
    assert tool["trust"] == "untrusted"
    assert {m["session_id"] for m in parsed.messages} >= {"code-2026-09-01"}


def test_openai_chat_file_is_one_session_named_after_the_file():
    parsed = parse_transcript(SAMPLES / "support-chat.json")
    assert parsed.format == "openai" and not parsed.errors
    assert {m["session_id"] for m in parsed.messages} == {"support-chat"}
    assert [m["turn"] for m in parsed.messages] == list(range(1, len(parsed.messages) + 1))


@pytest.mark.skipif(not (LOCOMO / "conv-26.json").exists(), reason="LoCoMo dataset not present")
def test_locomo_sessions_keep_dates_and_dia_ids():
    parsed = parse_transcript(LOCOMO / "conv-26.json")
    assert parsed.format == "locomo" and not parsed.errors
    first = parsed.messages[0]
    assert first["session_id"] == "conv-26-s1"
    assert first["external_id"] == "D1:1"
    assert first["ts"].startswith("2023-05-08T13:56")
    assert first["speaker"] == "Caroline"
    assert len(parsed.sessions()) == 19


@pytest.mark.parametrize("lines, line_no, message", [
    ([json.dumps(GOOD), '{"session_id": "s1", "turn": 2, "role": "user", "cont'], 2, "invalid JSON"),
    ([json.dumps({k: v for k, v in GOOD.items() if k != "role"})], 1, 'missing "role"'),
    ([json.dumps({**GOOD, "role": "robot"})], 1, '"role" is \'robot\''),
    ([json.dumps({**GOOD, "ts": "yesterday"})], 1, '"ts" does not parse'),
    ([json.dumps({**GOOD, "turn": "three"})], 1, '"turn" must be'),
    ([json.dumps({k: v for k, v in GOOD.items() if k != "content"})], 1, 'missing "content"'),
    ([json.dumps(GOOD), json.dumps({**GOOD, "turn": 2, "content": "x" * 5_000_000})], 2,
     "limit is 100,000 (MESSAGE_MAX_CHARS"),
    # Under the character bound, over the byte cap: 90,000 four-byte characters.
    ([json.dumps(GOOD), json.dumps({**GOOD, "turn": 2, "content": "😀" * 90_000}, ensure_ascii=False)], 2,
     "limit is 300,000 (ingest.max_message_bytes)"),
])
def test_bad_line_names_file_and_line_and_good_lines_still_count(tmp_path, lines, line_no, message):
    path = _jsonl(tmp_path / "t.jsonl", *lines)
    parsed = parse_transcript(path, max_message_bytes=300_000)
    assert len(parsed.errors) == 1
    error = str(parsed.errors[0])
    assert error.startswith(f"{path} line {line_no}: ") and message in error
    assert len(parsed.messages) == len(lines) - 1


def test_binary_junk_inside_jsonl_is_named_by_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(json.dumps(GOOD).encode() + b"\n\xff\xfe\x00\x81junk\n")
    parsed = parse_transcript(path, "jsonl")
    assert [str(e) for e in parsed.errors] == [f"{path} line 2: not UTF-8 text (binary data?)"]
    assert len(parsed.messages) == 1


@pytest.mark.parametrize("content, fmt, message", [
    (b"", "auto", "file is empty"),
    (b"\x89PNG\r\n\x1a\n\x00\x00binary", "auto", "cannot tell the format"),
    (b"just some prose, not a transcript", "auto", "cannot tell the format"),
    (b'{"a": 1}', "yaml", "unknown format"),
])
def test_unreadable_file_is_refused_whole_with_its_name(tmp_path, content, fmt, message):
    path = tmp_path / "x.bin"
    path.write_bytes(content)
    with pytest.raises(TranscriptError) as err:
        parse_transcript(path, fmt)
    assert str(err.value).startswith(str(path)) and message in str(err.value)


def test_a_bad_file_does_not_stop_the_batch(tmp_path, data_root):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    bad = _jsonl(tmp_path / "bad.jsonl", json.dumps(GOOD), "{truncated")
    report = ingest_paths([empty, bad, SAMPLES / "personal-assistant.jsonl"], data_root, load_config())
    assert any("empty.jsonl: file is empty" in e for e in report.errors)
    assert any("bad.jsonl line 2" in e for e in report.errors)
    assert "pa-2026-09-02" in report.sessions and "s1" in report.sessions


def test_ingesting_the_same_file_twice_writes_nothing_new(data_root):
    first = ingest_paths([SAMPLES / "coding-agent.jsonl"], data_root, load_config())
    before = sorted(p.name for p in (data_root / "inbox").rglob("*.jsonl"))
    second = ingest_paths([SAMPLES / "coding-agent.jsonl"], data_root, load_config())
    assert first.files_written == 4 and second.files_written == 0
    assert sorted(p.name for p in (data_root / "inbox").rglob("*.jsonl")) == before


def test_credentials_never_reach_the_inbox(tmp_path, data_root):
    secret = "sk-proj-AbC123dEf456GhI789jKl012MnO345pQr678"
    path = _jsonl(tmp_path / "t.jsonl", json.dumps({**GOOD, "content": f"use the key {secret} for staging"}))
    ingest_paths([path], data_root, load_config())
    stored = "".join(p.read_text() for p in (data_root / "inbox").rglob("*.jsonl"))
    assert secret not in stored and "[REDACTED:" in stored
