"""The audit trail of write–audit–publish: which staged item versions passed their blocking checks.

The ``memory_items`` checks record their verdict per staged version here, so anything
that publishes — ``published_items`` in the same run, or on its own from the UI — can
ask whether the version it is about to publish was audited and passed.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from memory_assets.lib.quality.suite_report import QualityReport
from retrieval.paths import DataRoot
from memory_assets.lib import warehouse

# Enough history for any rollback target a person would pick.
KEEP_VERSIONS = 100


def quality_dir(paths: DataRoot) -> Path:
    """Where the checks keep their state (audit trail, credential-scan ledger)."""
    return paths.warehouse / "quality"


def _file(paths: DataRoot) -> Path:
    return quality_dir(paths) / "items_audit.json"


def _read(paths: DataRoot) -> dict[str, dict]:
    return warehouse.read_json(_file(paths), {})


def _write(paths: DataRoot, entries: dict[str, dict]) -> None:
    kept = dict(sorted(entries.items(), key=lambda kv: int(kv[0]))[-KEEP_VERSIONS:])
    warehouse.write_json(_file(paths), kept, indent=1)


def record(paths: DataRoot, version: int, reports: dict[str, QualityReport]) -> None:
    """Store each check's verdict on item version ``version`` (atomic rename)."""
    entries = _read(paths)
    entries[str(version)] = {
        "checked_at": datetime.now(timezone.utc).isoformat(),
        "checks": {name: {"passed": r.passed, "severity": r.severity, "summary": r.summary()}
                   for name, r in reports.items()},
    }
    _write(paths, entries)


def verdict(paths: DataRoot, version: int) -> dict | None:
    """The recorded checks of ``version``, or None if it was never audited."""
    return _read(paths).get(str(version))


def passed(paths: DataRoot, version: int) -> bool:
    """Whether ``version`` was audited and no check failed with ERROR severity (WARN is allowed)."""
    entry = verdict(paths, version)
    if entry is None or not entry["checks"]:
        return False
    return all(c["passed"] or c["severity"] == "WARN" for c in entry["checks"].values())


def carry(paths: DataRoot, from_version: int, to_version: int, reason: str) -> None:
    """Record ``to_version`` with ``from_version``'s verdict: the same rows re-written
    (compaction, re-indexing), so the audit it passed still holds."""
    entry = verdict(paths, from_version)
    if entry is None:
        return
    entries = _read(paths)
    entries[str(to_version)] = {**entry, "carried_from": from_version, "reason": reason}
    _write(paths, entries)
