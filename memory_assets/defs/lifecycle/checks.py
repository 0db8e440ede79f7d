"""The lessons and forward triggers the agent reads are checked like any document it reads."""

import dagster as dg

from memory_assets.defs.runtime import MemoryRoot
from memory_assets.lib import warehouse
from memory_assets.defs.check_results import failed_result, to_check_result
from memory_assets.lib.quality.citation_suite import lifecycle_report
from retrieval.store import ItemStore


@dg.asset_check(asset="lessons_and_triggers",
                description="The lessons and forward triggers the agent reads (MemoryClient.lessons(), "
                            "due_triggers()) are non-empty lines within their size cap, credential-free, "
                            "and cite only items that exist. The asset runs the same suite before it writes.")
def lessons_and_triggers_valid(memory: MemoryRoot) -> dg.AssetCheckResult:
    paths = memory.paths
    lessons, triggers = warehouse.read_json(paths.lessons), warehouse.read_frame(paths.triggers)
    if lessons is None or triggers is None:
        return failed_result(asset="lessons_and_triggers", check="lessons_and_triggers_valid",
                             reason="no lessons or triggers written yet")
    report = lifecycle_report(lessons, triggers, ItemStore(paths).items()["id"])
    return to_check_result(report, asset="lessons_and_triggers", check="lessons_and_triggers_valid")
