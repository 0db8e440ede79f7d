"""What the archive says in aggregate: clusters of archived memories, one insight each."""

import dagster as dg
import numpy as np
import polars as pl

from memory_assets.lib import warehouse
from memory_assets.defs import freshness
from memory_assets.defs.runtime import EmbedderResource, MemoryRoot
from memory_assets.lib import archive, summaries
from memory_assets.lib.items import publish
from retrieval.llm import load_prompt
from retrieval.store import INSIGHTS_TABLE, ItemStore


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
    paths, settings = memory.paths, memory.config
    store = ItemStore(paths)
    items = store.items().filter(pl.col("status").is_in(["archived", "cold"]))
    vectors, _found = store.vectors_for(items["content_hash"])
    vectors = vectors if vectors is not None else np.zeros((0, 384), np.float32)
    tally = archive.InsightTally()
    clusters = archive.cluster(items, vectors, settings)
    clusters = archive.with_insights(clusters, items, vectors, llm=summaries.chat_client(settings),
                                     config=settings, tally=tally)
    frame = archive.clusters_frame(clusters)
    warehouse.write_frame(paths.clusters, frame)
    if frame.height:
        publish.publish_table(paths, INSIGHTS_TABLE, frame, embedder.build(settings).embed(frame["insight"].to_list()))
    return dg.MaterializeResult(metadata={
        "archived_items": items.height,
        "clusters": frame.height,
        "clustered_items": int(frame["size"].sum()) if frame.height else 0,
        "insight_fallbacks": tally.fallbacks,
        "tokens": tally.prompt_tokens + tally.completion_tokens,
        "cost_usd": round(tally.cost_usd(settings), 6),
        # Sizes, not the sentences: Dagster's run history cannot be erased item by item (`memory erase`).
        "cluster_sizes": [c.size for c in clusters[:20]],
    })
