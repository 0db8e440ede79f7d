"""Checks on the stored turns, before extraction reads them."""

from collections.abc import Iterator

import dagster as dg

from memory_assets.defs.runtime import MemoryRoot
from memory_assets.lib import warehouse as inputs
from memory_assets.lib.quality import resources_report, schema_report
from memory_assets.defs.check_results import sessions_in_scope, to_check_result
from retrieval.schema import RESOURCE_SCHEMA


@dg.multi_asset_check(
    specs=[
        dg.AssetCheckSpec(
            "resources_schema", asset="resources", blocking=True,
            description="Every resources Parquet part has RESOURCE_SCHEMA's columns and types "
                        "(missing or retyped: ERROR; extra: WARN), so extraction and every "
                        "memory's source trail can read it.",
        ),
        dg.AssetCheckSpec(
            "resources_valid", asset="resources", blocking=True,
            description="Every turn has its required fields, a known role and trust, a unique "
                        "resource id and timestamps that parse — the ground truth every memory "
                        "cites. A failure stops extraction of the session.",
        ),
    ],
)
def resources_checks(context: dg.AssetCheckExecutionContext, memory: MemoryRoot) -> Iterator[dg.AssetCheckResult]:
    """Audit the session being ingested (or every session when launched alone)."""
    paths = memory.paths
    sessions = sessions_in_scope(context)
    scope = {"sessions": ", ".join(sessions) if sessions is not None else "all"}
    files = inputs.resource_files(paths, sessions)
    yield to_check_result(
        schema_report(inputs.schemas(files, paths.resources), RESOURCE_SCHEMA, subject="resources schema"),
        asset="resources", check="resources_schema", metadata={**scope, "files": len(files)},
    )
    yield to_check_result(
        resources_report(inputs.read_resources(paths, sessions, conform=False), session_ids=sessions, subject="resources"),
        asset="resources", check="resources_valid", metadata=scope,
    )
