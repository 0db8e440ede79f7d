"""Run all pending pipeline work in this process (``memory materialize``, ``memory run``).

The same jobs the sensors and schedules launch in the UI (``ingest_session``,
``extract_session``, ``materialize_items``, ``nightly`` …), executed in-process against
the data root's own Dagster instance, so every run shows up in ``make ui`` under its name.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime, timezone

import dagster as dg

from memory_assets.lib import erasure
from memory_assets.lib.ingest import intake
from memory_assets.lib.items import publish
from memory_assets.lib.extraction import quarantine
from memory_assets.cli import interrupts, recovery
from memory_assets.defs.scheduled_jobs import COVERS, JOBS, record_success, run_config, tick
from memory_assets.cli.instance import local_instance
from memory_assets.defs.partitions import (NIGHTS_START, batch_tags, nights, session_batches, sessions,
                                          sessions_per_run, with_new_sessions)
from retrieval import jobs, published
from retrieval.config import load_config
from retrieval.paths import DataRoot


@dataclass
class RunSummary:
    sessions: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)
    items_materialized: bool = False
    recovered: list[str] = field(default_factory=list)  # runs a crash left behind, failed and freed
    held: int | None = None  # the version a rollback holds published, if any
    jobs: list[str] = field(default_factory=list)  # jobs run on an agent's request


def pending_sessions(paths: DataRoot) -> tuple[list[str], list[str]]:
    """(sessions with unread inbox files, sessions only needing re-extraction)."""
    unread = sorted(intake.pending_files(paths))
    retry = set(quarantine.quarantined_sessions(paths))
    if paths.resources.exists():
        extracted = {p.stem for p in paths.extracted_facts.glob("*.parquet")} if paths.extracted_facts.exists() else set()
        retry |= {p.name for p in paths.resources.iterdir() if p.is_dir() and p.name not in extracted}
    return unread, sorted(retry - set(unread))


def items_stale(paths: DataRoot) -> str | None:
    """Why the published items are behind what is stored, or None: nothing published
    yet; feedback events waiting; facts or imports written after the published snapshot
    (a run that died between extraction and publish, an import whose run did not finish);
    or a staged version the last publish did not finish (a run killed while publishing)."""
    published_at = published.published_at(paths)
    if published_at is None:
        return "nothing published yet"
    if paths.events.exists() and any(paths.events.glob("*.json")):
        return "feedback events waiting"
    if paths.extracted_facts.exists() and any(f.stat().st_mtime > published_at
                                              for f in paths.extracted_facts.glob("*.parquet")):
        return "facts newer than the published items"
    if paths.imports.exists() and any(f.stat().st_mtime > published_at for f in paths.imports.glob("*.jsonl")):
        return "imports newer than the published items"
    staged, current = publish.staged(paths), publish.current(paths)
    if staged is not None and (current is None or current.version != staged.version) and publish.held(paths) is None:
        return "a staged version was never fully published"
    return None


# The CLI shows a progress bar; run logs stay in the instance for `make ui`.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


@functools.cache
def _code_location() -> tuple[tuple, tuple, tuple]:
    """The code location's assets, checks and jobs, loaded once per process: building them
    takes 1–2 s, and a ``materialize`` runs several jobs. Nothing in them depends on the data
    root or the config file; the resources that do are bound per run."""
    from memory_assets.definitions import defs

    loaded = defs()
    return (tuple(a for a in loaded.assets or [] if isinstance(a, dg.AssetsDefinition)),
            tuple(loaded.asset_checks or []), tuple(loaded.jobs or []))


def bound_definitions(data_root: str, extractor: str | None) -> tuple[list, dict]:
    """Every asset and check of the code location, and resources bound to this data root
    and the chosen extractor (benches and tests materialize selections of them)."""
    from memory_assets.defs.runtime import ExtractorResource, default_resources

    assets, checks, _ = _code_location()
    resources = default_resources(data_root)
    if extractor:
        resources["extractor"] = ExtractorResource(mode=extractor)
    return list(assets) + list(checks), resources


def _job(data_root: str, extractor: str | None, name: str) -> dg.JobDefinition:
    """The named job ``name`` (so the UI shows ``materialize_items``, not an ephemeral job),
    bound to this data root's resources and the chosen extractor; checks run with their
    assets, so a failed blocking check stops the run before publish."""
    assets, resources = bound_definitions(data_root, extractor)
    jobs = [j for j in _code_location()[2] if j.name == name]
    bound = dg.Definitions(assets=[a for a in assets if isinstance(a, dg.AssetsDefinition)],
                           asset_checks=[c for c in assets if not isinstance(c, dg.AssetsDefinition)],
                           jobs=jobs, resources=resources)
    return bound.resolve_job_def(name)


def _run_sessions(job: dg.JobDefinition, instance: dg.DagsterInstance, batch: list[str]) -> list[str]:
    """Run ``job`` over ``batch`` (one run: a range of ``sessions`` partitions); a batch
    that fails is run again one session at a time, so one bad session holds back no
    other. Returns the sessions that failed."""
    if len(batch) == 1:
        return [] if _run(job, instance, partition_key=batch[0], tags={}) else list(batch)
    if _run(job, instance, tags=batch_tags(batch)):
        return []
    return [s for s in batch if not _run(job, instance, partition_key=s, tags={})]


def _run(job: dg.JobDefinition, instance: dg.DagsterInstance, *, tags: dict[str, str], run_config: dict | None = None,
         partition_key: str | None = None) -> bool:
    """One run, to its end even through a Ctrl-C when the command defers it (``interrupts``);
    otherwise Dagster stops the op under way and fails the run, and the interrupt it swallows
    is raised here again: Ctrl-C stops the command, it does not go on to the next run."""
    result = interrupts.shielded(lambda: job.execute_in_process(
        instance=instance, partition_key=partition_key, raise_on_error=False, run_config={**QUIET, **(run_config or {})},
        tags={"memory/trigger": "cli", **recovery.launcher_tags(), **tags}))
    if not result.success and _interrupted(result):
        raise KeyboardInterrupt(f"run {result.run_id} of {job.name} was interrupted")
    return result.success


# What Dagster records as the error of a step a SIGINT stopped.
_INTERRUPTS = {"KeyboardInterrupt", "DagsterExecutionInterruptedError"}


def _interrupted(result: dg.ExecuteInProcessResult) -> bool:
    return any(event.is_step_failure and event.step_failure_data.error is not None
               and event.step_failure_data.error.cls_name in _INTERRUPTS for event in result.all_events)


def _step_name(job: str, batch: list[str]) -> str:
    """A step as ``memory materialize`` names it when Ctrl-C stops it."""
    if len(batch) <= 2:
        return f"{job} for {', '.join(batch)}"
    return f"{job} for {len(batch)} sessions ({batch[0]} … {batch[-1]})"


def _slot_wait() -> float:
    return float(os.environ.get("MEMORY_SLOT_WAIT_SECONDS", "600"))


def materialize_pending(paths: DataRoot, *, extractor: str | None = None, instance: dg.DagsterInstance | None = None,
                        progress: Callable[[str], None] | None = None, force_items: bool = False,
                        now: datetime | None = None, run_requested: bool = True,
                        build_items: bool = True) -> RunSummary:
    """Ingest unread transcripts, extract their facts, retry quarantine, rebuild items.

    First recovers from a crash (``recovery.recover``: dead runs failed, their slots
    freed). Items are rebuilt when a session was extracted, when ``force_items``, or when
    ``items_stale`` says the published items are behind (feedback waiting, facts newer
    than the items, an unfinished publish). Jobs agents requested (``request_run``) run
    after.

    Args:
        paths: the data root.
        extractor: ``offline`` or ``llm`` to override the configured choice.
        instance: a Dagster instance (tests pass ``instance_for_test``); default: the
            data root's own.
        progress: called with each session id as it starts.
        force_items: rebuild ``memory_items`` even when nothing changed.
        now: the clock for the items' lifecycle (default: the wall clock).
        run_requested: run the jobs agents requested.
        build_items: rebuild the items when due (off when a scheduled job that rebuilds
            them comes next: ``run_job``).
    """
    instance = instance or local_instance(paths)
    summary = RunSummary(recovered=recovery.recover(instance))
    unread, retry = pending_sessions(paths)
    known, new = with_new_sessions(instance.get_dynamic_partitions(sessions.name), unread + retry)
    if new:
        instance.add_dynamic_partitions(sessions.name, new)
    # Batches of `[pipeline] sessions_per_run` sessions: one run each, not one per session.
    for name, waiting in (("ingest_session", unread), ("extract_session", retry)):
        if not waiting:
            continue
        job = _job(str(paths.root), extractor, name)
        for batch in session_batches(known, waiting, sessions_per_run(load_config())):
            with interrupts.step(_step_name(name, batch)):
                if progress:
                    for session_id in batch:
                        progress(session_id)
                failed = _run_sessions(job, instance, batch)
                summary.sessions.extend(s for s in batch if s not in failed)
                summary.failed.extend(failed)
    summary.quarantined = quarantine.quarantined_sessions(paths)
    requests = jobs.pending_requests(paths) if run_requested else []
    # An agent's MemoryClient.erase is carried out now, by the erase job (which builds the items).
    erasing = run_requested and bool(erasure.pending(paths))
    due = summary.sessions or force_items or items_stale(paths) or any(r["job"] == "materialize" for r in requests)
    if build_items and due and not erasing:
        with interrupts.step("materialize_items (the items built and published)"):
            recovery.wait_for_pool(instance, _slot_wait())
            clock = {"ops": {"memory_items": {"config": {"now": now.isoformat() if now else ""}}}}
            summary.items_materialized = _run(_job(str(paths.root), extractor, "materialize_items"), instance,
                                              run_config=clock, tags={})
            if not summary.items_materialized:
                summary.failed.append("memory_items")
    if erasing:
        with interrupts.step("erase"):
            summary.items_materialized = run_erase(paths, now=now, extractor=extractor, instance=instance,
                                                   pending=False)
            (summary.jobs if summary.items_materialized else summary.failed).append("erase")
    for request in requests:
        with interrupts.step(f"{request['job']} (an agent's request)"):
            if request["job"] in JOBS and request["job"] not in summary.jobs:
                if run_job(paths, request["job"], now=now, extractor=extractor, instance=instance, pending=False):
                    summary.jobs.append(request["job"])
                else:
                    summary.failed.append(request["job"])
            jobs.mark_done(paths, request)
    summary.held = publish.held(paths)
    return summary


def run_job(paths: DataRoot, job: str, *, now: datetime | None = None, night: date | None = None,
            extractor: str | None = None, instance: dg.DagsterInstance | None = None, pending: bool = True) -> bool:
    """``memory run nightly|weekly|monthly``: the scheduled job, in-process, for one night.

    ``night`` replays that day's scheduled run: its ``nights`` partition, whose key is the
    clock (the schedule's tick that day). Otherwise the run is the partition of ``now``'s
    day, as of ``now`` (default: the wall clock). Pending sessions (unread inbox files,
    resources without facts, quarantine) are extracted first, as the nightly rule says; a
    success is recorded for the cron fallback.
    """
    if job not in JOBS:
        raise ValueError(f"unknown job {job!r}; expected one of {', '.join(JOBS)}")
    if night is not None and now is not None:
        raise ValueError("give the night to replay or the clock, not both")
    last = nights.get_last_partition_key()
    if night is not None and not nights.has_partition_key(night.isoformat()):
        raise ValueError(f"there is no night {night.isoformat()}: nights run from {NIGHTS_START} to {last}")
    clock = tick(job, night) if night is not None else now or datetime.now(timezone.utc)
    instance = instance or local_instance(paths)
    if pending:
        # Its items are built by the job itself, once.
        materialize_pending(paths, extractor=extractor, instance=instance, now=clock, run_requested=False,
                            build_items=False)
    recovery.wait_for_pool(instance, _slot_wait())
    # A replayed night reads its clock from the partition key; any other run is pinned to
    # ``clock`` and files under its day's night — or, for a clock past the last night there
    # is (a simulation of the future: tests), under the last one.
    key = min(clock.date().isoformat(), last or clock.date().isoformat())
    ok = _run(_job(str(paths.root), extractor, job), instance, run_config=run_config(job, None if night else clock),
              tags={"memory/job": job}, partition_key=key)
    if ok:
        for covered in COVERS[job]:
            record_success(paths, covered, clock)
    return ok


def run_erase(paths: DataRoot, *, now: datetime | None = None, extractor: str | None = None,
              instance: dg.DagsterInstance | None = None, pending: bool = True) -> bool:
    """``memory erase``: the ``erase`` job, in-process, for the requests not carried out yet
    (``lib/erasure.py``): the sources cleaned, the memory rebuilt and published without
    them, every kept version purged, the audit rows written. Pending sessions are taken in
    first (``pending``), so a transcript still in the inbox is erased as stored."""
    from memory_assets.defs.lifecycle.erasure import erase_run_config

    clock = now or datetime.now(timezone.utc)
    instance = instance or local_instance(paths)
    if pending:
        materialize_pending(paths, extractor=extractor, instance=instance, now=clock, run_requested=False,
                            build_items=False)
    recovery.wait_for_pool(instance, _slot_wait())
    last = nights.get_last_partition_key()
    key = min(clock.date().isoformat(), last or clock.date().isoformat())
    return _run(_job(str(paths.root), extractor, "erase"), instance, run_config=erase_run_config(clock),
                tags={"memory/job": "erase"}, partition_key=key)
