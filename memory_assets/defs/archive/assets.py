"""What the archive says in aggregate: clusters of archived memories, one insight each."""

import dagster as dg

from memory_assets.defs import freshness
from memory_assets.defs.runtime import EmbedderResource, MemoryRoot
from memory_assets.lib import archive
from retrieval.llm import load_prompt


@dg.asset(
    deps=["published_items"],
    group_name="archive",
    kinds={"python", "scikitlearn", "parquet", "lancedb", "openai"},
    code_version=f"clusters-{load_prompt('cluster_insight').version}",
    freshness_policy=freshness.WEEKLY,
)
def archive_clusters(context: dg.AssetExecutionContext, memory: MemoryRoot,
                     embedder: EmbedderResource) -> dg.MaterializeResult:
    """Archived memories, grouped by meaning (HDBSCAN over their embeddings), each group
    with one insight sentence ("Mostly about WRX maintenance: …") and its member ids.
    Archived items are still recalled when active ones don't fill the block (tagged
    ``[archived]``); the insights say what the archive is about as a whole, searchable
    with ``MemoryClient.insights(query)`` (LanceDB ``insights`` table).
    """
    settings = memory.config
    done = archive.write_clusters(memory.paths, embedder.build(settings).embed, settings)
    frame, clusters, tally = done.frame, done.clusters, done.tally
    return dg.MaterializeResult(metadata={
        "archived_items": done.archived_items,
        "clusters": frame.height,
        "clustered_items": int(frame["size"].sum()) if frame.height else 0,
        "insight_fallbacks": tally.fallbacks,
        "tokens": tally.prompt_tokens + tally.completion_tokens,
        "cost_usd": round(tally.cost_usd(settings), 6),
        # Sizes, not the sentences: Dagster's run history cannot be erased item by item (`memory erase`).
        "cluster_sizes": [c.size for c in clusters[:20]],
    })
