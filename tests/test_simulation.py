"""120 simulated days with a moving clock: the memory's sleep keeps it small, current and trustworthy.

The machine is "on" only some days (session days, Sundays, the 1st): the jobs take
``now``, so the same rules apply whenever they run, and nothing assumes cron ran daily.
"""

from __future__ import annotations

import os
from datetime import date, datetime, timedelta, timezone

import dagster as dg
import polars as pl
import pytest

from memory_assets.cli.runner import run_job
from retrieval import MemoryClient
from retrieval import published
from retrieval.config import load_config
from retrieval.scoring import base_importance
from retrieval.paths import DataRoot
from retrieval.store import ItemStore

# 30 Dagster runs of the scheduled jobs, in process: the slow loop.
pytestmark = pytest.mark.slow

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


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    keep = os.environ.get("MEMORY_SIM_DIR")  # keep the simulated data root to look at
    paths = DataRoot.resolve(keep or tmp_path_factory.mktemp("sim") / "data")
    client = MemoryClient(paths.root)
    seen: dict[str, object] = {}
    with dg.instance_for_test() as instance:
        for n in range(DAYS + 1):
            day = _day(n)
            jobs = []
            if n in SESSIONS:
                client.flush_session(f"day-{n:03d}", [
                    {"role": "user", "speaker": "Dana", "content": text, "ts": (day + timedelta(minutes=i)).isoformat()}
                    for i, text in enumerate(SESSIONS[n])])
                jobs.append("nightly")
            for text, days in CONFIRMED.items():
                if n in days:
                    client.reinforce(_find(paths, text)["id"], now=day)
            for text, days in DEMOTED.items():
                if n in days:
                    client.demote(_find(paths, text)["id"], now=day)
            if day.weekday() == 6:
                jobs = ["weekly"]  # the weekly job does the nightly work too
            if day.day == 1:
                jobs.append("monthly")
            for job in jobs:
                assert run_job(paths, job, now=day, extractor="offline", instance=instance), f"{job} failed on day {n}"
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
        yield paths, client, seen


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
