"""What a quality suite says about a frame: which expectations failed, how badly, on which rows.

A ``QualityReport`` is plain data; ``metadata()`` is what a Dagster asset check shows in
the UI. Every example value goes through ``retrieval.credentials.redact`` first: a check
must never write a secret into Dagster's event log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from retrieval.credentials import redact

Severity = Literal["ERROR", "WARN"]

# Examples per failed expectation in the check metadata: enough to find the rows.
MAX_EXAMPLES = 5
# Longer example text (an item's content) is cut to this many characters.
PREVIEW_CHARS = 160


def safe_value(value: Any) -> Any:
    """A JSON-friendly, credential-free copy of one example value."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return value if value == value else "NaN"
    if isinstance(value, str):
        clean = redact(value)
        return clean if len(clean) <= PREVIEW_CHARS else clean[:PREVIEW_CHARS] + "…"
    if isinstance(value, (list, tuple)):
        return [safe_value(v) for v in value[:MAX_EXAMPLES]]
    if isinstance(value, dict):
        return {str(k): safe_value(v) for k, v in value.items()}
    if hasattr(value, "item"):  # numpy scalars
        return safe_value(value.item())
    return safe_value(str(value))


@dataclass(frozen=True)
class Finding:
    """One expectation's outcome.

    Args:
        expectation: the rule's name, e.g. ``importance_in_range``.
        success: whether every row met it.
        severity: ``ERROR`` blocks publishing; ``WARN`` is shown but does not.
        unexpected_count: rows that broke it (None for a table-level rule that errored).
        examples: up to ``MAX_EXAMPLES`` offending rows or ids, already redacted.
        description: what the rule protects, in the domain's words.
    """

    expectation: str
    success: bool
    severity: Severity
    unexpected_count: int | None = 0
    examples: list[dict[str, Any]] = field(default_factory=list)
    description: str = ""


@dataclass(frozen=True)
class QualityReport:
    """The outcome of one suite over one frame (or several reports combined)."""

    passed: bool
    severity: Severity
    findings: list[Finding]
    rows: int = 0
    subject: str = ""

    @classmethod
    def of(cls, findings: list[Finding], *, rows: int, subject: str) -> "QualityReport":
        failed = [f for f in findings if not f.success]
        severity: Severity = "ERROR" if any(f.severity == "ERROR" for f in failed) or not failed else "WARN"
        return cls(passed=not failed, severity=severity, findings=findings, rows=rows, subject=subject)

    @classmethod
    def combine(cls, *reports: "QualityReport", subject: str = "") -> "QualityReport":
        """One report over several frames (e.g. vectors and their index)."""
        findings = [f for r in reports for f in r.findings]
        rows = max((r.rows for r in reports), default=0)
        return cls.of(findings, rows=rows, subject=subject or " + ".join(r.subject for r in reports if r.subject))

    @property
    def failed(self) -> list[Finding]:
        return [f for f in self.findings if not f.success]

    def summary(self) -> str:
        """One line for the UI: what failed and on how many rows."""
        if self.passed:
            return f"{self.subject}: all {len(self.findings)} expectations met on {self.rows:,} rows"
        parts = [f"{f.expectation} ({'?' if f.unexpected_count is None else f'{f.unexpected_count:,}'} rows, {f.severity})"
                 for f in self.failed]
        return f"{self.subject}: {len(parts)} of {len(self.findings)} expectations failed: {', '.join(parts)}"

    def metadata(self) -> dict[str, Any]:
        """Check metadata: counts, failing counts per expectation, and redacted examples."""
        out: dict[str, Any] = {
            "rows": self.rows,
            "expectations": len(self.findings),
            "failed_expectations": len(self.failed),
            "summary": self.summary(),
        }
        if self.failed:
            out["failing_counts"] = {f.expectation: f.unexpected_count for f in self.failed}
        for f in self.failed:
            out[f"failed: {f.expectation}"] = {
                "severity": f.severity,
                "unexpected_count": f.unexpected_count,
                "protects": f.description,
                "examples": [safe_value(e) for e in f.examples[:MAX_EXAMPLES]],
            }
        return out
