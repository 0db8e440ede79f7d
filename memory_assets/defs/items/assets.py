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
    is folded in. Written as a new Parquet version and a new LanceDB ``items`` version
    (vectors + full-text index), staged for its checks; ``published_items`` makes it
    what retrieval reads.
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
    written = publish.ItemsVersion(**{**written.__dict__, "event_files": [f.name for f in batch.files]})
    publish.stage(paths, written)
    if result.merges:
        paths.merges.mkdir(parents=True, exist_ok=True)
        log = paths.merges / f"merges-{now.strftime('%Y%m%dT%H%M%S%f')}.parquet"
        _merge_log(result.merges, now).write_parquet(log.with_suffix(".tmp"))
        os.replace(log.with_suffix(".tmp"), log)

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
        "bad_event_files": len(batch.errors),
        "untrusted_items": int((active["source_trust"] == "untrusted").sum()),
        "staged_version": written.version,
        "by_category": {k: int(v) for k, v in by_category},
        "by_status": {k: int(v) for k, v in by_status},
        "embedding_model": result.items["embedding_model"][0] if result.items.height else "none",
        "sample": dg.MetadataValue.md("\n".join(f"- {c}" for c in active.sort("importance", descending=True)["content"].head(10).to_list()) or "none"),
    })


@dg.asset(
    deps=["memory_items"],
    group_name="items",
    kinds={"lancedb", "parquet"},
    code_version="published-items-v1",
    automation_condition=dg.AutomationCondition.eager(),
)
def published_items(context: dg.AssetExecutionContext, memory: MemoryRoot) -> dg.MaterializeResult:
    """The memory the agent reads: the last ``memory_items`` version that passed every
    blocking check. Moving the LanceDB ``published`` tag and swapping the Parquet
    snapshot by atomic rename is the only way a new version reaches an agent; a failed
    check stops the run before this step, so the previous version stays published.
    ``memory rollback`` re-points to an earlier version.
    """
    paths = memory.paths
    written = publish.staged(paths)
    if written is None:
        raise dg.Failure("nothing staged: materialize memory_items first")
    previous = publish.current(paths)
    publish.publish(paths, written)
    # Only once the new version is live do the folded event files move into the event log.
    batch = feedback.read_events(paths)
    batch.files = [f for f in batch.files if f.name in set(written.event_files)]
    compacted = feedback.compact(paths, batch, datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f"))
    return dg.MaterializeResult(metadata={
        "published_version": written.version,
        "previous_version": previous.version if previous else -1,
        "items": written.rows,
        "parquet": dg.MetadataValue.path(str(paths.published_items)),
        "event_files_compacted": compacted,
    })
