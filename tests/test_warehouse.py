"""``memory_assets.lib.warehouse``: atomic writes, typed reads, local paths and fsspec URIs alike."""

from __future__ import annotations

import os
from datetime import datetime, timezone

import polars as pl
import pytest

from memory_assets.lib import warehouse
from retrieval.files import stamp

FRAME = pl.DataFrame({"id": ["a", "b"], "n": [1, 2]})


@pytest.mark.parametrize("root", ["local", "memory://warehouse-test"])
def test_the_same_calls_work_on_a_disk_and_on_an_fsspec_store(tmp_path, root):
    base = str(tmp_path) if root == "local" else f"{root}/{tmp_path.name}"
    frame_path, json_path = f"{base}/t/items.parquet", f"{base}/t/report.json"
    assert warehouse.read_frame(frame_path) is None
    assert warehouse.read_frame(frame_path, {"id": pl.String()}).schema == {"id": pl.String()}
    warehouse.write_frame(frame_path, FRAME)
    warehouse.write_json(json_path, {"version": 3}, indent=1)
    assert warehouse.read_frame(frame_path).equals(FRAME)
    assert warehouse.read_json(json_path) == {"version": 3}
    (listed,) = warehouse.files(f"{base}/t", "*.parquet")
    assert listed.name == "items.parquet" and warehouse.read_frame(listed).equals(FRAME)  # a listed file reads back
    warehouse.move(json_path, f"{base}/done/report.json")
    assert not warehouse.exists(json_path) and warehouse.read_json(f"{base}/done/report.json") == {"version": 3}
    warehouse.remove(f"{base}/done/report.json")
    warehouse.remove(f"{base}/done/report.json")  # a missing file is not an error
    assert not warehouse.exists(f"{base}/done/report.json")


def test_a_write_that_fails_leaves_the_previous_file_whole_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "lessons.json"
    warehouse.write_json(target, ["keep me"])

    def crash(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        warehouse.write_json(target, ["half"])
    with pytest.raises(OSError, match="disk full"):
        warehouse.write_frame(tmp_path / "items.parquet", FRAME)
    assert warehouse.read_json(target) == ["keep me"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lessons.json"]


def test_one_file_name_stamp_in_utc():
    moment = datetime(2026, 9, 1, 11, 30, 0, 123456, tzinfo=timezone.utc)
    assert stamp(moment) == "20260901T113000123456Z"
    assert stamp(moment.astimezone()) == "20260901T113000123456Z"


@pytest.mark.parametrize("root", ["local", "memory://warehouse-frames"])
def test_many_files_read_as_one_frame_in_order_contiguous_by_group(tmp_path, root, monkeypatch):
    monkeypatch.setattr(warehouse, "READ_GROUP", 2)
    base = str(tmp_path) if root == "local" else f"{root}/{tmp_path.name}"
    paths = []
    for i in range(5):
        path = f"{base}/t/part-{i}.parquet"
        frame = pl.DataFrame({"id": [f"a{i}", f"b{i}"], "n": [i, i]})
        # an older file without the column the first one has: read with nulls there
        warehouse.write_frame(path, frame if i != 3 else frame.drop("n"))
        paths.append(path)
    read = warehouse.read_frames(paths, how="diagonal_relaxed")
    assert read["id"].to_list() == [f"{x}{i}" for i in range(5) for x in "ab"]
    assert read["n"].to_list() == [0, 0, 1, 1, 2, 2, None, None, 4, 4]
    # Each group of files is one chunk: not one chunk per file.
    assert read.n_chunks() <= 3
    assert warehouse.read_frames(paths, columns=["id"], how="diagonal_relaxed").columns == ["id"]
    # A file with a column the first file lacks: read file by file, every column kept.
    warehouse.write_frame(f"{base}/t/part-9.parquet", pl.DataFrame({"id": ["z"], "n": [9], "extra": ["x"]}))
    wider = warehouse.read_frames([*paths, f"{base}/t/part-9.parquet"], how="diagonal_relaxed")
    assert wider.height == 11 and wider["extra"].to_list()[-1] == "x" and wider["n"].to_list()[-1] == 9
