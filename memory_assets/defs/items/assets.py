"""The canonical memory: de-duplicated, scored items with vectors and a full-text index."""


from datetime import datetime, timedelta, timezone

import dagster as dg
import polars as pl
from dagster_duckdb import DuckDBResource

from memory_assets.defs import freshness
from memory_assets.defs.clock import Clock
from memory_assets.defs.resources import EmbedderResource, MemoryRoot
from memory_assets.lib import warehouse
from memory_assets.lib.faults import crash_point
from memory_assets.lib.items import feedback, publish
from memory_assets.lib.items.rebuild import rebuild_items
from memory_assets.lib.lifecycle import sweeps
from memory_assets.lib.quality import audit
from retrieval.store import ItemStore


def _merge_log(merges, now: datetime) -> pl.DataFrame:
    return pl.DataFrame(
        [{"kept_id": m.kept_id, "merged_id": m.merged_id, "similarity": m.similarity,
          "kept_content": m.kept_content, "merged_content": m.merged_content, "merged_at": now} for m in merges],
        schema={"kept_id": pl.String, "merged_id": pl.String, "similarity": pl.Float64,
                "kept_content": pl.String, "merged_content": pl.String, "merged_at": pl.Datetime("us", "UTC")},
    )


@dg.asset(
    deps=["extracted_facts", "archive_sweep", "cold_sweep"],
    group_name="items",
    kinds={"python", "parquet", "lancedb", "duckdb"},
    code_version="memory-items-v6",
    pool="duckdb",
    # A new sweep is applied by the job that made it (or the next run); it neither
    # triggers this asset nor, before the first one, holds it back.
    automation_condition=dg.AutomationCondition.eager().ignore(dg.AssetSelection.assets("archive_sweep", "cold_sweep")),
)
def memory_items(context: dg.AssetExecutionContext, config: Clock, memory: MemoryRoot,
                 embedder: EmbedderResource, duckdb: DuckDBResource) -> dg.MaterializeResult:
    """Everything the agent may remember: one row per distinct memory, with importance,
    confidence, trust, tier, status and the turns it came from.

    Exact and near-duplicate facts are merged into one item (the fresher wording wins,
    and it keeps every source); a fact that replaces an older one marks the older one
    superseded; the agent's feedback (reinforce, demote, update, forget, echo/fizzle)
    is folded in; the lifecycle (decay, boosts, confidence, contradictions, TTLs, purge,
    promotion) is applied as of the run's clock, and so are the pending sweeps
    (``archive_sweep`` weekly, ``cold_sweep`` monthly, which also asks for every item to be
    embedded again and checked against every other). Each item
    is found by full-text search through its content, the turns it came from and the turns
    around them (``lib/items/source_text.py``; LanceDB only). Written as a new Parquet version
    and a new LanceDB ``items`` version (vectors + full-text index), staged for its
    checks; ``published_items`` makes it what retrieval reads.
    """
    paths, settings = memory.paths, memory.config
    now = config.resolve(context)
    store = ItemStore(paths)
    facts = warehouse.read_facts(paths)
    batch = feedback.read_events(paths)
    for error in batch.errors:
        context.log.warning(error)
    pending = sweeps.pending(paths)
    model = embedder.build(settings)
    built = rebuild_items(facts, store.items(), batch.events, pending, store.vectors_by_hash, model,
                          warehouse.read_resources(paths, conform=False), settings, now)
    items, result, report = built.items, built.consolidated, built.report
    written = publish.write_items(paths, items, built.vectors, now, search_text=built.search_text)
    written = publish.ItemsVersion(**{**written.__dict__, "event_files": [f.name for f in batch.files],
                                      "sweep_files": [s.file for s in pending]})
    crash_point("items_write")
    publish.stage(paths, written)
    if result.merges:
        warehouse.write_frame(paths.merges / f"merges-{warehouse.stamp(now)}.parquet", _merge_log(result.merges, now))

    warehouse.makedirs(paths.duckdb.parent)
    with duckdb.get_connection() as conn:
        by_category = conn.execute(
            "select category, count(*) from read_parquet(?) where status = 'active' group by 1 order by 2 desc",
            [str(written.parquet)],
        ).fetchall()
        by_status = conn.execute(
            "select status, count(*) from read_parquet(?) group by 1 order by 1", [str(written.parquet)]
        ).fetchall()
    active = items.filter(pl.col("status") == "active")
    publish.write_report(paths, report.metadata())
    return dg.MaterializeResult(metadata={
        "items": items.height,
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
        "embedding_model": model.model_id,
        "clock": now.isoformat(),
        "lifecycle": {k: v for k, v in report.counts.items() if v},
        "sweeps_applied": [s.file for s in pending],
        "sample": dg.MetadataValue.md("\n".join(f"- {c}" for c in active.sort("importance", descending=True)["content"].head(10).to_list()) or "none"),
    })


@dg.asset(
    deps=["memory_items"],
    group_name="items",
    kinds={"lancedb", "parquet"},
    code_version="published-items-v1",
    freshness_policy=freshness.NIGHTLY,
    # Plain eager() would request this asset alone after a failed blocking check.
    automation_condition=dg.AutomationCondition.eager() & dg.AutomationCondition.all_deps_blocking_checks_passed(),
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
    if not audit.passed(paths, written.version):  # e.g. launched alone from the UI
        raise dg.Failure(f"staged version {written.version} has not passed its blocking checks",
                         metadata={"audit": str(audit.verdict(paths, written.version))})
    previous = publish.current(paths)
    hold = publish.held(paths)
    if hold is not None:  # a rollback holds the agent on an earlier version until `memory publish`
        context.log.warning(f"version {written.version} staged and audited, not published: a rollback holds "
                            f"version {hold}; `memory publish` releases it")
        return dg.MaterializeResult(metadata={
            "published_version": previous.version if previous else -1, "staged_version": written.version,
            "held": f"held at version {hold}; `memory publish` releases", "items": written.rows,
        })
    publish.publish(paths, written)
    # Only once the new version is live do the folded event files move into the event log.
    batch = feedback.read_events(paths)
    batch.files = [f for f in batch.files if f.name in set(written.event_files)]
    compacted = feedback.compact(paths, batch, warehouse.stamp(datetime.now(timezone.utc)))
    settled = sweeps.settle(paths, written.sweep_files)
    return dg.MaterializeResult(metadata={
        "published_version": written.version,
        "previous_version": previous.version if previous else -1,
        "items": written.rows,
        "parquet": dg.MetadataValue.path(str(paths.published_items)),
        "event_files_compacted": compacted,
        "sweeps_settled": settled,
    })


@dg.asset(
    deps=["published_items"],
    group_name="items",
    kinds={"lancedb"},
    code_version="items-index-v1",
    freshness_policy=freshness.MONTHLY,
)
def items_index(context: dg.AssetExecutionContext, memory: MemoryRoot) -> dg.MaterializeResult:
    """The search indexes behind the published items, kept fast: the full-text index and
    (above 20k items) the vector index rebuilt, and the LanceDB table compacted, with
    versions older than 30 days cleaned up (tagged versions are kept). Monthly.
    """
    table = ItemStore(memory.paths).table()
    if table is None:
        return dg.MaterializeResult(metadata={"rows": 0})
    import lancedb

    live = lancedb.connect(str(memory.paths.lancedb)).open_table("items")
    before = len(live.list_versions())
    # Only when the latest version is the published one: never publish a version that
    # failed its checks by compacting it.
    published_is_latest = live.version == table.version
    stats = live.optimize(cleanup_older_than=timedelta(days=30))
    rows = live.count_rows()
    # A table written before items kept their source text has only the content to index.
    fts_column = publish.FTS_COLUMN if publish.FTS_COLUMN in live.schema.names else "content"
    live.create_fts_index(fts_column, replace=True, with_position=False)
    if rows >= publish.VECTOR_INDEX_MIN_ROWS:
        live.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_HNSW_SQ", replace=True)
    # Same rows, fresh indexes: the agent moves to the compacted version.
    current = publish.current(memory.paths)
    if published_is_latest and current is not None and live.version != table.version:
        audit.carry(memory.paths, table.version, live.version, "compaction")
        publish.publish(memory.paths, publish.ItemsVersion(**{**current.__dict__, "version": live.version}))
    return dg.MaterializeResult(metadata={
        "rows": rows,
        "versions_before": before,
        "versions_after": len(live.list_versions()),
        "indexes": [i.name for i in live.list_indices()],
        "compaction": str(getattr(stats, "compaction", stats))[:500],
    })
