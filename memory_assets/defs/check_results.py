"""From quality reports to Dagster asset-check results, and what a check run covers.

GX severities map to Dagster's: ``critical`` → ``ERROR`` (a blocking check stops the
run before anything downstream, e.g. publishing), ``warning`` → ``WARN`` (shown, never
blocking).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dagster as dg

from memory_assets.lib.quality.suite_report import QualityReport

SEVERITY = {"ERROR": dg.AssetCheckSeverity.ERROR, "WARN": dg.AssetCheckSeverity.WARN}


def to_check_result(report: QualityReport, *, asset: str, check: str,
                    metadata: Mapping[str, Any] | None = None) -> dg.AssetCheckResult:
    """The check result the UI shows: pass/fail, severity, summary and redacted examples."""
    return dg.AssetCheckResult(
        asset_key=asset, check_name=check, passed=report.passed, severity=SEVERITY[report.severity],
        description=report.summary(), metadata={**(metadata or {}), **report.metadata()},
    )


def failed_result(*, asset: str, check: str, reason: str, metadata: Mapping[str, Any] | None = None) -> dg.AssetCheckResult:
    """A check that could not look at its data (nothing staged, nothing published) fails with the reason."""
    return dg.AssetCheckResult(asset_key=asset, check_name=check, passed=False,
                               severity=dg.AssetCheckSeverity.ERROR, description=reason,
                               metadata={**(metadata or {}), "reason": reason})


def sessions_in_scope(context: dg.AssetCheckExecutionContext) -> list[str] | None:
    """The session partitions this check run covers, or None for every session.

    The checks on the session-partitioned assets are not partitioned themselves (a
    ``partitions_def`` on a check is a preview feature in Dagster 1.13), but when they
    run in a partitioned run — the sensor's and ``memory materialize``'s runs, a
    backfill — Dagster hands them the run's partition, so they check just that session.
    Launched alone from the UI, they check every session.
    """
    if context.has_partition_key:
        return [context.partition_key]
    if context.has_partition_key_range:
        return list(context.partition_keys)
    return None
