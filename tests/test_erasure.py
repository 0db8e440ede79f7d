"""The right to be forgotten (``memory erase``): after it, the erased words are in no file
under the data root — raw bytes, every Parquet row, every SQLite table (the checkpoint
store, Dagster's run history), every version of every LanceDB table — while the other
namespace's memory is untouched and still injected, and an audit row without content
says who asked for what, when and why.

One data root is built for the module with the real pipeline (two users' sessions, a
checkpointed turn, a ``remember``, an injection and an update, the nightly and weekly
jobs, so summaries, their archived versions and several item and LanceDB versions
exist); each test erases in a copy of it.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import dagster as dg
import lancedb
import polars as pl
import pytest

from memory_assets.cli import main as memory
from memory_assets.cli.runner import materialize_pending, run_job
from memory_assets.lib import erasure
from retrieval import MemoryClient
from retrieval.config import load_config
from retrieval.integrations.langgraph import MemoryStore
from retrieval.paths import DataRoot
from retrieval.store import ItemStore
from tests.test_secrets_scan import _texts_under

T0 = datetime(2026, 9, 1, 9, tzinfo=timezone.utc)
# Words only alice ever said (in a session, a checkpointed turn, a remember, an update).
ALICE_WORDS = ("Zorblax", "Quintaxel", "Marigold", "Vendelmoor", "Brasquette", "Ottervane", "Pellucidor")
ALICE = [
    "My dog Zorblax is a border collie and he loves the frisbee park on Saturdays.",
    "I decided to use Postgres for the Quintaxel project instead of MySQL.",
    "My sister Marigold lives in Lisbon and works as a nurse.",
]
BOB = [
    "I drive a 2019 Subaru WRX and its oil change is due at 11,799 miles.",
    "I prefer tabs over spaces in Go code, always.",
]
# Said in a live session bob's agent checkpointed turn by turn, then flushed.
BOB_LIVE = "My cat Pebblethorn is afraid of the vacuum cleaner."


def _session(lines: list[str], at: datetime) -> list[dict]:
    return [{"role": "user", "content": line, "ts": (at + timedelta(minutes=n)).isoformat()}
            for n, line in enumerate(lines)]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("erasure") / "data"
    paths = DataRoot.resolve(root)
    agent = MemoryClient(root)
    agent.flush_session("alice-1", _session(ALICE, T0), user="alice")
    agent.flush_session("bob-1", _session(BOB, T0), user="bob")
    bob = MemoryClient(root, namespace="bob")
    bob.append_turn("bob-live", 1, {"user_input": BOB_LIVE, "llm_output": "Poor thing."}, now=T0)
    bob.append_turn("bob-live", 2, {"user_input": "Thanks for listening.", "llm_output": "Any time."}, now=T0)
    assert bob.flush_session("bob-live") is not None
    alice = MemoryClient(root, namespace="alice")
    alice.append_turn("alice-live", 1, {"user_input": "Our village is called Vendelmoor, by the sea.",
                                        "llm_output": "Noted."}, now=T0)
    alice.remember("My locker password hint is the word Brasquette.", now=T0)
    MemoryStore(alice).put(("notes", "garden"), "gnome", {"text": "My garden gnome is called Pellucidor."})  # LangGraph
    (root / "dagster").mkdir(parents=True)
    with dg.instance_for_test(temp_dir=str(root / "dagster")) as instance:
        materialize_pending(paths, instance=instance, extractor="offline", now=T0 + timedelta(hours=1))
        assert run_job(paths, "nightly", now=T0 + timedelta(days=1), extractor="offline", instance=instance)
        alice = MemoryClient(root, namespace="alice")
        shown = alice.inject("Tell me about my dog Zorblax", now=T0 + timedelta(days=1, hours=2))
        dog = next(h for h in shown.items if "Zorblax" in h.content)
        alice.update(dog.id, "User's dog Zorblax is a border collie who sleeps on an Ottervane blanket.",
                     now=T0 + timedelta(days=1, hours=2))
        assert run_job(paths, "weekly", now=T0 + timedelta(days=8), extractor="offline", instance=instance)
    return root


@pytest.fixture
def root(built, tmp_path, monkeypatch) -> Path:
    """A copy of the built data root; ``memory`` commands run on its own Dagster storage."""
    copy = tmp_path / "data"
    shutil.copytree(built, copy)
    instance = dg.instance_for_test(temp_dir=str(copy / "dagster"))
    with instance as live:
        monkeypatch.setattr("memory_assets.cli.runner.local_instance", lambda paths: live)
        yield copy


def _found(root: Path, words) -> dict[str, list[str]]:
    """Word → where it still is: a file's name, its raw bytes or any decoded row of it."""
    texts = {where: text.lower() for where, text in _texts_under(root).items()}
    texts.update({f"{p} (name)": str(p.relative_to(root)).lower() for p in root.rglob("*")})
    return {w: sorted(where.removeprefix(str(root)) for where, text in texts.items() if w.lower() in text)
            for w in words}


def _rows(root: Path, namespace: str) -> set[tuple]:
    items = ItemStore(DataRoot.resolve(root)).items().filter(pl.col("namespace") == namespace)
    return set(items.select("id", "content", "status").iter_rows())


def test_the_built_root_holds_alices_words_everywhere_an_erasure_must_reach(built):
    where = _found(built, ALICE_WORDS)
    assert all(where.values()), {w: len(v) for w, v in where.items()}
    everywhere = {p for found in where.values() for p in found}
    for store in ("/inbox/", "/warehouse/resources/", "/warehouse/extracted_facts/", "/warehouse/event_log/",
                  "/warehouse/memory_items/versions/", "/warehouse/memory_items/indexes/",
                  "/warehouse/side_tables/", "/summaries/archive/", "lancedb/items v",
                  "/service/service.sqlite3"):
        assert any(store in p for p in everywhere), store
    assert any("service.sqlite3" in p for p in _found(built, ["Pebblethorn"])["Pebblethorn"])


def test_erasing_a_namespace_leaves_its_words_in_no_file_and_the_other_namespace_untouched(root, capsys):
    bob_before = _rows(root, "bob")
    assert memory(["--data-root", str(root), "erase", "--namespace", "alice", "--reason", "GDPR ticket 7",
                   "--by", "dpo@example.com", "--yes"]) == 0
    assert "erased namespace alice" in capsys.readouterr().out

    assert _found(root, ALICE_WORDS) == {w: [] for w in ALICE_WORDS}
    assert _rows(root, "alice") == set()
    assert _rows(root, "bob") == bob_before  # untouched: same ids, words and status
    bob = MemoryClient(root, namespace="bob")
    assert "11,799" in bob.inject("When is my WRX oil change due?", record=False).text
    assert MemoryClient(root, namespace="alice").inject("Tell me about my dog", record=False).text == ""
    # Every LanceDB table keeps one version: an older one (`checkout`) held alice's rows.
    db = lancedb.connect(str(root / "lancedb"))
    assert {n: len(db.open_table(n).list_versions()) for n in db.list_tables().tables} == \
        {n: 1 for n in db.list_tables().tables}

    log = erasure.erasure_log(DataRoot.resolve(root))
    request = log.filter(pl.col("scope") == "namespace").row(0, named=True)
    assert (request["namespace"], request["reason"], request["requested_by"]) == ("alice", "GDPR ticket 7",
                                                                                 "dpo@example.com")
    assert log.filter(pl.col("scope") == "item").height >= len(ALICE)  # one row per erased item
    assert set(log["namespace"].to_list()) == {"alice"} and "content" not in log.columns
    assert erasure.pending(DataRoot.resolve(root)) == []
    assert memory(["--data-root", str(root), "rollback", "--list"]) == 0
    assert capsys.readouterr().out.count("version") == 1  # an erasure ends the rollback history
    # Dagster forgets the erased sessions too: their runs and their partitions.
    with dg.instance_for_test(temp_dir=str(root / "dagster")) as instance:
        assert not instance.get_run_records(dg.RunsFilter(tags={"dagster/partition": "alice-1"}))
        assert "alice-1" not in instance.get_dynamic_partitions("sessions")
        # The pipeline goes on as before; nothing of alice comes back.
        again = materialize_pending(DataRoot.resolve(root), instance=instance, force_items=True,
                                    now=T0 + timedelta(days=9))
    assert again.items_materialized and not again.failed and not again.sessions
    assert _rows(root, "bob") == bob_before and _rows(root, "alice") == set()


def test_erasing_one_item_removes_exactly_its_words(root, capsys):
    paths = DataRoot.resolve(root)
    operator = MemoryClient(root, namespace="*")
    cat = next(r for r in operator.list() if "Pebblethorn" in r["content"])
    others = {r["id"]: r["content"] for r in operator.list(status=None) if r["id"] != cat["id"]}
    assert memory(["--data-root", str(root), "erase", "--id", cat["ref"], "--yes", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["done"] is True

    assert _found(root, ["Pebblethorn", "vacuum cleaner"]) == {"Pebblethorn": [], "vacuum cleaner": []}
    # The checkpointed turn that said it is gone; the session's other turn stays.
    replay = MemoryClient(root, namespace="bob").replay("bob-live")
    assert [t["turn"] for t in replay] == [2]
    after = {r["id"]: r["content"] for r in MemoryClient(root, namespace="*").list(status=None)}
    assert after == others  # every other item, alice's and bob's, as it was
    assert all(w in "".join(after.values()) for w in ("Zorblax", "Subaru"))
    # The turn it came from keeps its place (other items may cite it), not its words.
    turns = pl.concat([pl.read_parquet(p) for p in paths.resources.rglob("part-*.parquet")])
    assert turns.filter(pl.col("resource_id").is_in(cat["source_resource_ids"]))["content"].to_list() == \
        [erasure.ERASED]
    log = erasure.erasure_log(paths)
    assert log.filter(pl.col("item_id") == cat["id"])["namespace"].to_list() == ["bob"]


def test_an_agents_erase_request_is_carried_out_by_the_next_materialize(root):
    paths = DataRoot.resolve(root)
    request = MemoryClient(root, namespace="alice").erase(reason="the user asked in the app")
    assert [r.id for r in erasure.pending(paths)] == [request]
    with dg.instance_for_test(temp_dir=str(root / "dagster")) as instance:
        summary = materialize_pending(paths, instance=instance, now=T0 + timedelta(days=9))
    assert "erase" in summary.jobs and not summary.failed
    assert erasure.pending(paths) == []
    assert _rows(root, "alice") == set()
    assert not any("Zorblax" in p.read_text() for p in (root / "summaries").rglob("*.md"))


def test_the_erasure_sensor_asks_for_the_erase_job_once_per_request(tmp_path):
    from memory_assets.defs.lifecycle.erasure import erasure_sensor
    from memory_assets.defs.runtime import MemoryRoot

    root = tmp_path / "data"
    resource = MemoryRoot(data_root=str(root))
    assert isinstance(erasure_sensor(dg.build_sensor_context(), memory=resource), dg.SkipReason)
    MemoryClient(root, namespace="alice").erase()
    first = erasure_sensor(dg.build_sensor_context(), memory=resource)
    assert isinstance(first, dg.RunRequest) and first.run_key.startswith("erase:")
    assert erasure_sensor(dg.build_sensor_context(), memory=resource).run_key == first.run_key


def test_an_erasure_must_be_confirmed(tmp_path, capsys):
    assert memory(["--data-root", str(tmp_path / "data"), "erase", "--namespace", "alice"]) == 2
    assert "cannot be undone" in capsys.readouterr().err
    assert not (tmp_path / "data" / "events").exists()  # nothing was even requested


def test_an_archive_insight_drawn_from_an_erased_item_goes_with_every_older_version(tmp_path):
    import numpy as np

    from memory_assets.lib import warehouse
    from memory_assets.lib.items import publish

    paths = DataRoot.resolve(tmp_path / "data")
    clusters = pl.DataFrame({"cluster_id": [0, 1], "member_ids": [["a1", "erased1"], ["b1", "b2"]],
                             "insight": ["Mostly about Zorblax's walks", "Mostly about the WRX"], "size": [2, 2]})
    for _ in range(2):  # two versions: the older one is readable by `checkout`
        publish.publish_table(paths, "insights", clusters, np.eye(2, 384, dtype=np.float32))
    target = erasure.Target(requests=[], item_ids={"erased1"}, default_namespace=load_config().default_namespace)
    warehouse.write_json(paths.erasure_log / "pending.json", target.to_json())
    done = erasure.purge_versions(paths, load_config(), T0)
    table = lancedb.connect(str(paths.lancedb)).open_table("insights")
    assert table.to_arrow()["insight"].to_pylist() == ["Mostly about the WRX"]
    assert len(table.list_versions()) == 1 and done.lancedb_versions_removed["insights"] >= 2
    assert not (paths.erasure_log / "pending.json").exists()
