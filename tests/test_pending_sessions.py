"""A flushed session is read back at once, as ``remember`` is: its user's turns that the
query is about are ``[pending]`` lines until the pipeline has made its facts; then the
facts answer and the turns are gone from the overlay.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import dagster as dg

from memory_assets.cli.runner import materialize_pending
from retrieval.agent.client import MemoryClient
from retrieval.agent.pending import is_pending
from retrieval.paths import DataRoot

T0 = datetime(2026, 9, 2, 18, tzinfo=timezone.utc)
SESSION = [
    {"role": "user", "content": "My WRX oil change is due at 11,799 miles.", "ts": T0.isoformat()},
    {"role": "assistant", "content": "Noted: 11,799 miles. I'll remind you.", "ts": (T0 + timedelta(seconds=9)).isoformat()},
    {"role": "user", "content": "Thanks, that's all for today.", "ts": (T0 + timedelta(seconds=30)).isoformat()},
    {"role": "tool", "content": "The WRX recall says 15,000 miles.", "trust": "untrusted",
     "ts": (T0 + timedelta(seconds=40)).isoformat()},
]


def test_a_flushed_sessions_turns_are_pending_lines_until_the_pipeline_stores_them(tmp_path):
    root = tmp_path / "data"
    agent = MemoryClient(root, namespace="aaron")
    assert agent.flush_session("pa-1", SESSION) is not None
    shown = agent.inject("When is my WRX oil change due?", now=T0 + timedelta(minutes=1), record=False)
    line = next(h for h in shown.items if "11,799" in h.content)
    assert is_pending(line.id) and shown.flags[line.id] == ["[pending]"]
    assert line.id not in shown.labels  # no short id: the facts made of it are what gets corrected
    assert "[pending]" in shown.text and "11,799 miles" in shown.text
    said = {h.content for h in shown.items}
    assert "Noted: 11,799 miles. I'll remind you." not in said  # the assistant's words are not the user's
    assert not any("15,000" in c for c in said)  # nor a tool's output
    assert "Thanks" not in shown.text  # a turn the question is not about
    assert MemoryClient(root, namespace="bea").inject("When is my WRX oil change due?", record=False).text == ""
    pending = agent.list(status="pending")
    assert [r["kind"] for r in pending] == ["turn", "turn"] and all(r["ref"] is None for r in pending)

    with dg.instance_for_test() as instance:
        assert not materialize_pending(DataRoot.resolve(root), instance=instance, extractor="offline").failed
    after = MemoryClient(root, namespace="aaron")
    shown = after.inject("When is my WRX oil change due?", record=False)
    assert "11,799" in shown.text and "[pending]" not in shown.text  # the published fact answers
    assert after.list(status="pending") == []


def test_many_flushed_sessions_are_read_within_bounds(tmp_path):
    from retrieval.agent import pending

    root = tmp_path / "data"
    agent = MemoryClient(root, namespace="aaron")
    for n in range(pending.SESSIONS_SHOWN + 5):
        turns = [{"role": "user", "content": f"Note {k} of session {n} about the garden shed.",
                  "ts": (T0 + timedelta(minutes=n, seconds=k)).isoformat()} for k in range(pending.TURNS_SHOWN + 10)]
        agent.flush_session(f"s-{n:03d}", turns)
    rows = agent.list(status="pending", limit=10_000)
    sessions = {r["session_id"] for r in rows}
    assert len(sessions) == pending.SESSIONS_SHOWN
    assert max(sum(r["session_id"] == s for r in rows) for s in sessions) == pending.TURNS_SHOWN
    assert len(agent.inject("What about the garden shed?", record=False).items) <= 10


def test_a_session_stays_pending_until_the_version_the_reader_searches_holds_it(tmp_path):
    # A reader on object storage reads the publish pointer again only every few seconds; a
    # run that extracts and publishes within them must not leave the session in neither
    # place (seen on a disk too, before a disk's reader looked at the pointer every call).
    from retrieval import published
    from retrieval.agent.pending import Overlay

    root = tmp_path / "data"
    agent = MemoryClient(root, namespace="aaron")
    agent.flush_session("pa-0", [{**SESSION[0], "content": "My bike is a Brompton."}])
    with dg.instance_for_test() as instance:
        assert not materialize_pending(DataRoot.resolve(root), instance=instance, extractor="offline").failed
    paths = DataRoot.resolve(root)
    first = published.read(paths)
    agent.flush_session("pa-1", SESSION)
    with dg.instance_for_test() as instance:
        assert not materialize_pending(DataRoot.resolve(root), instance=instance, extractor="offline").failed
    newest = published.read(paths)
    assert first is not None and newest is not None and newest.generation > first.generation

    def pending_turns(served) -> set[str]:
        overlay = Overlay(paths, agent.embedder.embed, "aaron", served)
        return {p.content for p in overlay.pending()}
    assert "My WRX oil change is due at 11,799 miles." in pending_turns(lambda: first)
    assert pending_turns(lambda: newest) == set()
    # And a reader on a disk searches the newest version from the next call.
    shown = agent.inject("When is my WRX oil change due?", record=False)
    assert "11,799" in shown.text and "[pending]" not in shown.text
