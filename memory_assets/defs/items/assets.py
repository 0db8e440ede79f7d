"""The canonical memory: de-duplicated, scored items with vectors and a full-text index."""


import os
from datetime import datetime, timezone

import dagster as dg
import polars as pl
from dagster_duckdb import DuckDBResource

from memory_assets.defs.extraction.assets import read_all_facts
from memory_assets.defs.resources import EmbedderResource, MemoryRoot
from memory_assets.lib import feedback, publish
from memory_assets.lib.items import consolidate
from retrieval.store import ItemStore


def _merge_log(merges, now: datetime) -> pl.DataFrame:
    return pl.DataFrame(
        [{"kept_id": m.kept_id, "merged_id": m.merged_id, "similarity": m.similarity,
          "kept_content": m.kept_content, "merged_content": m.merged_content, "merged_at": now} for m in merges],
        schema={"kept_id": pl.String, "merged_id": pl.String, "similarity": pl.Float64,
                "kept_content": pl.String, "merged_content": pl.String, "merged_at": pl.Datetime("us", "UTC")},
    )


@dg.asset(
    deps=["extracted_facts"],
    group_name="items",
    kinds={"python", "parquet", "lancedb", "duckdb"},
    code_version="memory-items-v1",
    pool="duckdb",
    automation_condition=dg.AutomationCondition.eager(),
)
def memory_items(context: dg.AssetExecutionContext, memory: MemoryRoot, embedder: EmbedderResource,
                 duckdb: DuckDBResource) -> dg.MaterializeResult:
    """Everything the agent may remember: one row per distinct memory, with importance,
    confidence, trust, tier, status and the turns it came from.

    Exact and near-duplicate facts are merged into one item (the fresher wording wins,
    and it keeps every source); a fact that replaces an older one marks the older one
    superseded; the agent's feedback (reinforce, demote, update, forget, echo/fizzle)
    is folded in. Published as a Parquet snapshot and the LanceDB ``items`` table
    (vectors + full-text index) that retrieval searches.
    """
    paths, config = memory.paths, memory.config
    now = datetime.now(timezone.utc)
    store = ItemStore(paths)
    facts = read_all_facts(memory)
    previous = store.items()
    batch = feedback.read_events(paths)
    for error in batch.errors:
        context.log.warning(error)
    result = consolidate(facts, previous, store.vectors_by_hash(), embedder.build(config), config, now,
                         events=batch.events)
    written = publish.write_items(paths, result.items, result.vectors, now)
    if result.merges:
        paths.merges.mkdir(parents=True, exist_ok=True)
        log = paths.merges / f"merges-{now.strftime('%Y%m%dT%H%M%S%f')}.parquet"
        _merge_log(result.merges, now).write_parquet(log.with_suffix(".tmp"))
        os.replace(log.with_suffix(".tmp"), log)
    publish.publish(paths, written)
    # Only after the new version is live: the folded event files move into the event log.
    compacted = feedback.compact(paths, batch, now.strftime("%Y%m%dT%H%M%S%f"))

    paths.duckdb.parent.mkdir(parents=True, exist_ok=True)
    with duckdb.get_connection() as conn:
        by_category = conn.execute(
            "select category, count(*) from read_parquet(?) where status = 'active' group by 1 order by 2 desc",
            [str(written.parquet)],
        ).fetchall()
        by_status = conn.execute(
            "select status, count(*) from read_parquet(?) group by 1 order by 1", [str(written.parquet)]
        ).fetchall()
    active = result.items.filter(pl.col("status") == "active")
    return dg.MaterializeResult(metadata={
        "items": result.items.height,
        "active_items": active.height,
        "facts_in": facts.height,
        "merged": len(result.merges),
        "superseded": len(result.superseded),
        "embedded": result.embedded,
        "vectors_reused": result.reused_vectors,
        "events_folded": dict(sorted(result.events_folded.items())),
        "event_files_compacted": compacted,
        "bad_event_files": len(batch.errors),
        "untrusted_items": int((active["source_trust"] == "untrusted").sum()),
        "lancedb_version": written.version,
        "by_category": {k: int(v) for k, v in by_category},
        "by_status": {k: int(v) for k, v in by_status},
        "embedding_model": result.items["embedding_model"][0] if result.items.height else "none",
        "sample": dg.MetadataValue.md("\n".join(f"- {c}" for c in active.sort("importance", descending=True)["content"].head(10).to_list()) or "none"),
    })
