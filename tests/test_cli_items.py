"""``memory list``, ``memory show``, ``memory edit`` and ``memory forget`` against a data
root built from the committed samples with the real pipeline."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone

import dagster as dg
import pytest

from memory_assets.cli import main as memory
from memory_assets.cli.runner import materialize_pending
from retrieval import MemoryClient
from retrieval.paths import DataRoot
from tests.conftest import copy_root


@pytest.fixture(scope="module")
def built(samples_root, tmp_path_factory):
    return copy_root(samples_root, tmp_path_factory.mktemp("cli_items"))


def _listed(root, capsys, *options: str) -> list[dict]:
    assert memory(["--data-root", str(root), "list", "--json", *options]) == 0
    return json.loads(capsys.readouterr().out)


def _wrx(root, capsys) -> dict:
    return next(r for r in _listed(root, capsys, "--text", "oil change is due at 11,799"))


def test_list_prints_one_line_per_item_with_its_short_id(built, capsys):
    assert memory(["--data-root", str(built), "list"]) == 0
    out = capsys.readouterr()
    lines = out.out.splitlines()
    assert len(lines) > 20 and all(line.startswith("m:") for line in lines)
    assert any("11,799" in line and "vehicle" in line for line in lines)
    assert f"{len(lines)} memories" in out.err


@pytest.mark.parametrize("option, value, column", [
    ("--category", "vehicle", "category"), ("--kind", "decision", "kind"), ("--status", "active", "status"),
])
def test_list_filters_as_the_client_does(built, capsys, option, value, column):
    rows = _listed(built, capsys, option, value)
    assert rows and {r[column] for r in rows} == {value}
    client = MemoryClient(built, namespace="*")
    assert [r["id"] for r in rows] == [r["id"] for r in client.list(**{column: value})]


def test_list_text_tag_namespace_and_limit(built, capsys):
    assert [r["content"] for r in _listed(built, capsys, "--text", "wrx")] and \
        all("wrx" in r["content"].lower() for r in _listed(built, capsys, "--text", "wrx"))
    assert len(_listed(built, capsys, "--limit", "3")) == 3
    assert _listed(built, capsys, "--namespace", "nobody") == []
    assert len(_listed(built, capsys, "--status", "all")) >= len(_listed(built, capsys))
    tagged = next(r for r in _listed(built, capsys) if r["tags"])
    assert tagged["id"] in {r["id"] for r in _listed(built, capsys, "--tag", tagged["tags"][0])}


def test_show_prints_every_field_its_source_turns_and_history(built, capsys):
    wrx = _wrx(built, capsys)
    assert memory(["--data-root", str(built), "show", wrx["ref"]]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{wrx['ref']}  {wrx['content']}")
    for field in ("category", "confidence", "importance", "namespace", "status", "source_resource_ids", "created_at"):
        assert f"  {field} " in out
    assert "sources:" in out and "11,799" in out.split("sources:")[1]
    assert "history:" in out
    assert memory(["--data-root", str(built), "show", wrx["id"], "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["item"]["id"] == wrx["id"] and shown["sources"] and "events" in shown


def test_an_unknown_id_is_an_error_naming_it(built, capsys):
    for command in (["show", "m:0000000"], ["edit", "m:0000000", "new words"], ["forget", "m:0000000"]):
        assert memory(["--data-root", str(built), *command]) == 1
        assert "m:0000000" in capsys.readouterr().err


def test_edit_and_forget_take_effect_at_once_and_the_next_materialize_publishes_them(built, tmp_path, capsys):
    root = tmp_path / "data"
    shutil.copytree(built, root)
    wrx = _wrx(root, capsys)
    editor = next(r for r in _listed(root, capsys, "--category", "work") if r["id"] != wrx["id"])
    new = "Aaron's WRX oil change is due at 12,500 miles"
    assert memory(["--data-root", str(root), "edit", wrx["ref"], new, "--tags", "car,maintenance"]) == 0
    assert "agents read it at once" in capsys.readouterr().out
    assert memory(["--data-root", str(root), "forget", editor["ref"]]) == 0
    assert "audit trail" in capsys.readouterr().out
    assert memory(["--data-root", str(root), "edit", wrx["ref"], "   "]) == 2  # an empty wording is refused
    # Before any run: a new reader already reads the new wording, and not the forgotten item.
    before = MemoryClient(root, namespace="*")
    assert (before.get(wrx["id"])["content"], before.get(wrx["id"])["provenance"]) == (new, "user_corrected")
    assert before.get(editor["id"])["status"] == "purged"
    assert editor["id"] not in {r["id"] for r in _listed(root, capsys)}
    assert len(list((root / "corrections").glob("*.json"))) == 2

    with dg.instance_for_test() as instance:
        assert not materialize_pending(DataRoot.resolve(root), instance=instance,
                                       now=datetime.now(timezone.utc)).failed
    after = MemoryClient(root, namespace="*")
    edited = after.get(wrx["id"])
    assert (edited["content"], edited["tags"], edited["provenance"]) == (new, ["car", "maintenance"], "user_corrected")
    assert after.get(editor["id"])["status"] == "purged"
    assert editor["id"] not in {r["id"] for r in _listed(root, capsys)}
    assert editor["id"] in {r["id"] for r in _listed(root, capsys, "--status", "purged")}
    assert not list((root / "corrections").glob("*.json"))  # published: the copies are gone
    assert memory(["--data-root", str(root), "show", wrx["id"]]) == 0
    history = capsys.readouterr().out.split("history:")[1]
    assert "update" in history and "12,500" in history
