"""Write–audit–publish for the items, over a data root: build and stage a version, audit
it, publish it.

``memory_items``, its blocking checks and ``published_items`` are thin Dagster shells
over these three calls, and the evals' in-process builds make the same calls in the same
order, so a version reaches an agent one way: staged, audited, then published.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pathlib import Path

import numpy as np
import polars as pl

from memory_assets.lib import warehouse
from memory_assets.lib.erasure.targets import manifest_file as erasure_manifest
from memory_assets.lib.items import feedback, graph as graphs, imports, publish
from memory_assets.lib.items.rebuild import Rebuilt, rebuild_items
from memory_assets.lib.lifecycle import sweeps
from memory_assets.lib.quality import ScanLedger, audit, embeddings_report, graph_report, items_report, schema_report
from memory_assets.lib.quality.embeddings_suite import expected_model
from memory_assets.lib.quality.read_index_suite import read_index_report
from memory_assets.lib.quality.suite_report import QualityReport
from retrieval.config import MemoryConfig
from memory_assets.lib.items.consolidation import PREVIOUS_COLUMNS, TextEmbedder, VectorLookup, lookup_in
from retrieval.files import stamp
from retrieval.paths import DataRoot, location
from retrieval.read_index import local_copy
from retrieval.schema import ITEM_SCHEMA
from retrieval.store import ItemStore

STAGED_CHECKS = ("items_schema", "items_valid", "items_embeddings", "items_read_index", "graph_valid")


class PublishRefused(RuntimeError):
    """Nothing staged, or the staged version did not pass its blocking checks (its recorded
    ``verdict``, or None when it was never audited)."""

    def __init__(self, message: str, verdict: dict | None = None):
        super().__init__(message)
        self.verdict = verdict


@dataclass
class StagedItems:
    """A new items version, written and staged for its checks."""

    built: Rebuilt
    written: publish.ItemsVersion
    graph: graphs.Graph
    facts_in: int
    event_errors: list[str]  # event files that could not be read, each named with its line
    sweeps_applied: list[str]
    imports: imports.Tally | None = None  # what the files under imports/ brought (None: there are none)


@dataclass
class Published:
    """What ``publish_staged`` did: the staged version made live, or held back by a rollback."""

    staged: int
    previous: int | None  # the version live before
    rows: int
    held_at: int | None = None  # the version a rollback holds agents on; ``staged`` is not live
    event_files_compacted: int = 0
    sweeps_settled: int = 0


def _merge_log(merges, now: datetime) -> pl.DataFrame:
    return pl.DataFrame(
        [{"kept_id": m.kept_id, "merged_id": m.merged_id, "similarity": m.similarity,
          "kept_content": m.kept_content, "merged_content": m.merged_content, "merged_at": now} for m in merges],
        schema={"kept_id": pl.String, "merged_id": pl.String, "similarity": pl.Float64,
                "kept_content": pl.String, "merged_content": pl.String, "merged_at": pl.Datetime("us", "UTC")},
    )


def stage_items(paths: DataRoot, model: TextEmbedder, config: MemoryConfig, now: datetime) -> StagedItems:
    """Rebuild the items from every fact, the imports, the agents' feedback and the pending
    sweeps as of ``now``, write them as a new Parquet and LanceDB version, and stage it."""
    store = ItemStore(paths)
    facts, previous = warehouse.read_facts(paths), store.items(PREVIOUS_COLUMNS)
    files = imports.read_imports(paths)
    adoption = imports.adopt(files, facts, previous, config, model.model_id) if files else None
    if adoption is not None and adoption.facts.height:
        facts = pl.concat([facts, adoption.facts], how="diagonal_relaxed")
    batch = feedback.read_events(paths)
    pending = sweeps.pending(paths)

    def known_vectors() -> VectorLookup:
        adopted = adoption.vectors if adoption else {}

        def lookup(hashes: pl.Series) -> tuple[np.ndarray | None, np.ndarray]:
            # The published table's vector, else an imported one.
            matrix, found = store.vectors_for(hashes)
            if adopted and not found.all():
                extra, more = lookup_in(adopted)(hashes)
                more &= ~found
                if more.any():
                    matrix = np.zeros_like(extra) if matrix is None else matrix
                    matrix[more], found = extra[more], found | more
            return matrix, found
        return lookup

    facts_in = facts.height
    built = rebuild_items(facts, previous, batch.events, pending, known_vectors, model,
                          lambda: warehouse.read_resources(paths, conform=False), config, now,
                          adopted=adoption.items if adoption else None)
    del facts, previous  # the build holds what it needs of them (a million facts are gigabytes as read)
    # An erasure under way (its step 1 wrote the manifest): the table is written whole, so
    # the erased rows leave LanceDB's live files instead of being marked deleted in them.
    erasing = warehouse.exists(erasure_manifest(paths))
    written = publish.write_items(paths, built.items, built.vectors, now, search_text=built.search_text,
                                  rewrite=erasing)
    graph = graphs.build_graph(built.items, built.vectors, batch.events, config, now)
    entities, edges = publish.write_graph(paths, graph.entities, graph.edges, now)
    written = publish.ItemsVersion(**{**written.__dict__, "event_files": [f.name for f in batch.files],
                                      "sweep_files": [s.file for s in pending], "entities": entities, "edges": edges})
    if graph.merges:  # every alias merge is logged
        warehouse.write_frame(paths.graph_dir / "merges" / f"aliases-{stamp(now)}.parquet",
                              pl.DataFrame(graph.merges).with_columns(merged_at=pl.lit(now)))
    warehouse.crash_point("items_write")
    publish.stage(paths, written)
    if built.consolidated.merges:
        warehouse.write_frame(paths.merges / f"merges-{stamp(now)}.parquet",
                              _merge_log(built.consolidated.merges, now))
    publish.write_report(paths, built.report.metadata())
    if adoption is not None:
        imports.write_ledger(paths, adoption, written.version, now)
    return StagedItems(built, written, graph, facts_in, list(batch.errors), [s.file for s in pending],
                       adoption.total if adoption else None)


def audit_staged(paths: DataRoot, config: MemoryConfig) -> tuple[publish.ItemsVersion, dict[str, QualityReport]] | None:
    """Run the blocking checks on the staged version and record the verdict
    (``audit.passed`` then says whether it may be published); None when nothing is staged."""
    written = publish.staged(paths)
    if written is None:
        return None
    subject = f"memory_items v{written.version} (staged)"
    schema = schema_report({written.parquet.name: dict(pl.read_parquet_schema(str(written.parquet)))}, ITEM_SCHEMA,
                           subject=f"{subject} schema")
    ledger = ScanLedger.load(audit.quality_dir(paths))
    frame = pl.read_parquet(str(written.parquet))
    resource_ids = warehouse.resource_ids(paths)
    if imports.import_files(paths):  # imported items cite their own memory's turns, or their file's lines
        resource_ids = pl.concat([resource_ids, imports.cited_sources(paths)]).unique()
    items = items_report(frame, config, resource_ids=resource_ids, ledger=ledger, subject=subject)
    ledger.save()
    embeddings = embeddings_report(publish.staged_table(paths, written), config, subject=subject)
    index = read_index_report(_local_index(paths, written), frame, expected_model(config)[0],
                              subject=f"{subject} read index")
    reports = {"items_schema": schema, "items_valid": items, "items_embeddings": embeddings, "items_read_index": index}
    if written.entities and written.edges:
        reports["graph_valid"] = graph_report(pl.read_parquet(str(written.entities)), pl.read_parquet(str(written.edges)),
                                              frame, resource_ids, subject=f"{subject} graph")
    audit.record(paths, written.version, reports)
    return written, reports


def _local_index(paths: DataRoot, written: publish.ItemsVersion) -> Path | None:
    """The staged version's read index as a local folder (fetched from an object store, as
    a reader will), or None when it has none or it cannot be read."""
    if not written.index:
        return None
    try:
        return local_copy(location(written.index), paths.local / "read-indexes")
    except (OSError, ValueError, KeyError):
        return None


def publish_staged(paths: DataRoot, now: datetime) -> Published:
    """Make the staged, audited version the one agents read — unless a rollback holds an
    earlier one — then move the event files it folded into the event log (stamped ``now``)
    and settle its sweeps."""
    written = publish.staged(paths)
    if written is None:
        raise PublishRefused("nothing staged: materialize memory_items first")
    if not audit.passed(paths, written.version):  # e.g. launched alone from the UI
        raise PublishRefused(f"staged version {written.version} has not passed its blocking checks",
                             audit.verdict(paths, written.version))
    previous = publish.current(paths)
    before = previous.version if previous else None
    hold = publish.held(paths)
    if hold is not None:
        return Published(written.version, before, written.rows, held_at=hold)
    publish.publish(paths, written)
    # Only once the new version is live do the folded event files move into the event log.
    batch = feedback.read_events(paths)
    batch.files = [f for f in batch.files if f.name in set(written.event_files)]
    compacted = feedback.compact(paths, batch, stamp(now))
    settled = sweeps.settle(paths, written.sweep_files)
    return Published(written.version, before, written.rows, event_files_compacted=compacted, sweeps_settled=settled)
