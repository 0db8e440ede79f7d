"""The clock is data: one ``now`` per run, taken once, shared by every asset of the run."""


from datetime import date, datetime, timezone

import dagster as dg

from memory_assets.defs.clock import Clock, run_now
from memory_assets.defs.partitions import nights
from memory_assets.lib.ingest.intake import ingest_paths
from memory_assets.cli.runner import run_job
from retrieval.config import load_config
from retrieval.moments import parse_utc
from retrieval.paths import DataRoot


def _clock(instance: dg.DagsterInstance, asset: str) -> tuple[str, str]:
    event = instance.get_latest_materialization_event(dg.AssetKey(asset))
    return event.run_id, event.asset_materialization.metadata["clock"].value


def test_every_asset_of_a_run_reads_the_same_now(tmp_path, samples):
    paths = DataRoot.resolve(tmp_path / "data")
    ingest_paths([samples / "personal-assistant.jsonl"], paths.root, load_config())
    before = datetime.now(timezone.utc)
    with dg.instance_for_test() as instance:
        assert run_job(paths, "nightly", extractor="offline", instance=instance)
        clocks = {asset: _clock(instance, asset) for asset in ("memory_items", "lessons_and_triggers", "category_summaries")}
    assert len({run for run, _ in clocks.values()}) == 1  # one nightly run…
    assert len({now for _, now in clocks.values()}) == 1  # …one clock, though its steps ran seconds apart
    assert before <= parse_utc(clocks["lessons_and_triggers"][1]) <= datetime.now(timezone.utc)


def test_a_scheduled_run_reads_its_tick_and_an_explicit_now_wins():
    seen: dict[str, datetime] = {}

    @dg.asset
    def clocked(context: dg.AssetExecutionContext, config: Clock) -> None:
        seen[config.now or "run"] = config.resolve(context)

    with dg.instance_for_test() as instance:
        tick = {"dagster/scheduled_execution_time": "2026-09-10T02:00:00+00:00"}
        assert dg.materialize([clocked], instance=instance, tags=tick).success
        assert seen["run"] == datetime(2026, 9, 10, 2, tzinfo=timezone.utc)
        config = {"ops": {"clocked": {"config": {"now": "2026-01-05T08:30:00"}}}}
        assert dg.materialize([clocked], instance=instance, tags=tick, run_config=config).success
        assert seen["2026-01-05T08:30:00"] == datetime(2026, 1, 5, 8, 30, tzinfo=timezone.utc)
    assert run_now(None).tzinfo is not None


def test_the_nights_partition_is_the_clock_of_a_scheduled_job():
    """A run of a scheduled job for one ``nights`` partition (a backfill of that day from the
    UI, ``memory run --date``) reads that day's tick; the schedules launch the partition of
    the day they fire on."""
    from memory_assets.definitions import defs

    loaded = defs()
    for job, name, fired, at in (("nightly", "nightly_0200", datetime(2026, 9, 10, 2, tzinfo=timezone.utc), 2),
                                 ("weekly", "weekly_sunday_0100", datetime(2026, 9, 13, 1, tzinfo=timezone.utc), 1)):
        assert loaded.resolve_job_def(job).partitions_def == nights
        schedule = loaded.resolve_schedule_def(name)
        context = dg.build_schedule_context(scheduled_execution_time=fired, repository_def=loaded.get_repository_def())
        (request,) = schedule.evaluate_tick(context).run_requests
        assert request.partition_key == fired.date().isoformat()

    seen: list[datetime] = []

    @dg.asset(partitions_def=nights)
    def clocked(context: dg.AssetExecutionContext, config: Clock) -> None:
        seen.append(config.resolve(context))

    job = dg.define_asset_job("weekly", selection=[clocked])
    bound = dg.Definitions(assets=[clocked], jobs=[job]).resolve_job_def("weekly")
    with dg.instance_for_test() as instance:
        assert bound.execute_in_process(partition_key="2026-09-13", instance=instance).success
    assert seen == [datetime(2026, 9, 13, 1, tzinfo=timezone.utc)]  # Sunday's 01:00 tick


def test_a_night_that_has_not_come_cannot_be_replayed(tmp_path):
    import pytest

    with pytest.raises(ValueError, match="no night 2099-01-01: nights run from 2020-01-01 to "):
        run_job(DataRoot.resolve(tmp_path / "data"), "nightly", night=date(2099, 1, 1))
