"""The lessons and forward triggers the agent reads are checked like any document it reads."""

import json

import dagster as dg
import polars as pl

from memory_assets.defs.resources import MemoryRoot
from memory_assets.lib.quality.check_results import failed_result, to_check_result
from memory_assets.lib.quality.citation_suite import lifecycle_report
from retrieval.store import ItemStore


@dg.asset_check(asset="lifecycle",
                description="The lessons and forward triggers the agent reads (MemoryClient.lessons(), "
                            "due_triggers()) are non-empty lines within their size cap, credential-free, "
                            "and cite only items that exist. The asset runs the same suite before it writes.")
def lessons_and_triggers_valid(memory: MemoryRoot) -> dg.AssetCheckResult:
    paths = memory.paths
    if not paths.lessons.exists() or not paths.triggers.exists():
        return failed_result(asset="lifecycle", check="lessons_and_triggers_valid",
                             reason="no lessons or triggers written yet")
    report = lifecycle_report(json.loads(paths.lessons.read_text(encoding="utf-8")), pl.read_parquet(paths.triggers),
                              ItemStore(paths).items()["id"])
    return to_check_result(report, asset="lifecycle", check="lessons_and_triggers_valid")
