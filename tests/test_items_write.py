"""``publish.write_items`` changes the LanceDB table by what changed: a night that touches a
few rows must not rewrite (and re-index) a million. What agents read is the same either way:
every row of the new version, findable by vector and by full text, the version before still
readable; an erasure writes the table whole so the erased bytes leave the live files."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import lancedb
import numpy as np
import polars as pl
import pytest

from memory_assets.lib.items import publish
from retrieval import spans
from retrieval.agent.search import fts_list, vector_list
from retrieval.paths import DataRoot
from retrieval.published import ITEMS_TABLE

T0 = datetime(2026, 1, 5, 2, tzinfo=timezone.utc)
WORDS = ["harbor", "ledger", "cobalt", "willow", "summit", "ember", "quartz", "meadow", "falcon", "lantern"]


def _items(n: int, seed: int = 0) -> tuple[pl.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    ids = [f"item-{i:04d}" for i in range(n)]
    content = [f"fact {i} about the {WORDS[i % len(WORDS)]} project number{i}" for i in range(n)]
    vectors = rng.normal(size=(n, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    frame = pl.DataFrame({"id": ids, "content": content, "status": ["active"] * n,
                          "strength": [1.0] * n, "tags": [["t"]] * n})
    return frame, vectors


def _table(paths: DataRoot):
    return lancedb.connect(str(paths.lancedb)).open_table(ITEMS_TABLE)


def _labels(recorder: spans.Recorder) -> set[str]:
    return {label for label, *_ in recorder.calls}


@pytest.fixture
def paths(tmp_path: Path) -> DataRoot:
    return DataRoot.resolve(tmp_path / "data")


def test_a_night_that_changes_a_few_rows_changes_only_those(paths):
    items, vectors = _items(200)
    first = publish.write_items(paths, items, vectors, T0)

    # Tonight: one row left (merged away), one row's strength changed, one's content (and
    # so its vector) changed, two new rows.
    changed = items.filter(pl.col("id") != "item-0003").with_columns(
        strength=pl.when(pl.col("id") == "item-0010").then(0.5).otherwise(pl.col("strength")),
        content=pl.when(pl.col("id") == "item-0020").then(pl.lit("the willow grove moved to Tuesday"))
        .otherwise(pl.col("content")))
    keep = np.array([i for i in range(200) if i != 3])
    new_vectors = vectors[keep].copy()
    new_vectors[19] = -new_vectors[19]  # item-0020's row (item-0003 is gone before it)
    extra, extra_vectors = _items(2, seed=7)
    extra = extra.with_columns(id=pl.Series(["item-new-a", "item-new-b"]),
                               content=pl.Series(["zephyrine is the new codename", "the orchard audit is due"]))
    tonight = pl.concat([changed, extra])
    tonight_vectors = np.vstack([new_vectors, extra_vectors])

    recorder = spans.Recorder()
    with spans.recording(recorder):
        second = publish.write_items(paths, tonight, tonight_vectors, T0 + timedelta(days=1))
    assert "lancedb: apply changes" in _labels(recorder)
    assert "lancedb: write table" not in _labels(recorder)  # not rewritten whole
    deleted = sum(1 for label, *_ in recorder.calls if label == "lancedb: delete")
    assert deleted == 1  # one delete of the 3 rows that left or changed

    table = _table(paths)
    assert table.version == second.version > first.version
    rows = pl.from_arrow(table.to_arrow()).sort("id")
    assert rows["id"].to_list() == sorted(tonight["id"].to_list())
    assert rows.filter(pl.col("id") == "item-0010")["strength"].item() == 0.5
    assert rows.filter(pl.col("id") == "item-0020")["content"].item() == "the willow grove moved to Tuesday"
    got = dict(zip(rows["id"].to_list(), rows["vector"].to_list()))
    for i, item_id in enumerate(tonight["id"].to_list()):
        assert np.allclose(got[item_id], tonight_vectors[i])

    # Found by both searches, the new rows included; the version before still reads as it was.
    assert vector_list(table, tonight_vectors[-2], limit=1, where=None)[0]["id"] == "item-new-a"
    assert "item-new-a" in {r["id"] for r in fts_list(table, "zephyrine", limit=5, where=None)}
    assert "item-0020" in {r["id"] for r in fts_list(table, "willow grove Tuesday", limit=5, where=None)}
    before = _table(paths)
    before.checkout(first.version)
    old = pl.from_arrow(before.to_arrow())
    assert old.height == 200 and "item-0003" in old["id"].to_list()


def test_the_table_is_written_whole_when_asked_when_its_columns_change_or_when_most_rows_change(paths):
    items, vectors = _items(100)
    publish.write_items(paths, items, vectors, T0)

    def written_whole(frame: pl.DataFrame, vecs: np.ndarray, day: int, **kwargs) -> bool:
        recorder = spans.Recorder()
        with spans.recording(recorder):
            publish.write_items(paths, frame, vecs, T0 + timedelta(days=day), **kwargs)
        assert pl.from_arrow(_table(paths).to_arrow())["id"].sort().to_list() == frame["id"].sort().to_list()
        return "lancedb: write table" in _labels(recorder)

    assert not written_whole(items, vectors, 1)  # nothing changed: nothing rewritten
    assert written_whole(items, vectors, 2, rewrite=True)  # an erasure
    assert written_whole(items.with_columns(pl.lit("x").alias("project")), vectors, 3)  # a new column
    assert written_whole(items.with_columns(pl.lit("x").alias("project"), strength=pl.lit(0.9)), vectors, 4)


def test_an_erasure_rewrite_leaves_no_erased_bytes_in_the_live_files(paths):
    items, vectors = _items(100)
    items = items.with_columns(content=pl.when(pl.col("id") == "item-0042")
                               .then(pl.lit("Quillfeather lives at 9 Larkspur Row")).otherwise(pl.col("content")))
    publish.write_items(paths, items, vectors, T0)
    keep = items["id"] != "item-0042"
    publish.write_items(paths, items.filter(keep), vectors[keep.to_numpy()], T0 + timedelta(days=1), rewrite=True)
    table = _table(paths)
    with pytest.warns(UserWarning):  # what the erasure's step 3 does
        table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
    found = [p for p in paths.lancedb.rglob("*") if p.is_file() and b"Quillfeather" in p.read_bytes()]
    assert found == []


def test_row_hashes_by_slice_are_the_whole_frames(monkeypatch):
    # A night compares these with the table's: slicing must not change a single hash, or
    # every row would be deleted and added again.
    frame = pl.DataFrame({"id": [f"m{i}" for i in range(1_000)], "tags": [[str(i % 7)] for i in range(1_000)],
                          "vector": np.arange(3_000, dtype=np.float32).reshape(1_000, 3)})
    monkeypatch.setattr(publish, "HASH_CHUNK", 64)
    assert publish._row_hashes(frame).equals(frame.hash_rows())
