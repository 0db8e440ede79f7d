"""The monthly health report: is the memory growing, current and clean?"""

import dagster as dg

from memory_assets.defs import freshness
from memory_assets.defs.runtime import MemoryRoot
from memory_assets.lib import health
from memory_assets.defs.clock import Clock


@dg.asset(
    deps=["published_items", "lessons_and_triggers"],
    group_name="health",
    kinds={"python", "markdown", "matplotlib"},
    code_version="health-v1",
    freshness_policy=freshness.MONTHLY,
)
def health_report(context: dg.AssetExecutionContext, config: Clock, memory: MemoryRoot) -> dg.MaterializeResult:
    """How the memory is doing: active items, items by category, tier and status, how
    stale they are, how fast they grow, what the write gate rejected and why, and what
    extraction cost — markdown and plots under ``<data root>/health/<date>/``, shown here.
    """
    result = health.write_report(memory.paths, memory.config, config.resolve(context))
    numbers = result.numbers
    return dg.MaterializeResult(metadata={
        # Plots inline, each where the report shows it: the UI cannot follow a relative link.
        "report": dg.MetadataValue.md(health.inline_plots(result.markdown, result.png_paths)),
        "path": dg.MetadataValue.path(str(result.path)),
        "plots": len(result.png_paths),
        "active_items": numbers.get("active_items", 0),
        "total_items": numbers.get("total_items", 0),
    })
