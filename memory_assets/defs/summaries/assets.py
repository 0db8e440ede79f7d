"""Tier 1 of retrieval: one summary per category."""

import dagster as dg
import polars as pl

from memory_assets.lib import warehouse
from memory_assets.defs import freshness
from memory_assets.defs.resources import EmbedderResource, MemoryRoot
from memory_assets.lib.items import publish
from memory_assets.lib import summaries
from memory_assets.defs.clock import Clock
from retrieval.llm import load_prompt
from retrieval.store import SUMMARIES_TABLE, ItemStore


class SummariesRun(Clock):
    rebuild: bool = False  # weekly: every summary from scratch, from active items only


def _current(paths) -> pl.DataFrame:
    return warehouse.read_frame(paths.summaries / "summaries.parquet", summaries.SUMMARY_SCHEMA)


@dg.asset(
    deps=["published_items"],
    group_name="summaries",
    kinds={"python", "markdown", "lancedb", "openai"},
    code_version=f"summaries-{load_prompt('summarize_category').version}",
    automation_condition=dg.AutomationCondition.eager(),
    freshness_policy=freshness.NIGHTLY,
)
def category_summaries(context: dg.AssetExecutionContext, config: SummariesRun, memory: MemoryRoot,
                       embedder: EmbedderResource) -> dg.MaterializeResult:
    """What the agent knows, one page per category (work.md, health.md, vehicle.md, …):
    the most valuable active facts, contradictions resolved, each line citing its items.
    Retrieval answers from these first (tier 1) and goes to items only when they don't
    suffice. Every earlier version is kept under ``summaries/archive/``; the weekly run
    rebuilds each summary from scratch from active items only.
    """
    paths, settings = memory.paths, memory.config
    now = config.resolve(context)
    items = ItemStore(paths).items()
    llm = summaries.chat_client(settings)
    current = _current(paths)
    stamp_file = paths.summaries / ".last_run"
    if config.rebuild or current.is_empty():
        fresh = summaries.rebuild(items, settings, now, llm=llm)
    else:
        last = warehouse.read_text(stamp_file)
        since = pl.Series([last.strip()]).str.to_datetime(time_zone="UTC")[0] if last else None
        changed = items if since is None else items.filter(pl.col("updated_at") > since)
        known_ids = set(items["id"].to_list())
        # A summary citing an item that merged away is rewritten from scratch, not patched.
        stale = {r["category"] for r in current.iter_rows(named=True) if set(r["item_ids"]) - known_ids}
        fresh = []
        for category in sorted(set(changed["category"].to_list()) | stale):
            old = current.filter(pl.col("category") == category)
            if category in stale or not old.height:
                fresh.append(summaries.summarize(category, None, items.filter(pl.col("category") == category),
                                                 settings, now, llm=llm))
            else:
                fresh.append(summaries.summarize(category, old["markdown"][0], changed, settings, now, llm=llm))
    known = set(items["id"].to_list())
    broken = {s.category: summaries.missing_citations(s, known) for s in fresh}
    broken = {k: v for k, v in broken.items() if v}
    if broken:  # audit before publish: a summary never cites an item that does not exist
        raise dg.Failure("summaries cite unknown items", metadata={"missing": broken})
    archived = [summaries.archive_versions(paths.summaries, s, now, config=settings) for s in fresh]
    updated = {s.category for s in fresh}
    if config.rebuild:
        table = summaries.summaries_frame(fresh)
    else:
        kept = current.filter(~pl.col("category").is_in(list(updated)))
        table = pl.concat([kept, summaries.summaries_frame(fresh)], how="vertical_relaxed").sort("category")
    version = None
    if table.height:
        vectors = embedder.build(settings).embed(table["content"].to_list())
        version = publish.publish_table(paths, SUMMARIES_TABLE, table, vectors)
        warehouse.write_frame(paths.summaries / "summaries.parquet", table)
    warehouse.write_text(stamp_file, now.isoformat())
    tokens = sum(s.prompt_tokens + s.completion_tokens for s in fresh)
    return dg.MaterializeResult(metadata={
        "clock": now.isoformat(),
        "rebuilt": config.rebuild,
        "summaries": table.height,
        "updated": sorted(updated),
        "versions_archived": sum(a is not None for a in archived),
        "tokens": tokens,
        "cost_usd": round(sum(s.cost_usd for s in fresh), 6),
        "lancedb_version": version if version is not None else -1,
        "preview": dg.MetadataValue.md("\n\n".join(s.text for s in fresh[:3]) or "no change"),
    })
