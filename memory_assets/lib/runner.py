"""Run all pending pipeline work in this process (``memory materialize``).

The same assets the sensors launch in the UI, executed in-process against the data
root's own Dagster instance, so every run shows up in ``make ui`` afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

import dagster as dg

from memory_assets.lib import inbox_scan, quarantine
from memory_assets.lib.job_runs import record_success
from memory_assets.lib.jobs import COVERS, JOBS, SELECTIONS, run_config
from memory_assets.lib.instance import local_instance
from memory_assets.lib.partitions import sessions
from retrieval.paths import DataRoot


@dataclass
class RunSummary:
    sessions: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)
    items_materialized: bool = False


def pending_sessions(paths: DataRoot) -> tuple[list[str], list[str]]:
    """(sessions with unread inbox files, sessions only needing re-extraction)."""
    unread = sorted(inbox_scan.pending_files(paths))
    retry = set(quarantine.quarantined_sessions(paths))
    if paths.resources.exists():
        extracted = {p.stem for p in paths.extracted_facts.glob("*.parquet")} if paths.extracted_facts.exists() else set()
        retry |= {p.name for p in paths.resources.iterdir() if p.is_dir() and p.name not in extracted}
    return unread, sorted(retry - set(unread))


# The CLI shows a progress bar; run logs stay in the instance for `make ui`.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def _definitions(data_root: str, extractor: str | None) -> tuple[list, dict]:
    from memory_assets.defs.resources import ExtractorResource, default_resources
    from memory_assets.definitions import defs

    loaded = defs()
    resources = default_resources(data_root)
    if extractor:
        resources["extractor"] = ExtractorResource(mode=extractor)
    assets = [a for a in loaded.assets or [] if isinstance(a, dg.AssetsDefinition)]
    # Checks run with their assets: a failed blocking check stops the run before publish.
    assets += list(loaded.asset_checks or [])
    return assets, resources


def materialize_pending(paths: DataRoot, *, extractor: str | None = None, instance: dg.DagsterInstance | None = None,
                        progress: Callable[[str], None] | None = None, force_items: bool = False,
                        now: datetime | None = None) -> RunSummary:
    """Ingest unread transcripts, extract their facts, retry quarantine, rebuild items.

    Args:
        paths: the data root.
        extractor: ``offline`` or ``llm`` to override the auto choice.
        instance: a Dagster instance (tests pass ``instance_for_test``); default: the
            data root's own.
        progress: called with each session id as it starts.
        force_items: rebuild ``memory_items`` even when no session changed.
        now: the clock for the items' lifecycle (default: the wall clock).
    """
    instance = instance or local_instance(paths)
    assets, resources = _definitions(str(paths.root), extractor)
    unread, retry = pending_sessions(paths)
    known = set(instance.get_dynamic_partitions(sessions.name))
    new = [s for s in unread + retry if s not in known]
    if new:
        instance.add_dynamic_partitions(sessions.name, new)
    summary = RunSummary()
    for session_id in unread + retry:
        if progress:
            progress(session_id)
        selection = ["resources", "extracted_facts"] if session_id in unread else ["extracted_facts"]
        result = dg.materialize(assets, selection=selection, partition_key=session_id, instance=instance,
                                resources=resources, raise_on_error=False, tags={"memory/trigger": "cli"},
                                run_config=QUIET)
        (summary.sessions if result.success else summary.failed).append(session_id)
    summary.quarantined = quarantine.quarantined_sessions(paths)
    if summary.sessions or force_items or not paths.published_items.exists():
        clock = {"ops": {"memory_items": {"config": {"now": now.isoformat() if now else ""}}}}
        result = dg.materialize(assets, selection=["memory_items", "published_items"], instance=instance, resources=resources,
                                raise_on_error=False, tags={"memory/trigger": "cli"}, run_config={**QUIET, **clock})
        summary.items_materialized = result.success
        if not result.success:
            summary.failed.append("memory_items")
    return summary


def run_job(paths: DataRoot, job: str, *, now: datetime | None = None, extractor: str | None = None,
            instance: dg.DagsterInstance | None = None) -> bool:
    """``memory run nightly|weekly|monthly``: the scheduled job, in-process, as of ``now``.

    Pending sessions (unread inbox files, resources without facts, quarantine) are
    extracted first, as the nightly rule says; a success is recorded for the cron fallback.
    """
    if job not in JOBS:
        raise ValueError(f"unknown job {job!r}; expected one of {', '.join(JOBS)}")
    instance = instance or local_instance(paths)
    materialize_pending(paths, extractor=extractor, instance=instance, now=now)
    assets, resources = _definitions(str(paths.root), extractor)
    config = run_config(job, now)
    result = dg.materialize(assets, selection=SELECTIONS[job], instance=instance, resources=resources,
                            raise_on_error=False, run_config={**QUIET, **config},
                            tags={"memory/trigger": "cli", "memory/job": job})
    if result.success:
        for covered in COVERS[job]:
            record_success(paths, covered, now or datetime.now(timezone.utc))
    return result.success
