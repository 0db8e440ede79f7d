"""Where everything lives under a data root (DESIGN.md, "Layout").

Agents append to ``inbox/``, ``events/`` (and ``corrections/``), ``requests/`` and ``imports/``;
only pipeline runs write the rest.

A data root is a local folder (the embedded default) or an object-store URI
(``s3://bucket/prefix``, ``gs://``, ``az://``), reached through fsspec: a remote root is a
``upath.UPath``, which has the ``pathlib`` methods the code uses (``/``, ``exists``,
``glob``, ``read_bytes`` …) over the store. Credentials come from the standard environment
(``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL`` …), never from here. What must sit on a disk
(the Dagster instance, DuckDB's scratch file, SQLite) lives under ``local`` instead.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_DATA_ROOT = "data"


def is_uri(location: str | os.PathLike[str] | Any) -> bool:
    """Whether ``location`` names an object store (``s3://…``), not a local path."""
    text = str(location)
    return "://" in text and not text.startswith("file://")


def location(value: str | os.PathLike[str] | Any) -> Path:
    """A stored path string back as a path: a ``UPath`` for a URI (``Path("s3://b/k")``
    would fold it into a local ``s3:/b/k``), a ``Path`` otherwise."""
    if not isinstance(value, (str, os.PathLike)):
        return value  # already a UPath
    text = os.fspath(value) if not isinstance(value, str) else value
    if is_uri(text):
        from upath import UPath

        return UPath(text)  # type: ignore[return-value]
    return Path(text.removeprefix("file://"))


@dataclass(frozen=True)
class DataRoot:
    root: Path

    @classmethod
    def resolve(cls, root: str | os.PathLike[str] | None = None) -> "DataRoot":
        chosen = root or os.environ.get("MEMORY_DATA_ROOT") or DEFAULT_DATA_ROOT
        if is_uri(chosen):
            return cls(location(str(chosen).rstrip("/")))
        return cls(Path(str(chosen).removeprefix("file://")).expanduser().absolute())

    @property
    def is_local(self) -> bool:
        return isinstance(self.root, Path)

    @property
    def uri(self) -> str:
        """The root as a string (a local path, or ``s3://bucket/prefix``)."""
        return str(self.root)

    @property
    def local(self) -> Path:
        """Where this root's disk-only state lives: the root itself when it is a folder;
        for an object-store root, ``MEMORY_LOCAL_STATE`` or a folder of this machine's
        cache named by the root's URI."""
        if self.is_local:
            return self.root
        chosen = os.environ.get("MEMORY_LOCAL_STATE")
        if chosen:
            return Path(chosen).expanduser().absolute()
        digest = hashlib.sha256(self.uri.encode()).hexdigest()[:16]
        return Path("~/.cache/agent-memory/roots").expanduser() / digest

    def relative(self, path: Any) -> str:
        """``path`` relative to the root, for records that must survive the root moving."""
        text, base = str(path), self.uri.rstrip("/") + "/"
        return text[len(base):] if text.startswith(base) else text

    def at(self, relative: str) -> Path:
        """A path recorded by ``relative`` (or an absolute one, kept as it is)."""
        if is_uri(relative) or relative.startswith("/"):
            return location(relative)
        return self.root / relative

    # agent-appended
    @property
    def inbox(self) -> Path:
        return self.root / "inbox"

    @property
    def events(self) -> Path:
        return self.root / "events"

    @property
    def corrections(self) -> Path:
        """A copy of each correction in ``events/`` (forget, update, pin…) not published
        yet, which readers lay over the published rows (``retrieval.corrections``)."""
        return self.root / "corrections"

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
    def graph_dir(self) -> Path:
        """The entities and edges (``lib/items/graph.py``), versioned with the items."""
        return self.warehouse / "graph"

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
        """In-run analytics (a scratch file: DuckDB needs a disk)."""
        return self.warehouse / "analytics.duckdb" if self.is_local else self.local / "analytics.duckdb"

    @property
    def dagster_home(self) -> Path:
        return self.local / "dagster"

    def session_file(self, base: Path, session_id: str, suffix: str = ".parquet") -> Path:
        return base / f"{session_id}{suffix}"
