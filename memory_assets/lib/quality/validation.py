"""Running Great Expectations rules over a polars frame.

Suites declare ``Rule``s (a GX expectation by class name, its arguments and a
severity); ``validate`` converts the frame to pandas once — only the columns the rules
read — and runs them all as one GX suite against a module-level ephemeral context
(then only the failed ones again, for their counts and example rows). GX is
imported on first use, not at import time (it takes seconds to import), so
loading the Dagster definitions stays fast.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from memory_assets.lib.quality.suite_report import MAX_EXAMPLES, Finding, QualityReport, Severity

# GX's usage statistics would phone home from every run.
os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")

_GX_SEVERITY = {"ERROR": "critical", "WARN": "warning"}
_FROM_GX = {"critical": "ERROR", "warning": "WARN", "info": "WARN"}


@dataclass(frozen=True)
class Rule:
    """One expectation of a suite.

    Args:
        name: what the UI shows, e.g. ``importance_in_range``.
        expectation: a class in ``great_expectations.expectations``, e.g.
            ``ExpectColumnValuesToBeBetween``.
        severity: ``ERROR`` (blocks publishing) or ``WARN``.
        description: what the rule protects.
        kwargs: the expectation's arguments (``column``, ``value_set``, …).
        show_column: whether examples show the rule's column (not for internal keys).
    """

    name: str
    expectation: str
    severity: Severity
    description: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    show_column: bool = True

    @property
    def column(self) -> str | None:
        return self.kwargs.get("column")


class _Runtime:
    """The ephemeral GX context and its one pandas batch definition, built once."""

    def __init__(self) -> None:
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        self.gx = gx
        self.context = gx.get_context(mode="ephemeral")
        # A tqdm bar per validation would flood the CLI and Dagster's captured logs.
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False, metric_calculations=False)
        source = self.context.data_sources.add_pandas("memory_quality")
        self.batch_definition = source.add_dataframe_asset("frame").add_batch_definition_whole_dataframe("whole")


_RUNTIME: _Runtime | None = None
_LOCK = threading.Lock()


def runtime() -> _Runtime:
    global _RUNTIME
    with _LOCK:
        if _RUNTIME is None:
            _RUNTIME = _Runtime()
        return _RUNTIME


def _expectation(rt: _Runtime, rule: Rule) -> Any:
    cls = getattr(rt.gx.expectations, rule.expectation)
    return cls(**rule.kwargs, severity=_GX_SEVERITY[rule.severity], meta={"rule": rule.name})


def _examples(result: dict[str, Any], rule: Rule, id_column: str, frame: pl.DataFrame,
              context_columns: Sequence[str]) -> list[dict[str, Any]]:
    """The first offending rows: their id, the offending value, and the context columns."""
    rows = [int(i) for i in (result.get("partial_unexpected_index_list") or [])[:MAX_EXAMPLES]]
    if not rows:
        return [{rule.column or "value": v} for v in (result.get("partial_unexpected_list") or [])[:MAX_EXAMPLES]]
    shown = rule.column if rule.show_column else None
    columns = list(dict.fromkeys(c for c in (id_column, shown, *context_columns) if c and c in frame.columns))
    return frame.select(columns)[rows].to_dicts()


def _error(exception_info: Any) -> str | None:
    """GX's exception message, whether it comes flat or keyed by metric."""
    if not exception_info:
        return None
    infos = [exception_info] if "raised_exception" in exception_info else list(exception_info.values())
    messages = [i.get("exception_message") for i in infos if isinstance(i, dict) and i.get("raised_exception")]
    return "; ".join(dict.fromkeys(m for m in messages if m)) or None


def _run(rt: _Runtime, pandas_frame: Any, rules: Sequence[Rule], result_format: str) -> dict[str, Any]:
    """One GX suite run: rule name → its ExpectationValidationResult."""
    suite = rt.gx.ExpectationSuite(name="memory_quality", expectations=[_expectation(rt, r) for r in rules])
    batch = rt.batch_definition.get_batch(batch_parameters={"dataframe": pandas_frame})
    result = batch.validate(suite, result_format={"result_format": result_format,
                                                  "partial_unexpected_count": MAX_EXAMPLES})
    return {outcome.expectation_config.meta["rule"]: outcome for outcome in result.results}


def validate(frame: pl.DataFrame, rules: Sequence[Rule], *, subject: str, id_column: str,
             context_columns: Sequence[str] = ()) -> QualityReport:
    """Run ``rules`` over ``frame`` as one GX suite.

    Args:
        frame: the rows to check (derived columns already added).
        rules: the suite.
        subject: what is checked, for the summary line (``memory_items v12``).
        id_column: the column that names a row in the examples (``id``, ``resource_id``).
        context_columns: columns copied into each example from ``frame`` (e.g.
            ``content``), redacted when the report's metadata is built.
    """
    rt = runtime()
    # Only the columns the rules read, converted once: GX fingerprints the whole pandas
    # frame on every run, and hashing text as categoricals costs a third as much.
    # Offending rows come back as positions; the examples are read from ``frame``.
    needed = [c for c in dict.fromkeys(r.column for r in rules if r.column) if c in frame.columns]
    pandas_frame = frame.select(
        pl.col(c).cast(pl.Categorical) if frame.schema[c] == pl.String else pl.col(c) for c in needed
    ).to_pandas()
    # Pass/fail first (BOOLEAN_ONLY is the cheapest result format), then counts and the
    # first offending rows for the failed rules only: a clean table never pays for examples.
    outcomes = _run(rt, pandas_frame, rules, "BOOLEAN_ONLY")
    failed = [r for r in rules if not outcomes[r.name].success]
    if failed:
        outcomes.update(_run(rt, pandas_frame, failed, "SUMMARY"))
    findings: list[Finding] = []
    for rule in rules:
        outcome = outcomes[rule.name]
        config = outcome.expectation_config
        raw = outcome.result or {}
        severity = _FROM_GX.get(str(getattr(config.severity, "value", config.severity)), rule.severity)
        error = _error(outcome.exception_info)
        if error:
            examples, count = [{"error": error}], None
        elif outcome.success:
            examples, count = [], 0
        else:
            examples = _examples(raw, rule, id_column, frame, context_columns)
            count = raw.get("unexpected_count")
            if count is None and "observed_value" in raw:
                examples = examples or [{"observed_value": raw["observed_value"]}]
            count = None if count is None else int(count)
        findings.append(Finding(rule.name, bool(outcome.success), severity, count, examples, rule.description))
    return QualityReport.of(findings, rows=frame.height, subject=subject)
