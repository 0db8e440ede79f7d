"""Where everything lives under a data root (DESIGN.md, "Layout").

Agents append to ``inbox/``, ``events/``, ``requests/`` and ``imports/``; only pipeline runs write
the rest.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_DATA_ROOT = "data"


@dataclass(frozen=True)
class DataRoot:
    root: Path

    @classmethod
    def resolve(cls, root: str | os.PathLike[str] | None = None) -> "DataRoot":
        chosen = root or os.environ.get("MEMORY_DATA_ROOT") or DEFAULT_DATA_ROOT
        if "://" in str(chosen) and not str(chosen).startswith("file://"):
            # Path("s3://b/x") would quietly become a local folder named "s3:".
            raise ValueError(f"data root {chosen}: object storage is not supported as a data root yet; "
                             "use a local path (the pipeline's files go through memory_assets/lib/warehouse.py, "
                             "which takes URIs, but LanceDB publishing and the inbox still need a disk)")
        return cls(Path(str(chosen).removeprefix("file://")).expanduser().absolute())

    # agent-appended
    @property
    def inbox(self) -> Path:
        return self.root / "inbox"

    @property
    def events(self) -> Path:
        return self.root / "events"

    @property
    def requests(self) -> Path:
        """Run requests an agent appends (``MemoryClient.request_run``), one file each."""
        return self.root / "requests"

    @property
    def imports(self) -> Path:
        """Memories brought in by ``memory import`` (an export of another data root, or
        flat-file memories), one validated, redacted JSONL file each; the ``memory_items``
        build adopts them. Beside ``inbox/``, not in it: every folder of ``inbox/`` is a
        session."""
        return self.root / "imports"

    # pipeline-written
    @property
    def warehouse(self) -> Path:
        return self.root / "warehouse"

    @property
    def resources(self) -> Path:
        return self.warehouse / "resources"

    @property
    def ingest_ledger(self) -> Path:
        return self.warehouse / "ingest_ledger"

    @property
    def ingest_errors(self) -> Path:
        return self.warehouse / "ingest_errors"

    @property
    def extracted_facts(self) -> Path:
        return self.warehouse / "extracted_facts"

    @property
    def quarantine(self) -> Path:
        return self.warehouse / "quarantine"

    @property
    def rejections(self) -> Path:
        return self.warehouse / "rejections"

    @property
    def items_dir(self) -> Path:
        return self.warehouse / "memory_items"

    @property
    def published_items(self) -> Path:
        """The Parquet snapshot the agent reads; swapped in by atomic rename."""
        return self.items_dir / "items.parquet"

    @property
    def graph_dir(self) -> Path:
        """The entities and edges (``lib/items/graph.py``), versioned with the items."""
        return self.warehouse / "graph"

    @property
    def published_entities(self) -> Path:
        """The entities of the published items version (swapped in with them)."""
        return self.graph_dir / "entities.parquet"

    @property
    def published_edges(self) -> Path:
        """The edges of the published items version (swapped in with them)."""
        return self.graph_dir / "edges.parquet"

    @property
    def import_ledger(self) -> Path:
        """What the last items build did with each file under ``imports/`` (one JSON each:
        adopted, duplicates, rejected …), for ``memory import`` to report."""
        return self.warehouse / "imports"

    @property
    def merges(self) -> Path:
        return self.warehouse / "merges"

    @property
    def lifecycle(self) -> Path:
        return self.warehouse / "lifecycle"

    @property
    def lessons(self) -> Path:
        """Lessons from corrections, published by the nightly job (a JSON list of strings)."""
        return self.lifecycle / "lessons.json"

    @property
    def triggers(self) -> Path:
        """Forward triggers (trigger_date, message, item_ids), published by the nightly job."""
        return self.lifecycle / "triggers.parquet"

    @property
    def sweeps(self) -> Path:
        """Weekly and monthly sweeps waiting for ``memory_items`` (applied ones move to
        ``applied/`` once published)."""
        return self.lifecycle / "sweeps"

    @property
    def job_runs(self) -> Path:
        """job name → last successful run (ISO time), written by each scheduled job."""
        return self.lifecycle / "job_runs.json"

    @property
    def memory_md(self) -> Path:
        """Promoted memories, for an agent's system prompt (written by the nightly job)."""
        return self.root / "MEMORY.md"

    @property
    def summaries(self) -> Path:
        """One markdown summary per category; old versions under ``archive/``."""
        return self.root / "summaries"

    @property
    def health(self) -> Path:
        return self.root / "health"

    @property
    def archive(self) -> Path:
        """Purged, archived and cold items, kept forever (never deleted)."""
        return self.warehouse / "archive"

    @property
    def clusters(self) -> Path:
        return self.warehouse / "archive_clusters.parquet"

    @property
    def extraction_runs(self) -> Path:
        return self.warehouse / "extraction_runs"

    @property
    def erasure_log(self) -> Path:
        """Who asked to erase what, when and why, with no content (``memory erase``): one
        Parquet part per erasure, and the erasure in progress (``pending.json``, ids only)."""
        return self.warehouse / "erasure_log"

    @property
    def settings(self) -> Path:
        """What the operator sets and agents only read (``disabled.json``: the namespaces
        whose memory is off, ``memory disable``)."""
        return self.root / "settings"

    @property
    def lancedb(self) -> Path:
        return self.root / "lancedb"

    @property
    def duckdb(self) -> Path:
        return self.warehouse / "analytics.duckdb"

    @property
    def dagster_home(self) -> Path:
        return self.root / "dagster"

    def session_file(self, base: Path, session_id: str, suffix: str = ".parquet") -> Path:
        return base / f"{session_id}{suffix}"
