"""``memory_assets.lib.warehouse``: atomic writes, typed reads, local paths and fsspec URIs alike."""

from __future__ import annotations

import os
from datetime import datetime, timezone

import polars as pl
import pytest

from memory_assets.lib import warehouse

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
    assert warehouse.stamp(moment) == "20260901T113000123456Z"
    assert warehouse.stamp(moment.astimezone()) == "20260901T113000123456Z"
