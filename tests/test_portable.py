"""Your data, portable: `memory export` writes the published memory as a versioned file,
`memory import` brings it (or flat-file MEMORY.md memories) into another data root through
the pipeline, without duplicates, secrets or lost lines."""

from __future__ import annotations

import importlib
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import polars as pl
import pytest

from memory_assets.lib.items import imports
from memory_assets.lib.migration import read_markdown
from retrieval import interchange, published, scoring
from retrieval.config import load_config
from retrieval.paths import DataRoot
from retrieval.schema import FACT_SCHEMA, PROVENANCE
from retrieval.store import ItemStore
from tests.conftest import copy_root
from tests.test_secrets_scan import _r, _texts_under

cli = importlib.import_module("memory_assets.cli.main")  # the module (the package exports its main())

T0 = datetime(2026, 9, 1, 9, tzinfo=timezone.utc)
# What a round trip keeps, item by item.
KEPT = ("id", "content", "status", "valid_from", "invalid_at", "supersedes", "superseded_by", "provenance",
        "namespace", "category", "kind", "tier", "source_resource_ids", "source_turn_ids", "created_at")


def memory(argv: list[str]) -> int:
    return cli.main(argv)


@pytest.fixture(scope="module")
def source(samples_root, tmp_path_factory) -> DataRoot:
    """The committed samples, published (a copy for this module)."""
    return DataRoot.resolve(copy_root(samples_root, tmp_path_factory.mktemp("source")))


@pytest.fixture(scope="module")
def exported(source, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("exports") / "memory.jsonl"
    assert memory(["--data-root", str(source.root), "export", "-o", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def imported(exported, tmp_path_factory) -> DataRoot:
    """An empty data root the export was imported into."""
    paths = DataRoot.resolve(tmp_path_factory.mktemp("target") / "data")
    assert memory(["--data-root", str(paths.root), "import", str(exported)]) == 0
    return paths


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _kept(items: pl.DataFrame) -> pl.DataFrame:
    return items.filter(pl.col("status") != "purged").select(KEPT).sort("id")


def test_an_export_is_a_header_then_one_record_per_line(source, exported):
    header, *records = _lines(exported)
    assert (header["format"], header["version"]) == ("agent-memory-export", 1)
    published = ItemStore(source).items()
    assert header["counts"]["item"] == published.height > 50
    assert {r["type"] for r in records} == {"item", "entity", "edge"}
    assert sum(r["type"] == "item" for r in records) == published.height
    assert header["counts"]["entity"] == sum(r["type"] == "entity" for r in records) > 0
    # Every status goes out, with its validity and provenance.
    assert {r["status"] for r in records if r["type"] == "item"} == set(published["status"].unique())
    assert all({"valid_from", "invalid_at", "provenance", "source_resource_ids"} <= r.keys()
               for r in records if r["type"] == "item")


def test_embeddings_only_with_the_flag(source, exported, tmp_path):
    assert not any("embedding" in r for r in _lines(exported))
    with_vectors = tmp_path / "with-vectors.jsonl"
    assert memory(["--data-root", str(source.root), "export", "--embeddings", "-o", str(with_vectors)]) == 0
    header, *records = _lines(with_vectors)
    items = [r for r in records if r["type"] == "item" and r["status"] != "purged"]
    assert header["embedding_model"] and items
    assert all(len(r["embedding"]) == 384 for r in items)


def test_a_round_trip_keeps_every_item_its_id_validity_and_status(source, imported, capsys):
    before, after = _kept(ItemStore(source).items()), _kept(ItemStore(imported).items())
    assert after["id"].to_list() == before["id"].to_list()
    assert after.equals(before)
    assert not (imported.root / "inbox").exists()  # an import is no transcript


def test_importing_the_same_file_twice_changes_nothing(imported, exported, capsys):
    version = ItemStore(imported).published_version()
    count = ItemStore(imported).items().height
    capsys.readouterr()
    assert memory(["--data-root", str(imported.root), "import", str(exported)]) == 0
    out = capsys.readouterr().out
    assert "imported 0" in out and "already imported" in out
    assert ItemStore(imported).published_version() == version and ItemStore(imported).items().height == count
    assert len(list(imported.imports.glob("*.jsonl"))) == 1


def test_the_same_memories_exported_again_are_duplicates(source, imported, tmp_path, capsys):
    again = tmp_path / "again.jsonl"
    assert memory(["--data-root", str(source.root), "export", "-o", str(again)]) == 0
    ids = set(ItemStore(imported).items()["id"].to_list())
    capsys.readouterr()
    assert memory(["--data-root", str(imported.root), "import", str(again)]) == 0
    out = capsys.readouterr().out
    assert "imported 0, duplicates" in out
    assert set(ItemStore(imported).items()["id"].to_list()) == ids


def test_a_malformed_line_is_named_with_its_file_and_line_and_the_rest_goes_in(exported, tmp_path, capsys):
    header, *records = exported.read_text().splitlines()
    items = [r for r in records if json.loads(r)["type"] == "item" and json.loads(r)["status"] == "active"][:4]
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([header, items[0], '{"type": "item", "id": "x1", "content": "half a li', *items[1:],
                                 json.dumps({**json.loads(items[1]), "id": "x2", "status": "forgotten"})]) + "\n")
    root = tmp_path / "data"
    assert memory(["--data-root", str(root), "import", str(broken)]) == 1
    captured = capsys.readouterr()
    assert f"{broken} line 3: invalid JSON" in captured.err
    assert f"{broken} line 7: " in captured.err and "forgotten" in captured.err
    assert "imported 4, duplicates 0" in captured.out
    stored = ItemStore(DataRoot.resolve(root)).items()["id"].to_list()
    assert sorted(stored) == sorted(json.loads(i)["id"] for i in items)


def test_a_file_that_is_not_an_export_is_refused_whole(tmp_path, capsys):
    notes = tmp_path / "MEMORY.md"
    notes.write_text("- Priya prefers tea over coffee in the morning\n")
    assert memory(["--data-root", str(tmp_path / "data"), "import", str(notes)]) == 1
    assert "line 1: not an agent-memory-export header" in capsys.readouterr().err
    assert not (tmp_path / "data" / "imports").exists()


def test_markdown_memories_are_migrated_through_the_gate_and_no_secret_is_stored(imported, tmp_path, capsys):
    token = "ghp" + "_" + _r(36)
    notes = tmp_path / "MEMORY.md"
    notes.write_text("# Memory\n\n## Preferences\n"
                     "- Priya prefers green tea over coffee in the morning\n"
                     "* Priya always runs the linters before she opens a pull request\n\n"
                     "## Vehicle\n"
                     "1. Aaron's Tacoma needs new brake pads before the ski trip\n"
                     f"2. The deploy token for the staging cluster is {token}\n\n"
                     "The team standup moved to 9:30 on Mondays and Thursdays.\n")
    capsys.readouterr()
    assert memory(["--data-root", str(imported.root), "import", "--from-markdown", str(notes)]) == 0
    out = capsys.readouterr().out
    assert "imported 4, duplicates 0, rejected by the write gate 1" in out
    migrated = ItemStore(imported).items().filter(pl.col("provenance") == "migration")
    assert migrated.height == 4 and set(migrated["status"]) == {"active"}
    assert set(migrated["source_trust"]) == {"trusted"}
    tea = migrated.filter(pl.col("content").str.contains("green tea")).row(0, named=True)
    assert tea["category"] == "preferences" and "preferences" in tea["tags"]
    assert tea["source_turn_ids"] == ["MEMORY.md:4"]
    brakes = migrated.filter(pl.col("content").str.contains("brake pads")).row(0, named=True)
    assert brakes["category"] == "vehicle"
    found = [where for where, text in _texts_under(imported.root).items() if token[4:] in text or token[-12:] in text]
    assert found == []
    # Migrating the same file again brings nothing new.
    assert memory(["--data-root", str(imported.root), "import", "--from-markdown", str(notes)]) == 0
    assert "already imported" in capsys.readouterr().out
    assert ItemStore(imported).items().filter(pl.col("provenance") == "migration").height == 4


def test_markdown_bullets_and_paragraphs_are_one_memory_each_under_their_headings():
    memories = read_markdown("# Notes\n## Coding style\n- tabs\n* spaces, sometimes\n1. numbered\n\n"
                             "A paragraph\nover two lines.\n\n```\nnot a memory\n```\n")
    assert [(m.content, m.headings, m.line) for m in memories] == [
        ("tabs", ("Notes", "Coding style"), 3), ("spaces, sometimes", ("Notes", "Coding style"), 4),
        ("numbered", ("Notes", "Coding style"), 5), ("A paragraph over two lines.", ("Notes", "Coding style"), 7)]


def test_migration_is_a_provenance_the_checks_allow():
    assert "migration" in PROVENANCE


@pytest.mark.parametrize("line, message", [
    ('{"type": "item", "id": "a", "content": "x"}', "missing 'category'"),
    ('{"type": "item", "content": "x", "provenance": "guessed"}', "'guessed'"),
    ('{"type": "item", "content": "x", "importance": 3}', "expected 0..1"),
    ('{"type": "item", "content": "x", "colour": "red"}', '"colour": extra inputs are not permitted'),
    ('{"type": "memo"}', "expected item, entity or edge"),
    ('{"type": "edge", "source": "a", "target": "b", "kind": "likes"}', "'likes'"),
    ("[1, 2]", "expected item, entity or edge"),
])
def test_a_bad_record_names_its_line_and_why(line, message):
    header = json.dumps({"format": "agent-memory-export", "version": 1, "exported_at": "2026-09-01T00:00:00Z"})
    parsed = interchange.parse([header, line], "in.jsonl")
    assert len(parsed.errors) == 1 and str(parsed.errors[0]).startswith("in.jsonl line 2: ")
    assert message in str(parsed.errors[0])


def test_a_purged_item_travels_as_its_audit_row_and_is_not_adopted(source, tmp_path):
    snapshot = ItemStore(source).items()
    forgotten = snapshot.filter(pl.col("status") == "active")["id"][0]
    paths = DataRoot.resolve(tmp_path / "data")
    version = paths.items_dir / "versions" / "items-1.parquet"
    version.parent.mkdir(parents=True)
    snapshot.with_columns(status=pl.when(pl.col("id") == forgotten).then(pl.lit("purged"))
                          .otherwise(pl.col("status"))).write_parquet(version)
    published.pointer_path(paths).write_text(json.dumps(
        published.Pointer(generation=1, version=1, items=paths.relative(version)).to_json()))
    lines = list(interchange.export_lines(paths, load_config(), T0))
    record = next(json.loads(line) for line in lines[1:] if json.loads(line).get("id") == forgotten)
    assert record["status"] == "purged" and record["created_at"] and record["source_resource_ids"]
    assert all(record[c] in (None, []) for c in interchange.CONTENT_FIELDS)
    parsed = interchange.parse(lines, "export.jsonl")
    assert not parsed.errors
    adoption = imports.adopt([imports.ImportFile("export.jsonl", parsed)], pl.DataFrame(schema=FACT_SCHEMA), None,
                             load_config(), "any-model")
    assert (adoption.total.purged, adoption.total.adopted) == (1, snapshot.height - 1)
    assert forgotten not in adoption.items["id"].to_list()


@pytest.mark.parametrize("trust, references, weeks, tier", [
    ("trusted", 0, 0, "standard"), ("trusted", 3, 5, "standard"), ("untrusted", 4, 2, "standard"),
    ("trusted", 1, 9, "transient"), ("trusted", 2, 30, "permanent"),
])
def test_an_imported_item_gets_its_base_scores_back_so_it_decays_once(trust, references, weeks, tier):
    config = load_config()
    row = {"source_trust": trust, "reference_count": references, "tier": tier,
           "created_at": T0 - timedelta(weeks=weeks, days=1), "first_seen_at": T0 - timedelta(weeks=weeks, days=1)}
    for base_importance, base_confidence, confirmed, contradicted in ((0.6, 0.9, True, False), (0.9, 0.5, False, True)):
        scored = {**row, "importance": scoring.lifecycle_importance(config, {**row, "importance": base_importance}, T0),
                  "confidence": scoring.lifecycle_confidence(config, base_confidence, confirmed=confirmed,
                                                             contradicted=contradicted)}
        importance, confidence = scoring.base_scores(config, scored, T0, confirmed=confirmed, contradicted=contradicted)
        # The lifecycle, run on the base at the export's time, gives the exported scores again.
        assert scoring.lifecycle_importance(config, {**row, "importance": importance}, T0) == pytest.approx(
            scored["importance"], abs=1e-5)
        assert scoring.lifecycle_confidence(config, confidence, confirmed=confirmed,
                                            contradicted=contradicted) == pytest.approx(scored["confidence"], abs=1e-6)
