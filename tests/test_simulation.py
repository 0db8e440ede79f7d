"""120 simulated days with a moving clock: the memory's sleep keeps it small, current and trustworthy.

The machine is "on" only some days (session days, Sundays, the 1st): the jobs take
``now``, so the same rules apply whenever they run, and nothing assumes cron ran daily.

The 120 days run the scheduled jobs' steps in process, as the assets call them (``STEPS``:
each asset of a job's selection, in its order, without a Dagster run); the slow loop
runs three of those nights as real Dagster runs of the jobs (``memory run``) and checks
they publish the same memory.
"""

from __future__ import annotations

import os
from datetime import date, datetime, timedelta, timezone

import dagster as dg
import polars as pl
import pytest

from memory_assets.cli.runner import pending_sessions, run_job
from memory_assets.defs.scheduled_jobs import COVERS, SELECTIONS, record_success
from memory_assets.lib import archive, health
from memory_assets.lib.extraction.session import choose_extractor, extract_session
from memory_assets.lib.ingest.intake import store_session
from memory_assets.lib.items import index
from memory_assets.lib.items.staging import audit_staged, publish_staged, stage_items
from memory_assets.lib.lifecycle import sweeps
from memory_assets.lib.lifecycle.housekeeping import publish_housekeeping
from memory_assets.lib.summaries import update_summaries
from retrieval import MemoryClient
from retrieval import published
from retrieval.config import MemoryConfig, load_config
from retrieval.embeddings import Embedder
from retrieval.scoring import base_importance
from retrieval.paths import DataRoot
from retrieval.store import ItemStore
from tests.factories import item_rows

START = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)  # a Monday
DAYS = 120

SESSIONS = {
    0: ["I drive a 2019 Subaru WRX.",
        "I went to the dentist yesterday for a cleaning.",
        "Never force-push to main.",
        "I prefer morning meetings.",
        "I play the violin in a community orchestra.",
        "Remember this: my blood type is O negative.",
        "I climb at the Momentum bouldering gym every Tuesday.",
        "My hardest bouldering problem so far is a V5.",
        "My bouldering shoes are La Sportiva Solutions.",
        "I go bouldering with my sister on Sunday mornings.",
        "My bouldering chalk bag is from Black Diamond.",
        "My WRX tires are Michelin Pilot Sport 4S.",
        "The WRX brake pads were replaced in December.",
        "The WRX needs premium fuel."],
    10: ["My car is a 2019 Subaru WRX."],
    14: ["My physio appointment is next Friday."],
    30: ["Actually, I now prefer afternoon meetings instead of morning meetings.",
         "I no longer use black; I switched from black to ruff for formatting."],
    # Contradicts the permanent rule of day 0 (a confidence penalty on both sides).
    40: ["I decided you should force-push to main."],
}
# The agent's model calls the permanent rule unhelpful again and again (demote).
DEMOTED = {"never force-push": range(20, 30)}
# The user confirms these facts on these days (a reference: reinforce).
CONFIRMED = {"2019 Subaru WRX": range(6, DAYS + 1, 7), "O negative": (6, 13, 20)}


def _day(n: int, hour: int = 9) -> datetime:
    return START + timedelta(days=n, hours=hour - 9)


def _find(paths: DataRoot, text: str) -> dict:
    rows = ItemStore(paths).items().filter(pl.col("content").str.contains(text, literal=True)).to_dicts()
    assert rows, f"no item mentions {text!r}"
    return rows[0]


def _sweep(kind: str):
    def step(paths: DataRoot, config: MemoryConfig, model: Embedder, now: datetime, job: str) -> None:
        sweeps.write(paths, kind, sweeps.decide(kind, ItemStore(paths).items(), config, now), now)
    return step


def _items(paths: DataRoot, config: MemoryConfig, model: Embedder, now: datetime, job: str) -> None:
    stage_items(paths, model, config, now)
    audit_staged(paths, config)  # the blocking checks


# Each asset the scheduled jobs select, as its asset calls its stage's step.
STEPS = {
    "archive_sweep": _sweep("archive"),
    "cold_sweep": _sweep("cold"),
    "memory_items": _items,
    "entities": None,  # staged with the items
    "edges": None,
    "published_items": lambda paths, config, model, now, job: publish_staged(paths, now),
    "items_index": lambda paths, config, model, now, job: index.optimize(paths),
    "lessons_and_triggers": lambda paths, config, model, now, job: publish_housekeeping(paths, config, now),
    "category_summaries": lambda paths, config, model, now, job: update_summaries(
        paths, model.embed, config, now, rebuild_all=job in ("weekly", "monthly"), model_id=model.model_id),
    "archive_clusters": lambda paths, config, model, now, job: archive.write_clusters(paths, model.embed, config),
    "health_report": lambda paths, config, model, now, job: health.write_report(paths, config, now),
}


def test_every_asset_a_scheduled_job_selects_has_its_step():
    assert {asset for selection in SELECTIONS.values() for asset in selection} == set(STEPS)


def run_steps(paths: DataRoot, job: str, now: datetime, config: MemoryConfig, model: Embedder) -> None:
    """``memory run <job> --now NOW`` without Dagster: the pending sessions stored and
    extracted, then each asset of the job's selection in order, then its success recorded."""
    unread, retry = pending_sessions(paths)
    extractor = choose_extractor("offline", config)
    for session_id in unread + retry:
        store_session(paths, session_id, config, now)
        assert extract_session(paths, session_id, extractor, config, now).failed is None
    for asset in SELECTIONS[job]:
        if STEPS[asset] is not None:
            STEPS[asset](paths, config, model, now, job)
    for covered in COVERS[job]:
        record_success(paths, covered, now)


def simulate(root, days: range, run) -> tuple[DataRoot, MemoryClient, dict]:
    """The days of ``SESSIONS``, ``CONFIRMED`` and ``DEMOTED``, with the jobs due each day
    run by ``run(paths, job, day)``, and what the agent saw on the days it asked."""
    paths = DataRoot.resolve(root)
    client = MemoryClient(paths.root)
    seen: dict[str, object] = {}
    for n in days:
        day = _day(n)
        jobs = []
        if n in SESSIONS:
            client.flush_session(f"day-{n:03d}", [
                {"role": "user", "speaker": "Dana", "content": text, "ts": (day + timedelta(minutes=i)).isoformat()}
                for i, text in enumerate(SESSIONS[n])])
            jobs.append("nightly")
        for text, confirmed in CONFIRMED.items():
            if n in confirmed:
                client.reinforce(_find(paths, text)["id"], now=day)
        for text, demoted in DEMOTED.items():
            if n in demoted:
                client.demote(_find(paths, text)["id"], now=day)
        if day.weekday() == 6:
            jobs = ["weekly"]  # the weekly job does the nightly work too
        if day.day == 1:
            jobs.append("monthly")
        for job in jobs:
            run(paths, job, day)
        if published.read(paths) is not None:
            permanent = ItemStore(paths).items().filter(pl.col("tier") == "permanent")
            lost = permanent.filter(pl.col("status").is_in(["purged", "archived", "cold"]))
            seen.setdefault("permanent_lost", []).extend((n, c) for c in lost["content"].to_list())
            seen.setdefault("permanent_seen", set()).update(permanent["id"].to_list())
        if n == 45:
            seen["meetings"] = client.inject("what time does Dana like meetings", now=day, record=False)
        if n == 25:  # Friday 30 January, and the day before
            seen["due"] = client.due_triggers(day)
            seen["not_due"] = client.due_triggers(day - timedelta(days=1))
    return paths, client, seen


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    keep = os.environ.get("MEMORY_SIM_DIR")  # keep the simulated data root to look at
    config = load_config()
    model = Embedder(config)
    return simulate(keep or tmp_path_factory.mktemp("sim") / "data", range(DAYS + 1),
                    lambda paths, job, day: run_steps(paths, job, day, config, model))


# The first night (day 0's sessions), the first Sunday and the first 1st of a month.
DAGSTER_DAYS = range(0, 27 + 1)


@pytest.mark.slow
def test_the_jobs_as_dagster_runs_publish_what_their_steps_publish(tmp_path):
    config = load_config()
    model = Embedder(config)
    by_steps, *_ = simulate(tmp_path / "steps", DAGSTER_DAYS,
                            lambda paths, job, day: run_steps(paths, job, day, config, model))
    with dg.instance_for_test() as instance:
        ran: list[str] = []

        def run(paths, job, day):
            assert run_job(paths, job, now=day, extractor="offline", instance=instance), f"{job} failed on {day}"
            ran.append(job)

        by_dagster, *_ = simulate(tmp_path / "dagster", DAGSTER_DAYS, run)
    assert {"nightly", "weekly", "monthly"} <= set(ran)
    assert item_rows(by_dagster) == item_rows(by_steps)
    assert sorted(p.name for p in by_dagster.summaries.glob("*.md")) == sorted(p.name for p in by_steps.summaries.glob("*.md"))
    assert MemoryClient(by_dagster.root).lessons() == MemoryClient(by_steps.root).lessons()


def test_a_fact_referenced_weekly_survives(simulated):
    paths, _, _ = simulated
    wrx = _find(paths, "2019 Subaru WRX")
    assert wrx["status"] == "active" and wrx["reference_count"] >= 15
    assert wrx["importance"] >= 0.8  # reinforced, never decayed below its base


def test_duplicates_are_merged(simulated):
    paths, _, _ = simulated
    wrx = _find(paths, "2019 Subaru WRX")
    assert ItemStore(paths).items().filter(pl.col("content").str.contains("Subaru WRX")).height == 1
    assert wrx["merged_from"] and len({t.split(":")[0] for t in wrx["source_turn_ids"]}) == 2


def test_an_unreferenced_transient_fact_is_gone(simulated):
    paths, client, _ = simulated
    dentist = _find(paths, "dentist")
    assert dentist["tier"] == "transient" and dentist["status"] == "purged"
    assert dentist["id"] not in {h.id for h in client.search("dentist cleaning", k=10)}
    archive = pl.read_parquet(paths.archive / "items.parquet")
    assert dentist["id"] in archive["id"].to_list()  # purged, never deleted


def test_a_permanent_fact_never_decays(simulated):
    paths, _, _ = simulated
    rule = _find(paths, "never force-push")
    assert rule["tier"] == "permanent" and rule["status"] == "active"
    assert rule["importance"] == pytest.approx(base_importance(load_config(), rule["category"]))


def test_no_permanent_item_is_purged_despite_demotions_and_a_contradiction(simulated):
    paths, _, seen = simulated
    rule = _find(paths, "never force-push")
    assert rule["reinforcement"] <= -10 and rule["contradicts"], "the simulation demotes and contradicts it"
    assert seen["permanent_seen"] and seen["permanent_lost"] == []


def test_a_reversed_preference_is_superseded_and_never_injected(simulated):
    paths, _, seen = simulated
    morning = _find(paths, "prefers morning meetings")
    assert morning["status"] == "superseded" and morning["superseded_by"]
    injected = seen["meetings"]
    assert morning["id"] not in {h.id for h in injected.items}
    assert any("afternoon" in h.content for h in injected.items)


def test_category_ttl_expires_an_unreferenced_hobby(simulated):
    paths, _, _ = simulated
    violin = _find(paths, "violin")
    assert violin["category"] == "hobbies" and violin["status"] == "archived"
    assert violin["expires_at"] is not None
    assert violin["expires_at"] <= _day(0) + timedelta(days=61)


def test_promotion_to_memory_md(simulated):
    paths, _, seen = simulated
    blood = _find(paths, "O negative")
    assert blood["promoted"] is True and blood["reference_count"] == 3
    assert "O negative" in paths.memory_md.read_text()


def test_a_lesson_from_a_correction(simulated):
    _, client, _ = simulated
    lessons = client.lessons()
    assert any("ruff" in lesson.lower() for lesson in lessons), lessons


def test_a_forward_trigger_is_due_on_its_day(simulated):
    _, _, seen = simulated
    # "next Friday", said on Monday 19 January, is the Friday of next week: 30 January.
    physio = [t for t in seen["due"] if "physio" in t["message"]]
    assert physio and physio[0]["trigger_date"] == date(2026, 1, 30)
    assert not any("physio" in t["message"] for t in seen["not_due"])


def test_archive_clusters_have_insights(simulated):
    paths, _, _ = simulated
    clusters = pl.read_parquet(paths.clusters)
    assert clusters.height >= 1
    assert all(len(i) > 20 for i in clusters["insight"].to_list())
    archived = set(ItemStore(paths).items().filter(pl.col("status").is_in(["archived", "cold"]))["id"].to_list())
    assert all(set(m) <= archived for m in clusters["member_ids"].to_list())


def test_a_health_report_with_plots(simulated):
    paths, _, _ = simulated
    reports = sorted(paths.health.glob("2026-*/health.md"))
    assert [r.parent.name for r in reports] == ["2026-02-01", "2026-03-01", "2026-04-01", "2026-05-01"]
    pngs = list(reports[-1].parent.glob("*.png"))
    assert len(pngs) >= 3 and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


def test_every_job_recorded_its_success_and_overdue_is_reported(simulated):
    _, client, _ = simulated
    last_sunday = 118  # the weekly run does the nightly work too
    assert client.overdue_jobs(_day(last_sunday, 20)) == []
    assert client.overdue_jobs(_day(DAYS, 10)) == ["nightly"]  # the machine was off for two nights
    assert client.overdue_jobs(_day(DAYS + 40)) == ["nightly", "weekly", "monthly"]
