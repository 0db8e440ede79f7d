"""Per-turn checkpoints (``retrieval.checkpoints``) and the local signal scan (``retrieval.agent.signals``).

Every behaviour runs on both backends, for real: SQLite in a temporary data root and a
throwaway PostgreSQL server (``tests/postgres_server.py``, started from Debian's binaries:
the slow loop, which ``make test-all`` installs them for). Crashes and concurrent writers
are real processes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from retrieval.agent.signals import high_signal, scan
from retrieval.checkpoints import Checkpoint, CheckpointConflict, CheckpointError, CheckpointStore, to_messages
from retrieval.config import load_config
from retrieval.credentials import pii_from_config
from retrieval.database import DSN_ENV, sqlite_path
from retrieval.paths import DataRoot
from retrieval.privacy import WITHHELD
from tests.postgres_server import new_database, postgres_server  # noqa: F401  (fixture)
from tests.test_credentials import AWS_ID, AWS_SECRET, GITHUB_PAT_CLASSIC, luhn_card

REPO = Path(__file__).resolve().parents[1]
T0 = datetime(2026, 9, 1, 9, tzinfo=timezone.utc)
PII = pii_from_config(load_config())  # what the config in force redacts


def turn(text: str, **fields) -> dict:
    return {"user_input": text, **fields}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.slow)])
def store(request, tmp_path, monkeypatch):
    """A checkpoint store as ``for_root`` opens it from the config: SQLite in the data root
    when no DSN is set, PostgreSQL when ``MEMORY_CHECKPOINT_DSN`` names one."""
    monkeypatch.delenv(DSN_ENV, raising=False)
    if request.param == "postgres":
        monkeypatch.setenv(DSN_ENV, new_database(request.getfixturevalue("postgres_server")))
    opened = CheckpointStore.for_root(DataRoot(tmp_path / "data"), load_config())
    yield opened
    opened.close()


def sqlite_store(root: Path) -> CheckpointStore:
    return CheckpointStore(DataRoot(root), pii=PII)


# --- append and replay ---------------------------------------------------------------------


def test_turns_replay_in_turn_order_whatever_order_they_arrive(store):
    for n in (3, 1, 2):
        store.append("aaron", "s1", n, turn(f"turn {n}", internal_state={"step": n}), project="wrx",
                     now=T0 + timedelta(minutes=n))
    store.append("aaron", "s2", 1, turn("another session"), now=T0)

    replayed = store.replay("aaron", "s1")
    assert [c.turn for c in replayed] == [1, 2, 3]
    assert replayed[1] == Checkpoint("aaron", "s1", 2, {"user_input": "turn 2", "tool_calls": [], "llm_output": "",
                                                        "internal_state": {"step": 2}},
                                     "wrx", T0 + timedelta(minutes=2), None)
    assert replayed[0].created_at.tzinfo is not None
    assert store.replay("aaron", "nobody") == []


def test_replay_stops_at_upto_turn(store):
    for n in range(1, 6):
        store.append("aaron", "s1", n, turn(f"turn {n}"), now=T0)
    assert [c.turn for c in store.replay("aaron", "s1", upto_turn=3)] == [1, 2, 3]
    assert store.replay("aaron", "s1", upto_turn=0) == []


def test_the_same_turn_sent_again_is_checkpointed_once(store):
    first = store.append("aaron", "s1", 1, turn("hi", tool_calls=[{"name": "search", "output": "ok"}]), now=T0)
    again = store.append("aaron", "s1", 1, turn("hi", tool_calls=[{"output": "ok", "name": "search"}]),
                         now=T0 + timedelta(hours=1))
    assert again == first  # the stored checkpoint, with its first time
    assert len(store.replay("aaron", "s1")) == 1


@pytest.mark.parametrize("change", [{"user_input": "bye"}, {"llm_output": "sure"}, {"internal_state": {"k": 1}}])
def test_the_same_turn_with_different_content_is_a_conflict(store, change):
    store.append("aaron", "s1", 1, turn("hi"), now=T0)
    with pytest.raises(CheckpointConflict, match="aaron/s1 turn 1: already checkpointed with different content"):
        store.append("aaron", "s1", 1, {**turn("hi"), **change}, now=T0)
    with pytest.raises(CheckpointConflict):
        store.append("aaron", "s1", 1, turn("hi"), project="another", now=T0)
    assert store.replay("aaron", "s1")[0].record["user_input"] == "hi"


@pytest.mark.parametrize(("session", "n", "record", "error"), [
    ("s1", 1, {"user_input": "hi", "mood": "ok"}, "aaron/s1 turn 1: mood: Extra inputs are not permitted"),
    ("s1", 1, {"tool_calls": {"name": "search"}}, "tool_calls: Input should be a valid list"),
    ("s1", 1, {"internal_state": ["a"]}, "internal_state: Input should be a valid dictionary"),
    ("s1", 1, {"user_input": 5}, "user_input: Input should be a valid string"),
    ("s1", 1, ["hi"], "record: Input should be a valid dictionary"),
    ("s1", -1, {}, "turn must be an integer from 0"),
    ("s1", True, {}, "turn must be an integer from 0"),
    ("s1", 2**31, {}, "turn must be an integer from 0"),
    ("", 1, {}, "session_id must be a non-empty string"),
    ("x" * 256, 1, {}, "session_id must be a non-empty string of at most 255 characters"),
])
def test_a_bad_turn_is_refused_with_an_error_naming_it(store, session, n, record, error):
    with pytest.raises(CheckpointError, match=error):
        store.append("aaron", session, n, record, now=T0)
    assert store.pending_sessions() == []


# --- flushing, crash recovery and erasure --------------------------------------------------


def test_unflushed_turns_stay_pending_until_marked_flushed(store):
    for n in (1, 2, 3):
        store.append("aaron", "s1", n, turn(f"turn {n}"), now=T0)
    store.append("maya", "s9", 1, turn("hello"), now=T0)
    assert store.pending_sessions() == [("aaron", "s1"), ("maya", "s9")]
    assert store.pending_sessions("maya") == [("maya", "s9")]

    assert store.mark_flushed("aaron", "s1", 2, T0 + timedelta(hours=1)) == 2
    assert [c.turn for c in store.unflushed("aaron", "s1")] == [3]
    assert store.replay("aaron", "s1")[0].flushed_at == T0 + timedelta(hours=1)
    assert store.mark_flushed("aaron", "s1", 3, T0 + timedelta(hours=2)) == 1
    assert store.replay("aaron", "s1")[0].flushed_at == T0 + timedelta(hours=1)  # marked once
    assert store.unflushed("aaron", "s1") == []
    assert store.pending_sessions() == [("maya", "s9")]


def test_erase_forgets_one_session_or_a_whole_namespace(store):
    for session in ("s1", "s2"):
        for n in (1, 2):
            store.append("aaron", session, n, turn("x"), now=T0)
    store.append("maya", "s1", 1, turn("y"), now=T0)

    assert store.erase("aaron", "s1") == 2
    assert store.replay("aaron", "s1") == [] and len(store.replay("aaron", "s2")) == 2
    assert store.erase("aaron") == 2
    assert store.pending_sessions() == [("maya", "s1")]
    store.append("aaron", "s1", 1, turn("a new start"), now=T0)  # an erased turn number is free again
    assert store.replay("aaron", "s1")[0].record["user_input"] == "a new start"


# --- privacy -------------------------------------------------------------------------------


def test_credentials_and_card_numbers_are_redacted_before_they_are_stored(store):
    card = luhn_card("4", 16)
    store.append("aaron", "s1", 1, {
        "user_input": f"my key is {AWS_ID}",
        "tool_calls": [{"name": "env", "output": f"GITHUB_TOKEN={GITHUB_PAT_CLASSIC}"}],
        "llm_output": f"Noted, card {card}.",
        "internal_state": {"notes": [f"aws secret {AWS_SECRET}"]},
    }, now=T0)
    record = store.replay("aaron", "s1")[0].record
    text = json.dumps(record)
    assert "[REDACTED:aws_access_key_id]" in record["user_input"]
    assert "[REDACTED:aws_secret_access_key]" in record["internal_state"]["notes"][0]
    for secret in (AWS_ID, AWS_SECRET, GITHUB_PAT_CLASSIC, card):
        assert secret not in text


def secret_parts(secret: str) -> set[str]:
    """The secret and its distinctive parts: a store holding any of them holds the secret."""
    return {secret, secret[4:], secret[:12], secret[-12:]}


def test_no_credential_reaches_the_sqlite_files(tmp_path):
    root = tmp_path / "data"
    store = sqlite_store(root)
    for n in range(1, 4):
        store.append("aaron", "s1", n, {
            "user_input": f"my AWS key id is {AWS_ID}",
            "tool_calls": [{"name": "env", "output": f"export AWS_SECRET_ACCESS_KEY={AWS_SECRET}"},
                           {"name": "gh", "result": {"token": GITHUB_PAT_CLASSIC}}],
            "internal_state": {"scratch": f"use {AWS_ID} with secret key {AWS_SECRET}", "pat": GITHUB_PAT_CLASSIC},
        }, now=T0)

    def stored_bytes() -> bytes:
        db = sqlite_path(DataRoot(root))
        return b"".join(p.read_bytes() for p in db.parent.iterdir() if p.name.startswith(db.name))

    while_open = stored_bytes()
    assert b"REDACTED" in while_open  # the turns are there, redacted
    store.close()
    for data in (while_open, stored_bytes()):
        for secret in (AWS_ID, AWS_SECRET, GITHUB_PAT_CLASSIC):
            assert not [part for part in secret_parts(secret) if part.encode() in data]


def test_the_embedded_store_is_sqlite_in_the_data_root_in_wal_mode_with_full_sync(tmp_path, monkeypatch):
    monkeypatch.delenv(DSN_ENV, raising=False)
    store = CheckpointStore.for_root(DataRoot(tmp_path / "data"), load_config())
    store.append("aaron", "s1", 1, turn("hi"), now=T0)
    assert sqlite_path(DataRoot(tmp_path / "data")) == tmp_path / "data" / "service" / "service.sqlite3"
    with store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
    store.close()


# --- the transcript the inbox takes --------------------------------------------------------


def test_checkpoints_become_the_transcript_without_the_agents_scratch_state(store):
    store.append("aaron", "s1", 1, {
        "user_input": "When is the WRX due for an oil change?",
        "tool_calls": [{"name": "calendar", "output": "oil change: 11,799 miles"},
                       {"name": "odometer", "result": {"miles": 11200}},
                       {"name": "notes", "content": "last change in March"},
                       {"name": "ping", "arguments": {"host": "car"}}],
        "llm_output": "At 11,799 miles, about 600 miles from now.",
        "internal_state": {"plan": "SCRATCH-ONLY"},
    }, now=T0)
    store.append("aaron", "s1", 2, {"llm_output": "Anything else?"}, now=T0 + timedelta(minutes=1))

    messages = to_messages(store.replay("aaron", "s1"))
    assert [(m["turn"], m["role"], m["trust"]) for m in messages] == [
        (1, "user", "trusted"), (2, "tool", "untrusted"), (3, "tool", "untrusted"), (4, "tool", "untrusted"),
        (5, "tool", "untrusted"), (6, "assistant", "trusted"), (7, "assistant", "trusted")]
    assert [m["content"] for m in messages[1:5]] == [
        "oil change: 11,799 miles", '{"miles": 11200}', "last change in March",
        '{"arguments": {"host": "car"}, "name": "ping"}']
    assert messages[0]["ts"] == T0.isoformat() and messages[-1]["ts"] == (T0 + timedelta(minutes=1)).isoformat()
    assert "SCRATCH-ONLY" not in json.dumps(messages)
    assert CheckpointStore.to_messages(store.replay("aaron", "s1")) == messages


def test_an_off_the_record_turn_is_kept_for_replay_but_withheld_from_the_transcript(store):
    store.append("aaron", "s1", 1, {"user_input": "My therapist is Dr. Vance.", "llm_output": "Got it."}, now=T0)
    store.append("aaron", "s1", 2, {"user_input": "Actually, don't remember that.", "llm_output": "Okay."}, now=T0)
    assert store.replay("aaron", "s1")[0].record["user_input"] == "My therapist is Dr. Vance."
    assert [m["content"] for m in to_messages(store.replay("aaron", "s1"))] == [WITHHELD, "Got it.", WITHHELD, WITHHELD]


# --- processes: kill -9 and two writers ----------------------------------------------------

APPENDER = """
import sys
from datetime import datetime, timezone
from pathlib import Path
from retrieval.checkpoints import CheckpointStore
from retrieval.credentials import DEFAULT_PII
from retrieval.paths import DataRoot

root, session, first, step, count = Path(sys.argv[1]), sys.argv[2], *map(int, sys.argv[3:6])
store = CheckpointStore(DataRoot(root), pii=DEFAULT_PII)
print("ready", flush=True)
sys.stdin.readline()  # go: the test starts every writer at once
for n in range(first, first + step * count, step):
    store.append("aaron", session, n, {"user_input": f"turn {n}", "internal_state": {"n": n}},
                 now=datetime.now(timezone.utc))
    print(f"ack {n}", flush=True)
"""


def appenders(root: Path, session: str, *runs: tuple[int, int, int]) -> list[subprocess.Popen[str]]:
    """One process per (first turn, step, count), appending to ``session`` and printing
    "ack N" after each append returns; all started at once when every one is ready."""
    processes = [subprocess.Popen([sys.executable, "-c", APPENDER, str(root), session, *map(str, run)], cwd=REPO,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for run in runs]
    for process in processes:
        assert process.stdout.readline() == "ready\n", process.stderr.read()
    for process in processes:
        process.stdin.write("go\n")
        process.stdin.flush()
    return processes


def test_every_acknowledged_turn_survives_kill_9(tmp_path):
    root = tmp_path / "data"
    [process] = appenders(root, "s1", (1, 1, 1_000_000))
    acked = 0
    try:
        while acked < 40:
            line = process.stdout.readline()
            assert line, f"the appender died before it was killed: {process.stderr.read()}"
            acked = int(line.split()[1])
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    # What it printed before it died is still in the pipe.
    acked = max([acked, *(int(line.split()[1]) for line in process.stdout.read().splitlines())])
    process.stdout.close()
    process.stderr.close()
    assert process.returncode == -signal.SIGKILL

    store = sqlite_store(root)
    turns = [c.turn for c in store.replay("aaron", "s1")]
    assert turns[:acked] == list(range(1, acked + 1))
    assert len(turns) in (acked, acked + 1)  # at most the one it was writing when killed, complete
    assert store.pending_sessions() == [("aaron", "s1")]  # the next flush recovers them
    store.close()


def test_two_processes_appending_to_one_sqlite_store_lose_nothing(tmp_path):
    root = tmp_path / "data"
    count = 150
    # Odd and even turns of one session, each from its own process, onto a store neither has created.
    processes = appenders(root, "shared", (1, 2, count), (2, 2, count))
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        assert len(out.splitlines()) == count
    store = sqlite_store(root)
    replayed = store.replay("aaron", "shared")
    assert [c.turn for c in replayed] == list(range(1, 2 * count + 1))
    assert all(c.record["internal_state"] == {"n": c.turn} for c in replayed)
    # They did write at the same time: each one's first append came before the other's last.
    odd, even = ([c.created_at for c in replayed if c.turn % 2 == parity] for parity in (1, 0))
    assert min(odd) < max(even) and min(even) < max(odd)
    store.close()


# --- PostgreSQL specifics ------------------------------------------------------------------


@pytest.mark.slow
def test_a_plain_postgresql_dsn_uses_psycopg(postgres_server, tmp_path):  # noqa: F811
    dsn = new_database(postgres_server).replace("postgresql+psycopg://", "postgresql://")
    with CheckpointStore(DataRoot(tmp_path / "data"), dsn, pii=PII) as store:
        store.append("aaron", "s1", 1, turn("hi"), now=T0)
        assert store.engine.dialect.driver == "psycopg"
        assert [c.turn for c in store.replay("aaron", "s1")] == [1]
    assert not (tmp_path / "data" / "service").exists()  # nothing written to the data root


@pytest.mark.slow
def test_an_unreachable_database_is_an_error_naming_it_without_its_password(postgres_server, tmp_path):  # noqa: F811
    dsn = f"postgresql+psycopg://app:hunter2pw@127.0.0.1:{postgres_server.port}/no_such_database"
    store = CheckpointStore(DataRoot(tmp_path / "data"), dsn, pii=PII)
    with pytest.raises(CheckpointError, match="cannot open the checkpoint store") as error:
        store.append("aaron", "s1", 1, turn("hi"), now=T0)
    assert "hunter2pw" not in str(error.value) and "no_such_database" in str(error.value)
    store.close()


# --- the signal scan -----------------------------------------------------------------------


@pytest.mark.parametrize(("text", "signals"), [
    # remember: a request to keep something
    ("Remember that my sister's birthday is October 12.", {"remember", "date"}),
    ("Please don't forget I take the 9:10 train", {"remember"}),
    ("Keep in mind the staging DB is shared.", {"remember"}),
    ("note that the API is rate limited", {"remember"}),
    ("Can you remember that I'm vegetarian?", {"remember"}),
    # …not a story, a question to the memory, reminiscing, or an off-the-record request
    ("I remembered the keys this time.", set()),
    ("I remember the keys were on the table", set()),
    ("Do you remember my sister's name?", set()),
    ("Remember when we hiked Mount Tam?", set()),
    ("Don't remember this, please.", set()),
    ("I don't forget things easily", set()),
    # correction
    ("Actually, the standup is at 9:30.", {"correction"}),
    ("No, I meant the blue one", {"correction"}),
    ("that's wrong, it's 11,799 miles", {"correction"}),
    ("Correction: the invoice is $400", {"correction"}),
    ("Scratch that, we'll use Postgres", {"correction"}),
    ("I no longer drink coffee", {"correction"}),
    ("I actually liked the movie", set()),
    ("It was factually accurate", set()),
    ("I meant to call her back", set()),
    # rule
    ("Always run make test before pushing", {"rule"}),
    ("never push to main", {"rule"}),
    ("From now on, use tabs", {"rule", "correction"}),  # a new standing state replaces the old one
    ("don't ever commit secrets", {"rule"}),
    ("the hallways were dark", set()),
    ("Never mind, it works", set()),
    ("Nevertheless, ship it", set()),
    # date
    ("see you tomorrow", {"date"}),
    ("the review is on Friday", {"date"}),
    ("It's due 2026-10-01", {"date"}),
    ("we moved here in March", {"date"}),
    ("back in 3 weeks", {"date"}),
    ("let's meet next week", {"date"}),
    ("you may march on", set()),
    ("the sundial was broken", set()),
    # credential
    (f"the key is {AWS_ID}", {"credential"}),
    (f"token {GITHUB_PAT_CLASSIC}", {"credential"}),
    ("the key is in the drawer", set()),
])
def test_each_signal_fires_on_its_words_and_not_on_near_misses(text, signals):
    assert scan(text) == signals


@pytest.mark.parametrize(("text", "high"), [
    ("Remember: Maya is allergic to peanuts", True),
    ("Actually, it's Thursday", True),
    ("Never book the 7am flight", True),
    (f"here is my key {AWS_ID}", True),
    ("See you on Friday", False),  # a date alone
    ("sounds good, thanks", False),
])
def test_a_date_alone_is_not_high_signal(text, high):
    assert high_signal(text) is high
