"""The canonical memory: de-duplicated, scored items with vectors and a full-text index."""


import dataclasses

import dagster as dg
import polars as pl
from dagster_duckdb import DuckDBResource

from memory_assets.defs import freshness
from memory_assets.defs.clock import Clock, run_now
from memory_assets.defs.runtime import EmbedderResource, MemoryRoot
from memory_assets.lib import warehouse
from memory_assets.lib.items import index
from memory_assets.lib.items.staging import PublishRefused, publish_staged, stage_items
from retrieval import published


MEMORY_ITEMS_DOC = """Everything the agent may remember: one row per distinct memory, with importance,
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
checks; ``published_items`` makes it what retrieval reads."""

ENTITIES_DOC = """Who and what the memory is about: one node per person, place, thing or concept
the items mention (read from each fact's parse), with aliases merged ("Mel" into "Melanie",
each merge logged) and the count of active facts about it. Built with the items, checked
with them and published with them (``published_items``); dual search starts from the
entities a query names."""

EDGES_DOC = """How items and entities connect: ``mentions`` (item → entity), ``relation`` (subject
→ value: "Nate has a turtle"), ``supersedes``, ``contradicts``, ``derived_from`` (item →
its resources) and ``relates_to`` (items used together in one reply). Each edge has a
confidence, reinforced when seen again and decayed nightly, pruned below the floor."""


@dg.multi_asset(
    specs=[
        dg.AssetSpec("memory_items", deps=["extracted_facts", "archive_sweep", "cold_sweep", "erasure"],
                     group_name="items", kinds={"python", "parquet", "lancedb", "duckdb"},
                     code_version="memory-items-v7", description=MEMORY_ITEMS_DOC,
                     # A new sweep or erasure is applied by the job that made it (or the next run);
                     # it neither triggers this asset nor, before the first one, holds it back.
                     automation_condition=dg.AutomationCondition.eager().ignore(
                         dg.AssetSelection.assets("archive_sweep", "cold_sweep", "erasure"))),
        dg.AssetSpec("entities", deps=["memory_items"], group_name="items", kinds={"python", "parquet"},
                     code_version="entities-v1", description=ENTITIES_DOC),
        dg.AssetSpec("edges", deps=["memory_items", "entities"], group_name="items", kinds={"python", "parquet"},
                     code_version="edges-v1", description=EDGES_DOC),
    ],
    pool="duckdb",
    can_subset=False,
)
def memory_items(context: dg.AssetExecutionContext, config: Clock, memory: MemoryRoot,
                 embedder: EmbedderResource, duckdb: DuckDBResource):
    """The items, their entities and their edges: one version, staged together."""
    paths, settings = memory.paths, memory.config
    now = config.resolve(context)
    model = embedder.build(settings)
    staged = stage_items(paths, model, settings, now)
    for error in staged.event_errors:
        context.log.warning(error)
    items, result, report, written = staged.built.items, staged.built.consolidated, staged.built.report, staged.written
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
    graph = staged.graph
    counts = graph.counts()
    yield dg.MaterializeResult(asset_key="memory_items", metadata={
        "items": items.height,
        "active_items": active.height,
        "facts_in": staged.facts_in,
        "merged": len(result.merges),
        "superseded": len(result.superseded),
        "embedded": result.embedded,
        "vectors_reused": result.reused_vectors,
        "events_folded": dict(sorted(result.events_folded.items())),
        "bad_event_files": len(staged.event_errors),
        "untrusted_items": int((active["source_trust"] == "untrusted").sum()),
        "staged_version": written.version,
        "by_category": {k: int(v) for k, v in by_category},
        "by_status": {k: int(v) for k, v in by_status},
        "embedding_model": model.model_id,
        "clock": now.isoformat(),
        "lifecycle": {k: v for k, v in report.counts.items() if v},
        "sweeps_applied": staged.sweeps_applied,
        # What `memory import` brought (lib/items/imports.py); only once there is an import.
        **({"imports": dataclasses.asdict(staged.imports)} if staged.imports is not None else {}),
        # Ids, never content: Dagster's run history cannot be erased item by item (`memory erase`).
        "top_items": dg.MetadataValue.md("\n".join(
            f"- `{i}` {c} ({v:.2f})" for i, c, v in active.sort("importance", descending=True)
            .select("id", "category", "importance").head(10).iter_rows()) or "none"),
    })
    yield dg.MaterializeResult(asset_key="entities", metadata={
        "entities": counts["entities"], "active_entities": counts["active_entities"],
        "aliases_merged": counts["aliases_merged"], "staged_version": written.version,
        # Names are the items' words: counts only (the alias merges are logged under graph/merges/).
        "by_kind": dict(sorted(graph.entities["kind"].value_counts().iter_rows())) if graph.entities.height else {},
    })
    yield dg.MaterializeResult(asset_key="edges", metadata={
        "edges": counts["edges"], **{k: v for k, v in counts.items() if k.startswith("edges_")},
        "staged_version": written.version,
    })


@dg.asset(
    deps=["memory_items", "entities", "edges"],
    group_name="items",
    kinds={"lancedb", "parquet"},
    code_version="published-items-v2",
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
    try:
        done = publish_staged(paths, run_now(context))
    except PublishRefused as refused:
        raise dg.Failure(str(refused), metadata={"audit": str(refused.verdict)}) from None
    if done.held_at is not None:  # a rollback holds the agent on an earlier version until `memory publish`
        context.log.warning(f"version {done.staged} staged and audited, not published: a rollback holds "
                            f"version {done.held_at}; `memory publish` releases it")
        return dg.MaterializeResult(metadata={
            "published_version": done.previous if done.previous is not None else -1, "staged_version": done.staged,
            "held": f"held at version {done.held_at}; `memory publish` releases", "items": done.rows,
        })
    return dg.MaterializeResult(metadata={
        "published_version": done.staged,
        "previous_version": done.previous if done.previous is not None else -1,
        "items": done.rows,
        "parquet": dg.MetadataValue.path(str(published.items_file(paths))),
        "event_files_compacted": done.event_files_compacted,
        "sweeps_settled": done.sweeps_settled,
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
    done = index.optimize(memory.paths)
    if done is None:
        return dg.MaterializeResult(metadata={"rows": 0})
    return dg.MaterializeResult(metadata={
        "rows": done.rows,
        "versions_before": done.versions_before,
        "versions_after": done.versions_after,
        "indexes": done.indexes,
        "compaction": done.compaction,
    })
