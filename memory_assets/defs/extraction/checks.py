"""Checks on each session's extracted facts, before consolidation reads them."""

from collections.abc import Iterator

import dagster as dg

from memory_assets.defs.runtime import MemoryRoot
from memory_assets.lib import warehouse as inputs
from memory_assets.lib.quality import facts_report, schema_report
from memory_assets.defs.check_results import sessions_in_scope, to_check_result
from retrieval.schema import FACT_SCHEMA


@dg.multi_asset_check(
    specs=[
        dg.AssetCheckSpec(
            "facts_schema", asset="extracted_facts", blocking=True,
            description="Every extracted-facts Parquet file has FACT_SCHEMA's columns and types "
                        "(missing or retyped: ERROR; extra: WARN), so consolidation can read it.",
        ),
        dg.AssetCheckSpec(
            "facts_valid", asset="extracted_facts", blocking=True,
            description="Every fact has importance and confidence in [0, 1], a configured category, "
                        "known kind/tier/trust, a unique id, source turns that exist in resources, "
                        "no credential (zero tolerance) and untrusted importance under the cap.",
        ),
    ],
)
def extracted_facts_checks(context: dg.AssetCheckExecutionContext, memory: MemoryRoot) -> Iterator[dg.AssetCheckResult]:
    """Audit the session being extracted (or every session when launched alone).

    A quarantined session has no facts file; its check passes on zero rows and says so.
    """
    paths, config = memory.paths, memory.config
    sessions = sessions_in_scope(context)
    files = inputs.fact_files(paths, sessions)
    scope = {"sessions": ", ".join(sessions) if sessions is not None else "all", "files": len(files)}
    yield to_check_result(
        schema_report(inputs.schemas(files, paths.extracted_facts), FACT_SCHEMA, subject="extracted_facts schema"),
        asset="extracted_facts", check="facts_schema", metadata=scope,
    )
    # Facts cite the turns of their own session (all sessions when checking everything).
    report = facts_report(inputs.read_facts(paths, sessions), config,
                          resource_ids=inputs.resource_ids(paths, sessions), subject="extracted_facts")
    yield to_check_result(report, asset="extracted_facts", check="facts_valid", metadata=scope)
