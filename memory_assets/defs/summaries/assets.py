"""Tier 1 of retrieval: one summary per category."""

import dagster as dg

from memory_assets.defs import freshness
from memory_assets.defs.clock import Clock
from memory_assets.defs.runtime import EmbedderResource, MemoryRoot
from memory_assets.lib.summaries import SummariesRefused, update_summaries
from retrieval.llm import load_prompt
from retrieval.profiles import PROFILE_PREFIX


class SummariesRun(Clock):
    rebuild: bool = False  # weekly: every summary from scratch, from active items only


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
    the most valuable active facts, contradictions resolved, each line citing its items;
    and one profile per important entity (``entities/<name>.md``: a person, place or
    product with enough facts), which answers "what do we know about Caroline?".
    Retrieval answers from these first (tier 1) and goes to items only when they don't
    suffice. Every earlier version is kept under ``summaries/archive/``; the weekly run
    rebuilds each summary from scratch from active items only.
    """
    settings = memory.config
    now = config.resolve(context)
    model = embedder.build(settings)
    try:
        done = update_summaries(memory.paths, model.embed, settings, now, rebuild_all=config.rebuild,
                                model_id=model.model_id)
    except SummariesRefused as refused:
        raise dg.Failure(str(refused), metadata={"missing": refused.missing}) from None
    fresh = done.fresh
    return dg.MaterializeResult(metadata={
        "clock": now.isoformat(),
        "rebuilt": config.rebuild,
        "summaries": done.table.height,
        "entity_profiles": int(done.table["category"].str.starts_with(PROFILE_PREFIX).sum()) if done.table.height else 0,
        "updated": sorted({s.category for s in fresh if not s.category.startswith(PROFILE_PREFIX)}),
        "profiles_updated": sum(s.category.startswith(PROFILE_PREFIX) for s in fresh),
        "versions_archived": done.versions_archived,
        "tokens": sum(s.prompt_tokens + s.completion_tokens for s in fresh),
        "cost_usd": round(sum(s.cost_usd for s in fresh), 6),
        "lancedb_version": done.lancedb_version if done.lancedb_version is not None else -1,
        # No page text: Dagster's run history cannot be erased item by item (`memory erase`).
        "pages": dg.MetadataValue.md("\n".join(f"- {s.file_name}" for s in fresh[:20] if not s.category.startswith(PROFILE_PREFIX)) or "no change"),
    })
