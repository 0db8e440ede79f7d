"""Inbox files to resource rows, as a pure function: new turns only, redacted, errors named."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from memory_assets.lib.ingest.turns import new_turns, resource_id

NOW = datetime(2026, 9, 10, 2, tzinfo=timezone.utc)


def _line(session: str, turn: int, content: str) -> str:
    return json.dumps({"session_id": session, "turn": turn, "role": "user", "speaker": "Dana", "content": content,
                       "ts": "2026-09-09T10:00:00+00:00", "trust": "trusted"})


def test_new_turns_are_redacted_deduplicated_and_a_stray_turn_is_named(tmp_path):
    inbox = tmp_path / "a.jsonl"
    inbox.write_text("\n".join([
        _line("s1", 1, "Mail me at dana@example.com about the WRX."),
        _line("s1", 2, "The garage code is in the notes."),
        _line("s2", 3, "This turn is another session's."),
        "{not json",
    ]) + "\n")
    first = new_turns([inbox], "s1", [], max_message_bytes=10_000, pii=("email",), now=NOW)
    assert first.frame["turn"].to_list() == [1, 2] and first.redacted == 1
    assert "dana@example.com" not in first.frame["content"][0] and "[REDACTED:email]" in first.frame["content"][0]
    assert any("belongs to session 's2'" in e for e in first.errors)
    assert any("a.jsonl" in e and "line 4" in e for e in first.errors)
    assert first.frame["ingested_at"].to_list() == [NOW, NOW]
    again = new_turns([inbox], "s1", first.frame["resource_id"].to_list(), max_message_bytes=10_000,
                      pii=("email",), now=NOW)
    assert again.frame.height == 0  # the same turns handed over twice are stored once
    kept = new_turns([inbox], "s1", [], max_message_bytes=10_000, pii=(), now=NOW)
    assert "dana@example.com" in kept.frame["content"][0]  # e-mail is opt-in personal data
    # A turn's id is its content hash, taken after redaction: the stored text is what it names.
    assert first.frame["resource_id"][0] != kept.frame["resource_id"][0]
    assert first.frame["resource_id"][1] == kept.frame["resource_id"][1]
    assert first.frame["resource_id"][1] == resource_id({**json.loads(_line("s1", 2, "The garage code is in the notes."))})
