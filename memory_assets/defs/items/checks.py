"""The audit of write–audit–publish: a staged item version reaches the agent only if these pass.

``memory_items`` writes and stages a new version; the blocking checks below audit that
*staged* version (Parquet file and LanceDB table version), record the verdict, and a
failure stops the run before ``published_items`` moves the agent's pointers — so the
previous version stays published and the UI shows why.
"""

from collections.abc import Iterator

import dagster as dg

from memory_assets.defs.runtime import MemoryRoot
from memory_assets.lib.items.staging import STAGED_CHECKS, audit_staged
from memory_assets.lib.quality import audit, conflicts_report, embeddings_report
from memory_assets.defs.check_results import failed_result, to_check_result
from retrieval.store import ItemStore

# The asset each staged check is on.
CHECKED = {"items_schema": "memory_items", "items_valid": "memory_items", "items_embeddings": "memory_items",
           "items_read_index": "memory_items", "graph_valid": "edges"}


@dg.multi_asset_check(
    specs=[
        dg.AssetCheckSpec(
            "items_schema", asset="memory_items", blocking=True,
            description="The staged items Parquet has ITEM_SCHEMA's columns and types (missing or "
                        "retyped: ERROR; extra: WARN): the published contract every reader relies on.",
        ),
        dg.AssetCheckSpec(
            "items_valid", asset="memory_items", blocking=True,
            description="Every staged item has importance and confidence in [0, 1], a configured "
                        "category, known kind/tier/status/trust, a unique id, supersedes/superseded_by "
                        "ids that exist, source turns that exist in resources, no credential (zero "
                        "tolerance) and untrusted importance under the cap. Blocks publishing.",
        ),
        dg.AssetCheckSpec(
            "items_embeddings", asset="memory_items", blocking=True,
            description="The staged LanceDB version has one vector dimension, the configured model's, "
                        "no NaN, unit norms, and its full-text index on content. Blocks publishing.",
        ),
        dg.AssetCheckSpec(
            "items_read_index", asset="memory_items", blocking=True,
            description="The staged version's in-process read index (what inject searches) exists, is of "
                        "its rows in order and of the configured model, and finds sampled rows by their own "
                        "vector (and, WARN, by their own words). Blocks publishing.",
        ),
        dg.AssetCheckSpec(
            "graph_valid", asset="edges", blocking=True, additional_deps=["entities"],
            description="The staged graph: every edge joins nodes that exist (items and entities of this "
                        "version; stored resources for derived_from), edge kinds are known and confidences "
                        "in [0, 1], and every active entity has an active fact. Blocks publishing.",
        ),
    ],
)
def memory_items_checks(context: dg.AssetCheckExecutionContext, memory: MemoryRoot) -> Iterator[dg.AssetCheckResult]:
    """Audit the staged (not yet published) items version."""
    audited = audit_staged(memory.paths, memory.config)
    if audited is None:
        for check in STAGED_CHECKS:
            yield failed_result(asset=CHECKED[check], check=check, reason="nothing staged: materialize memory_items first")
        return
    written, reports = audited
    staged = {"staged_version": written.version, "parquet": written.parquet.name}
    for check, report in reports.items():
        yield to_check_result(report, asset=CHECKED[check], check=check, metadata=staged)
    if "graph_valid" not in reports:  # a version staged before the graph existed
        yield failed_result(asset="edges", check="graph_valid", reason="the staged version has no graph: materialize memory_items")


@dg.multi_asset_check(
    specs=[
        dg.AssetCheckSpec(
            "published_embeddings", asset="published_items",
            description="What the agent searches right now: the published LanceDB version's vectors "
                        "(one dimension, the configured model's, no NaN, unit norms) and its full-text index.",
        ),
        dg.AssetCheckSpec(
            "published_was_audited", asset="published_items",
            description="The published version is one whose blocking checks passed (catches a publish "
                        "that bypassed the audit, e.g. published_items launched alone).",
        ),
        dg.AssetCheckSpec(
            "conflicts_resolved", asset="published_items",
            description="No active item is still contradicted by another active item (a slot given two "
                        "values with no rule sure enough to retire one). WARN with the pairs: the agent "
                        "is shown both marked [conflict] until one is settled.",
        ),
    ],
)
def published_items_checks(context: dg.AssetCheckExecutionContext, memory: MemoryRoot) -> Iterator[dg.AssetCheckResult]:
    """Re-check the version the agent reads, after it is published (never blocks)."""
    paths, config = memory.paths, memory.config
    store = ItemStore(paths)
    table = store.table()
    if table is None:
        for check in ("published_embeddings", "published_was_audited", "conflicts_resolved"):
            yield failed_result(asset="published_items", check=check, reason="nothing is published yet")
        return
    version = int(table.version)
    yield to_check_result(embeddings_report(table, config, subject=f"published items v{version}"),
                          asset="published_items", check="published_embeddings",
                          metadata={"published_version": version})
    yield to_check_result(conflicts_report(store.items(), subject=f"published items v{version}"),
                          asset="published_items", check="conflicts_resolved", metadata={"published_version": version})
    entry = audit.verdict(paths, version)
    ok = audit.passed(paths, version)
    yield dg.AssetCheckResult(
        asset_key="published_items", check_name="published_was_audited", passed=ok,
        severity=dg.AssetCheckSeverity.ERROR,
        description=(f"version {version} passed its blocking checks" if ok else
                     f"version {version} was {'never audited' if entry is None else 'audited and failed'}"),
        metadata={"published_version": version,
                  "checks": {k: v["summary"] for k, v in (entry or {}).get("checks", {}).items()}},
    )
