"""Where a newcomer hit a traceback or an empty answer, `memory` says what is wrong, in one line.

A data root that is missing (a typo) is refused by the commands that read it, naming it
and a near-miss; one that cannot be written is refused by the commands that write, naming
it and what to pass; `memory serve` on a busy port fails at once; Ctrl-C during `memory
materialize` stops after the step under way, and the next run publishes what an
uninterrupted run publishes (`memory_assets/cli/root_access.py`, `interrupts.py`).
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest

from memory_assets.cli import main as memory
from memory_assets.cli import root_access
from memory_assets.cli.main import build_parser
from memory_assets.cli.runner import materialize_pending
from memory_assets.lib.ingest.intake import ingest_paths
from retrieval import published
from retrieval.config import load_config
from retrieval.paths import DataRoot
from retrieval.store import ItemStore
from tests.conftest import REPO, SAMPLES

# Four sessions of the committed samples, two per run: two ingest steps, then the items.
SAMPLE = "personal-assistant.jsonl"
TWO_PER_RUN = "[pipeline]\nsessions_per_run = 2\n"

# Every command that must find a data root already there (root_access.py's table).
NEEDS_A_ROOT = [
    ["search", "oil change"], ["inject", "--context", "oil change"], ["stats"], ["list"], ["show", "m:4821"],
    ["export"], ["materialize"], ["run", "nightly"], ["rollback"], ["rollback", "--list"], ["publish"],
    ["pin", "m:4821"], ["unpin", "m:4821"], ["edit", "m:4821", "new words"], ["forget", "m:4821"],
    ["erase", "--id", "m:4821", "--yes"], ["enable", "--namespace", "alice"], ["keys", "list"],
    ["keys", "revoke", "0123456789ab"],
]
# Commands that write under a data root that exists (an unwritable one is refused up front).
WRITES = [
    ["materialize"], ["run", "nightly"], ["publish"], ["rollback"], ["pin", "m:4821"],
    ["edit", "m:4821", "new words"], ["forget", "m:4821"], ["erase", "--id", "m:4821", "--yes"],
    ["enable", "--namespace", "alice"], ["keys", "revoke", "0123456789ab"],
]


def _samples(folder: Path) -> Path:
    """The committed samples copied to ``folder`` (the conftest ``samples`` fixture, for
    module-scoped fixtures); the one transcript file these tests use."""
    shutil.copytree(SAMPLES, folder)
    return folder / SAMPLE


def _items(root: Path) -> list[tuple[str, str, str]]:
    frame = ItemStore(DataRoot.resolve(root)).items()
    return sorted(zip(frame["id"].to_list(), frame["content"].to_list(), frame["status"].to_list()))


def _err_line(capsys) -> str:
    """stderr, which must be one line (no traceback)."""
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> list[tuple[str, str, str]]:
    """The items a `memory materialize` that nobody interrupts publishes from the sample."""
    base = tmp_path_factory.mktemp("clean")
    root = base / "data"
    ingest_paths([_samples(base / "samples")], root, load_config())
    with dg.instance_for_test() as instance:
        assert not materialize_pending(DataRoot.resolve(root), extractor="offline", instance=instance).failed
    items = _items(root)
    assert len(items) > 5
    return items


# --- a mistyped data root --------------------------------------------------------------

@pytest.mark.parametrize("command", NEEDS_A_ROOT, ids=" ".join)
def test_a_command_that_needs_a_data_root_exits_nonzero_and_names_the_missing_one(tmp_path, capsys, command):
    root = tmp_path / "nope"
    assert memory(["--data-root", str(root), *command]) == 2
    err = _err_line(capsys)
    assert err.startswith(f"memory: no data root at {root}") and "memory ingest" in err and "--data-root" in err
    assert not root.exists()  # nothing created on the way


def test_search_on_a_missing_data_root_exits_nonzero_and_names_it(tmp_path, capsys):
    root = tmp_path / "nope"
    assert memory(["search", "--data-root", str(root), "oil change"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # not an empty answer
    assert f"no data root at {root}" in captured.err


def test_a_typo_in_the_data_root_gets_a_did_you_mean(tmp_path, capsys):
    (tmp_path / "memory" / "data" / "inbox").mkdir(parents=True)
    (tmp_path / "memo").mkdir()  # a folder, but no data root: not suggested
    assert memory(["--data-root", str(tmp_path / "memroy" / "data"), "stats"]) == 2
    assert f"(did you mean {tmp_path / 'memory' / 'data'}?)" in _err_line(capsys)
    assert memory(["--data-root", str(tmp_path / "mem"), "stats"]) == 2
    assert "did you mean" not in _err_line(capsys)


def test_a_data_root_that_is_a_file_is_named_as_one(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("not a folder")
    assert memory(["--data-root", str(afile), "list"]) == 2
    assert f"data root {afile} is a file, not a folder" in _err_line(capsys)


@pytest.mark.parametrize("command, made", [
    (["keys", "create", "alice"], "service"),
    (["disable", "--namespace", "alice"], "settings"),
], ids=lambda c: " ".join(c) if isinstance(c, list) else c)
def test_the_commands_that_put_something_in_create_a_missing_data_root(tmp_path, command, made):
    root = tmp_path / "new" / "data"
    assert memory(["--data-root", str(root), *command]) == 0
    assert (root / made).is_dir()


def test_ingest_creates_a_missing_data_root(tmp_path):
    root = tmp_path / "new" / "data"
    assert memory(["--data-root", str(root), "ingest", str(SAMPLES / SAMPLE)]) == 0
    assert len(list((root / "inbox").iterdir())) == 4


def test_an_unconfirmed_erase_refuses_on_its_own_terms_before_the_data_root(tmp_path, capsys):
    assert memory(["--data-root", str(tmp_path / "nope"), "erase", "--namespace", "alice"]) == 2
    assert "--yes" in _err_line(capsys)


def test_an_object_store_root_is_not_checked_so_an_empty_prefix_works_as_before(monkeypatch):
    # An unreachable endpoint: a check that called the store would fail or hang here.
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    for command in (["search", "x"], ["materialize"], ["ingest", "f.jsonl"]):
        args = build_parser().parse_args(["--data-root", "s3://no-such-bucket/prefix", *command])
        root_access.check(args)


def test_every_command_says_what_it_needs_of_the_data_root():
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(commands.choices) == set(root_access.USES)


# --- a data root that cannot be written ------------------------------------------------

@pytest.mark.parametrize("command", [
    ["ingest", str(SAMPLES / SAMPLE)], ["import", str(SAMPLES / SAMPLE)], ["keys", "create", "alice"],
    ["disable", "--namespace", "alice"], ["serve", "--port", "0"],
], ids=" ".join)
def test_a_file_in_the_way_of_the_data_root_is_refused_naming_it(tmp_path, capsys, command):
    """Root cannot write there either (tests run as root, where chmod stops nothing)."""
    afile = tmp_path / "afile"
    afile.write_text("a file where a folder should be")
    root = afile / "data"
    assert memory(["--data-root", str(root), *command]) == 2
    err = _err_line(capsys)
    assert err == (f"memory: data root {root} is not writable ({afile} is a file, not a folder); "
                   "pass --data-root DIR or MEMORY_DATA_ROOT")


@pytest.mark.parametrize("code, reason", [(errno.EACCES, "Permission denied"), (errno.EROFS, "Read-only file system")])
@pytest.mark.parametrize("command", [["ingest", str(SAMPLES / SAMPLE)], ["keys", "create", "alice"], *WRITES],
                         ids=" ".join)
def test_a_data_root_that_refuses_writes_is_refused_before_any_work(tmp_path, capsys, monkeypatch, command, code,
                                                                     reason):
    root = tmp_path / "data"
    root.mkdir()

    def refused(*args, dir=None, **kwargs):  # what the disk answers: no permission, or a read-only mount
        raise OSError(code, os.strerror(code), str(Path(dir) / "probe"))

    monkeypatch.setattr("tempfile.TemporaryFile", refused)
    assert memory(["--data-root", str(root), *command]) == 2
    err = _err_line(capsys)
    assert err.startswith(f"memory: data root {root} is not writable ({reason}: {root}")
    assert err.endswith("pass --data-root DIR or MEMORY_DATA_ROOT")
    assert list(root.iterdir()) == []  # refused before anything was written


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through chmod; the monkeypatched tests stand in")
def test_a_read_only_folder_is_refused_for_a_real_user(tmp_path, capsys):
    root = tmp_path / "data"
    root.mkdir()
    root.chmod(0o555)
    try:
        assert memory(["--data-root", str(root), "ingest", str(SAMPLES / SAMPLE)]) == 2
        assert f"data root {root} is not writable (Permission denied" in _err_line(capsys)
    finally:
        root.chmod(0o755)


def test_a_write_refused_deep_inside_a_command_is_worded_once_by_the_dispatch(tmp_path, capsys, monkeypatch):
    """What the up-front check cannot see (a subfolder someone else owns) reaches `main`."""
    root = tmp_path / "data"
    root.mkdir()

    def refused(path, data, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr("retrieval.disabled.atomic_write", refused)
    assert memory(["--data-root", str(root), "disable", "--namespace", "alice"]) == 2
    assert _err_line(capsys) == (f"memory: data root {root} is not writable (Permission denied: "
                                 f"{root / 'settings' / 'disabled.json'}); pass --data-root DIR or MEMORY_DATA_ROOT")


def test_a_folder_where_the_data_root_needs_a_file_is_named(tmp_path, capsys):
    root = tmp_path / "data"
    root.mkdir()
    (root / "settings").write_text("a file where a folder should be")
    assert memory(["--data-root", str(root), "disable", "--namespace", "alice"]) == 2
    assert f"({root / 'settings'} is a file, not a folder)" in _err_line(capsys)


def test_an_error_about_another_path_is_not_blamed_on_the_data_root(tmp_path, monkeypatch):
    root = tmp_path / "data"
    root.mkdir()

    def refused(path, data, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", "/elsewhere/file")

    monkeypatch.setattr("retrieval.disabled.atomic_write", refused)
    with pytest.raises(PermissionError):
        memory(["--data-root", str(root), "disable", "--namespace", "alice"])


# --- memory serve on a busy port -------------------------------------------------------

def test_serve_on_a_busy_port_fails_at_once_naming_host_port_and_the_flag(tmp_path, capsys):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        started = time.monotonic()
        assert memory(["--data-root", str(tmp_path / "data"), "serve", "--port", str(port)]) == 2
        took = time.monotonic() - started
    err = _err_line(capsys)
    assert f"127.0.0.1:{port} is already in use" in err and "--port" in err
    assert "http://" not in err  # failed before the banner
    assert took < 15  # before the model and the snapshot load


def test_serve_listens_on_the_socket_it_checked(tmp_path):
    from memory_assets.cli.service import listen

    with listen("127.0.0.1", 0) as sock:
        port = sock.getsockname()[1]
        assert port > 0
        with socket.socket() as other, pytest.raises(OSError):
            other.bind(("127.0.0.1", port))
            other.listen()


# --- Ctrl-C during memory materialize ----------------------------------------------------

@pytest.fixture
def waiting(tmp_path, monkeypatch) -> Path:
    """A data root with the sample's four sessions in the inbox, two per run."""
    config = tmp_path / "two.toml"
    config.write_text(TWO_PER_RUN)
    monkeypatch.setenv("MEMORY_CONFIG", str(config))
    root = tmp_path / "data"
    ingest_paths([_samples(tmp_path / "samples")], root, load_config())
    return root


def _interrupt_inside_the_first_ingest(monkeypatch) -> list[str]:
    """Ctrl-C (SIGINT to this process) from inside the first run's op, mid-step; the
    handlers in force when it was sent."""
    from memory_assets.defs.ingest import assets

    store, sent = assets.store_session, []

    def store_session(paths, session_id, *args, **kwargs):
        if not sent:
            handler = signal.getsignal(signal.SIGINT)
            sent.append(handler)
            if handler is not signal.default_int_handler:  # never interrupt the test run itself
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.5)  # the main thread's handler runs meanwhile
        return store(paths, session_id, *args, **kwargs)

    monkeypatch.setattr(assets, "store_session", store_session)
    return sent


def test_ctrl_c_during_materialize_stops_after_the_step_and_the_rerun_publishes_the_same_items(
        waiting, clean, monkeypatch, capsys):
    before = signal.getsignal(signal.SIGINT)
    with dg.instance_for_test() as instance:
        monkeypatch.setattr("memory_assets.cli.runner.local_instance", lambda paths: instance)
        sent = _interrupt_inside_the_first_ingest(monkeypatch)
        assert memory(["--data-root", str(waiting), "materialize", "--quiet"]) == 130
        assert sent and sent[0] is not signal.default_int_handler
        err = capsys.readouterr().err
        assert "Traceback" not in err
        assert err.strip().splitlines()[-1] == (
            "memory materialize: stopped (Ctrl-C) after ingest_session for pa-2026-09-02, pa-2026-09-09; "
            "run `memory materialize` again to continue")
        # The step under way ran to its end (its op was not cut halfway); nothing after it ran.
        assert sorted(p.name for p in (waiting / "warehouse" / "resources").iterdir()) == [
            "pa-2026-09-02", "pa-2026-09-09"]
        assert published.read(DataRoot.resolve(waiting)) is None
        assert {r.status for r in instance.get_runs()} == {dg.DagsterRunStatus.SUCCESS}
        assert signal.getsignal(signal.SIGINT) is before  # handed back

        assert memory(["--data-root", str(waiting), "materialize", "--quiet"]) == 0
    assert "sessions: 2 done, 0 failed" in capsys.readouterr().out
    assert _items(waiting) == clean


def test_a_keyboard_interrupt_between_steps_stops_there_and_the_rerun_publishes_the_same_items(
        waiting, clean, monkeypatch, capsys):
    from memory_assets.cli import runner

    run_sessions, calls = runner._run_sessions, []

    def second_raises(*args, **kwargs):
        calls.append(args[2])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return run_sessions(*args, **kwargs)

    with dg.instance_for_test() as instance:
        monkeypatch.setattr(runner, "local_instance", lambda paths: instance)
        monkeypatch.setattr(runner, "_run_sessions", second_raises)
        assert memory(["--data-root", str(waiting), "materialize", "--quiet"]) == 130
        assert _err_line(capsys) == (
            "memory materialize: stopped (Ctrl-C) after ingest_session for pa-2026-09-02, pa-2026-09-09; "
            "run `memory materialize` again to continue")
        monkeypatch.setattr(runner, "_run_sessions", run_sessions)
        assert memory(["--data-root", str(waiting), "materialize", "--quiet"]) == 0
    assert _items(waiting) == clean


def test_ctrl_c_inside_a_library_call_stops_it_instead_of_going_on_to_the_next_run(waiting, monkeypatch):
    """Outside the command (a library call), Dagster stops the op and fails the run; the
    call does not go on to the next run as if nothing happened."""
    sent = _interrupt_inside_the_first_ingest(monkeypatch)
    with dg.instance_for_test() as instance:
        with pytest.raises(KeyboardInterrupt, match="interrupted"):
            materialize_pending(DataRoot.resolve(waiting), instance=instance)
        assert sent and sent[0] is not signal.default_int_handler  # Dagster's, during its op
        assert [r.status for r in instance.get_runs()] == [dg.DagsterRunStatus.FAILURE]
    assert published.read(DataRoot.resolve(waiting)) is None


TWICE = """
import os, signal, time
from memory_assets.cli import interrupts

def run():
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(1)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(60)

with interrupts.deferred("materialize"), interrupts.step("a long step"):
    interrupts.shielded(run)
print("went on")
"""


def test_a_second_ctrl_c_stops_at_once():
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", TWICE], capture_output=True, text=True, timeout=60, cwd=REPO,
                          check=False)
    assert done.returncode == 130 and time.monotonic() - started < 30
    assert done.stdout == "" and done.stderr.splitlines() == [
        "memory materialize: stopping after a long step (Ctrl-C again stops at once)",
        "memory materialize: stopped at once (second Ctrl-C) during a long step; the next `memory materialize` "
        "recovers and carries on"]


@pytest.mark.slow
def test_a_real_ctrl_c_stops_a_real_materialize_and_the_rerun_publishes_the_same_items(tmp_path, clean):
    root = tmp_path / "data"
    ingest_paths([_samples(tmp_path / "samples")], root, load_config())
    config = tmp_path / "two.toml"
    config.write_text(TWO_PER_RUN)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MEMORY_CONFIG": str(config), "DAGSTER_HOME": str(root / "dagster")}
    env.pop("MEMORY_DATA_ROOT", None)
    memory_bin = REPO / ".venv" / "bin" / "memory"
    command = [str(memory_bin if memory_bin.exists() else Path(sys.executable).parent / "memory"),
               "--data-root", str(root), "materialize", "--quiet"]
    # Its own process group, signalled as a whole: what a terminal's Ctrl-C does.
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    resources = root / "warehouse" / "resources"
    deadline = time.monotonic() + 300
    while not (resources.is_dir() and any(resources.iterdir())):  # the first run is under way
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=600)
    assert process.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err  # nor from Dagster's log tails
    # After the first step, or the second if the first ended as the signal was sent.
    assert re.fullmatch(r"memory materialize: stopped \(Ctrl-C\) after ingest_session for pa-2026-09-\d\d, "
                        r"pa-2026-09-\d\d; run `memory materialize` again to continue", err.strip().splitlines()[-1])
    rerun = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert rerun.returncode == 0, rerun.stderr
    assert "memory_items: published" in rerun.stdout
    assert _items(root) == clean
