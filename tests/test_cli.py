"""The `memory` command says what it did and what failed, and never fails silently."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import dagster as dg
import pytest

from memory_assets.cli import main as memory
from memory_assets.lib.items import publish
from memory_assets.cli.runner import items_stale, materialize_pending
from retrieval import MemoryClient, jobs
from retrieval.paths import DataRoot
from retrieval.store import ItemStore
from tests.factories import write_transcript

T0 = datetime(2026, 9, 1, 9, tzinfo=timezone.utc)


def test_a_partial_ingest_failure_exits_non_zero_and_names_the_line(tmp_path, capsys):
    good = write_transcript(tmp_path / "good.jsonl", "s1")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(good.read_text() + '{"session_id": "s1", "turn": 9, "content": "no role"}\n')
    assert memory(["--data-root", str(tmp_path / "data"), "ingest", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "bad.jsonl line 3" in err and 'missing "role"' in err


def test_a_forced_wrong_format_is_an_error_not_zero_messages(tmp_path, capsys):
    locomo = tmp_path / "conv.json"
    locomo.write_text(json.dumps({"messages": []}))
    assert memory(["--data-root", str(tmp_path / "data"), "ingest", "--format", "locomo", str(locomo)]) == 1
    assert "no messages read as locomo" in capsys.readouterr().err


def test_a_file_with_a_byte_order_mark_is_read(tmp_path):
    plain = write_transcript(tmp_path / "plain.jsonl", "s1")
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    assert memory(["ingest", "--data-root", str(tmp_path / "data"), str(bom)]) == 0  # --data-root after too
    assert list((tmp_path / "data" / "inbox" / "s1").glob("*.jsonl"))


def test_runs_are_named_after_what_they_do_and_memory_run_prints_counts(tmp_path, capsys, monkeypatch):
    root = tmp_path / "data"
    memory(["--data-root", str(root), "ingest", str(write_transcript(tmp_path / "s.jsonl", "s1"))])
    home = root / "dagster"
    home.mkdir(parents=True)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with dg.instance_for_test(temp_dir=str(home)) as instance:
        monkeypatch.setattr("memory_assets.cli.runner.local_instance", lambda paths: instance)
        assert memory(["--data-root", str(root), "run", "nightly", "--now", (T0 + timedelta(days=1)).isoformat()]) == 0
        assert memory(["--data-root", str(root), "materialize", "--items", "--quiet"]) == 0
        names = {r.job_name for r in instance.get_runs()}
    assert {"ingest_session", "materialize_items", "nightly"} <= names
    assert not any(n.startswith("__ephemeral") for n in names)
    out = capsys.readouterr().out
    assert "nightly: succeeded; items: 2 (active 2)" in out and "lifecycle:" in out


def test_memory_run_date_replays_that_days_scheduled_run_with_its_clock(tmp_path, monkeypatch):
    root = tmp_path / "data"
    memory(["--data-root", str(root), "ingest", str(write_transcript(tmp_path / "s.jsonl", "s1"))])
    with dg.instance_for_test() as instance:
        monkeypatch.setattr("memory_assets.cli.runner.local_instance", lambda paths: instance)
        assert memory(["--data-root", str(root), "run", "weekly", "--date", "2026-09-13"]) == 0
        clocks = {a: instance.get_latest_materialization_event(dg.AssetKey(a)).asset_materialization.metadata["clock"]
                  for a in ("archive_sweep", "memory_items", "lessons_and_triggers")}
        (weekly,) = instance.get_runs(filters=dg.RunsFilter(job_name="weekly"))
    assert {c.value for c in clocks.values()} == {"2026-09-13T01:00:00+00:00"}  # Sunday's 01:00 tick
    assert weekly.tags["dagster/partition"] == "2026-09-13"  # a backfill of that night's partition
    with pytest.raises(SystemExit):
        memory(["--data-root", str(root), "run", "nightly", "--date", "2026-09-13", "--now", "2026-09-13T02:00"])


def test_pending_feedback_and_stale_items_are_built_by_the_next_materialize(tmp_path, instance):
    paths = DataRoot.resolve(tmp_path / "data")
    client = MemoryClient(paths.root)
    client.flush_session("s1", [{"role": "user", "content": "I drive a 2019 Subaru WRX."}])
    materialize_pending(paths, instance=instance)
    assert items_stale(paths) is None
    item = ItemStore(paths).items().row(0, named=True)
    client.forget(item["id"])
    assert items_stale(paths) == "feedback events waiting"
    summary = materialize_pending(paths, instance=instance)
    assert summary.items_materialized and ItemStore(paths).get(item["id"])["status"] == "purged"
    # Facts written after the published items (a run that died before publishing).
    facts = next(paths.extracted_facts.glob("*.parquet"))
    facts.touch()
    assert items_stale(paths) == "facts newer than the published items"


def test_a_rollback_holds_until_memory_publish(tmp_path, instance, capsys):
    paths = DataRoot.resolve(tmp_path / "data")
    client = MemoryClient(paths.root)
    client.flush_session("s1", [{"role": "user", "content": "I drive a 2019 Subaru WRX."}])
    materialize_pending(paths, instance=instance)
    client.flush_session("s2", [{"role": "user", "content": "My sister Maya lives in Lisbon."}])
    materialize_pending(paths, instance=instance)
    second = publish.current(paths).version
    assert memory(["--data-root", str(paths.root), "rollback"]) == 0
    assert "held there" in capsys.readouterr().out
    first = publish.current(paths).version
    assert first < second and publish.held(paths) == first
    client.flush_session("s3", [{"role": "user", "content": "I play the violin in an orchestra."}])
    summary = materialize_pending(paths, instance=instance)
    assert summary.items_materialized and summary.held == first
    assert publish.current(paths).version == first  # staged and audited, not published
    assert publish.staged(paths).version > second
    assert memory(["--data-root", str(paths.root), "publish"]) == 0
    assert publish.current(paths).version == publish.staged(paths).version and publish.held(paths) is None
    assert any("violin" in c for c in ItemStore(paths).items()["content"].to_list())


def test_an_agent_request_is_run_by_the_next_materialize(tmp_path, instance):
    paths = DataRoot.resolve(tmp_path / "data")
    client = MemoryClient(paths.root)
    client.flush_session("s1", [{"role": "user", "content": "I drive a 2019 Subaru WRX."}])
    materialize_pending(paths, instance=instance)
    assert "nightly" in client.overdue_jobs()
    client.request_run("nightly")
    assert [r["job"] for r in jobs.pending_requests(paths)] == ["nightly"]
    summary = materialize_pending(paths, instance=instance)
    assert summary.jobs == ["nightly"] and jobs.pending_requests(paths) == []
    assert "nightly" not in client.overdue_jobs()
    with pytest.raises(ValueError):
        client.request_run("drop_everything")


def test_the_sensor_honours_an_agent_request(tmp_path, instance):
    from memory_assets.defs.lifecycle.sensors import overdue_jobs_sensor
    from memory_assets.defs.runtime import MemoryRoot
    from memory_assets.defs.scheduled_jobs import record_success

    paths = DataRoot.resolve(tmp_path / "data")
    for job in ("nightly", "weekly", "monthly"):
        record_success(paths, job, datetime.now(timezone.utc))
    MemoryClient(paths.root).request_run("weekly")
    context = dg.build_sensor_context(instance=instance, resources={"memory": MemoryRoot(data_root=str(paths.root))})
    result = overdue_jobs_sensor(context)
    assert [r.job_name for r in result.run_requests] == ["weekly"]
    assert jobs.pending_requests(paths) == []


def test_a_first_start_catches_up_one_night_not_a_month(tmp_path, instance):
    """A new data root: only the nightly is launched (weekly and monthly wait for their
    schedules); a machine that was off launches its late jobs one at a time, none while
    another scheduled job is still running."""
    from memory_assets.defs.lifecycle.sensors import overdue_jobs_sensor
    from memory_assets.defs.runtime import MemoryRoot
    from memory_assets.defs.scheduled_jobs import record_success

    paths = DataRoot.resolve(tmp_path / "data")
    context = dg.build_sensor_context(instance=instance, resources={"memory": MemoryRoot(data_root=str(paths.root))})
    first = overdue_jobs_sensor(context)
    assert [r.job_name for r in first.run_requests] == ["nightly"]
    assert set(MemoryClient(paths.root).overdue_jobs()) == {"nightly", "weekly", "monthly"}  # reported all the same
    month_ago = datetime.now(timezone.utc) - timedelta(days=40)
    for job in ("nightly", "weekly", "monthly"):
        record_success(paths, job, month_ago)
    assert [r.job_name for r in overdue_jobs_sensor(context).run_requests] == ["nightly"]
    record_success(paths, "nightly", datetime.now(timezone.utc))
    assert [r.job_name for r in overdue_jobs_sensor(context).run_requests] == ["weekly"]
    instance.add_run(dg.DagsterRun(job_name="weekly", run_id="a" * 36, status=dg.DagsterRunStatus.STARTED))
    assert isinstance(overdue_jobs_sensor(context), dg.SkipReason)  # the weekly is still running
    assert jobs.catch_up(["weekly", "monthly"], {}) is None and jobs.catch_up([], {}) is None
    assert jobs.catch_up(["weekly", "monthly"], {"monthly": "2026-01-01T00:00:00+00:00"}) == "monthly"


def test_pin_from_the_command_line(tmp_path, instance, capsys):
    paths = DataRoot.resolve(tmp_path / "data")
    MemoryClient(paths.root).flush_session("s1", [{"role": "user", "content": "I drive a 2019 Subaru WRX."}])
    materialize_pending(paths, instance=instance)
    item = ItemStore(paths).items().row(0, named=True)
    assert memory(["pin", "--data-root", str(paths.root), item["id"]]) == 0
    assert "pinned" in capsys.readouterr().out
    materialize_pending(paths, instance=instance)
    assert ItemStore(paths).get(item["id"])["tier"] == "permanent"
    assert memory(["--data-root", str(paths.root), "pin", "m:0000000"]) == 1


def test_the_health_report_shows_each_plot_inline_in_the_ui(tmp_path):
    from memory_assets.lib import health

    pngs = []
    for name in ("items_by_category.png", "stale.png"):
        (tmp_path / name).write_bytes(b"\x89PNG\r\n\x1a\n" + name.encode())
        pngs.append(tmp_path / name)
    markdown = "# Health\n\n![Active](items_by_category.png)\n\n![Stale](stale.png)\n"
    shown = health.inline_plots(markdown, pngs)
    assert "](items_by_category.png)" not in shown and "](stale.png)" not in shown
    assert shown.count("data:image/png;base64,") == 2


def test_search_and_inject_read_the_namespace_asked_for(tmp_path, instance, capsys):
    paths = DataRoot.resolve(tmp_path / "data")
    MemoryClient(paths.root).flush_session("a1", [{"role": "user", "content": "I drive a red 2019 Subaru WRX."}],
                                           user="alice")
    materialize_pending(paths, instance=instance)
    capsys.readouterr()
    assert memory(["--data-root", str(paths.root), "search", "WRX", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []  # not the default namespace's
    assert memory(["--data-root", str(paths.root), "search", "WRX", "--namespace", "alice", "--json"]) == 0
    assert "Subaru" in json.loads(capsys.readouterr().out)[0]["content"]
