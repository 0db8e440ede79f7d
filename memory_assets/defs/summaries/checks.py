"""Summaries, insights and the health report cite only items that exist, within their size caps."""

import dagster as dg
import polars as pl

from memory_assets.defs.runtime import MemoryRoot
from memory_assets.defs.check_results import failed_result, to_check_result
from memory_assets.lib.quality.citation_suite import citations_report
from retrieval.store import ItemStore

# The health report is read by people, not injected: a generous cap that still catches runaway output.
HEALTH_MAX_CHARS = 50_000


@dg.asset_check(asset="category_summaries",
                description="Every category summary is non-empty, at most [summaries] max_chars long, "
                            "unique per category, credential-free, and cites only items that exist.")
def summaries_cite_existing_items(memory: MemoryRoot) -> dg.AssetCheckResult:
    path = memory.paths.summaries / "summaries.parquet"
    if not path.exists():
        return failed_result(asset="category_summaries", check="summaries_cite_existing_items",
                             reason="no summaries written yet")
    report = citations_report(pl.read_parquet(str(path)), id_column="category", text_column="markdown",
                              cited_column="item_ids", item_ids=ItemStore(memory.paths).items()["id"],
                              max_chars=int(memory.config.summaries.max_chars), subject="category_summaries")
    return to_check_result(report, asset="category_summaries", check="summaries_cite_existing_items")


@dg.asset_check(asset="archive_clusters",
                description="Every archive insight is a non-empty sentence whose member ids exist.")
def insights_cite_existing_items(memory: MemoryRoot) -> dg.AssetCheckResult:
    path = memory.paths.clusters
    if not path.exists():
        return failed_result(asset="archive_clusters", check="insights_cite_existing_items",
                             reason="no clusters written yet")
    report = citations_report(pl.read_parquet(str(path)), id_column="cluster_id", text_column="insight",
                              cited_column="member_ids", item_ids=ItemStore(memory.paths).items()["id"],
                              max_chars=400, subject="archive_clusters", min_rows=0)
    return to_check_result(report, asset="archive_clusters", check="insights_cite_existing_items")


@dg.asset_check(asset="health_report",
                description="The latest health report exists, is non-empty and within its size cap.")
def health_report_written(memory: MemoryRoot) -> dg.AssetCheckResult:
    reports = sorted(memory.paths.health.glob("*/health.md"))
    if not reports:
        return failed_result(asset="health_report", check="health_report_written", reason="no report written yet")
    frame = pl.DataFrame({"name": [reports[-1].parent.name], "text": [reports[-1].read_text()],
                          "cited": [[]]}, schema={"name": pl.String, "text": pl.String, "cited": pl.List(pl.String)})
    report = citations_report(frame, id_column="name", text_column="text", cited_column="cited", item_ids=[],
                              max_chars=HEALTH_MAX_CHARS, subject="health_report")
    return to_check_result(report, asset="health_report", check="health_report_written")
