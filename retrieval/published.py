"""The publish pointer: which version of the items agents read (DESIGN.md, "Scale").

Publishing never renames: a run writes the version's files first (the LanceDB table
version, the items' Parquet file, the graph's two files), then one small object,
``warehouse/memory_items/published.json``, naming them with a generation number. That
object is written whole by one PUT (conditional on the store holding the generation the
publisher read, where the store supports it) or one rename on a disk, so a reader sees
the old version or the new one, and a publisher killed before it leaves the previous
version published. Readers read the pointer first and then only the files it names.

Paths in the pointer are relative to the data root, so a root copied elsewhere (a local
folder synced to a bucket) still reads.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from retrieval.paths import DataRoot

POINTER = "published.json"
# The LanceDB tables a run publishes. The items table is read at the pointer's version; a
# side table (summaries, insights) at its ``published`` tag, as were the items of a root
# published before the pointer.
ITEMS_TABLE = "items"
SUMMARIES_TABLE = "summaries"
INSIGHTS_TABLE = "insights"  # one sentence per archive cluster (the weekly archive_clusters)
PUBLISHED_TAG = "published"
# Roots published before the pointer: the snapshot copied next to it and the LanceDB tag.
LEGACY_SNAPSHOT = "items.parquet"
# A side table's published version is also written as one Parquet file (its vectors
# included) named by a pointer of its own: what ``inject`` reads, without LanceDB.
SIDE_DIR = "side_tables"


@dataclass(frozen=True)
class Pointer:
    generation: int
    version: int  # the LanceDB items table version
    items: str  # the items' Parquet file, relative to the data root
    rows: int = 0
    entities: str | None = None
    edges: str | None = None
    published_at: str = ""
    # The version's in-process read indexes (``retrieval.read_index``), relative to the root.
    index: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> "Pointer":
        return cls(**{k: raw.get(k) for k in cls.__dataclass_fields__ if k in raw})

    def items_path(self, paths: DataRoot) -> Path:
        return paths.at(self.items)

    def index_path(self, paths: DataRoot) -> Path | None:
        return paths.at(self.index) if self.index else None

    def graph_paths(self, paths: DataRoot) -> tuple[Path, Path] | None:
        if not (self.entities and self.edges):
            return None
        return paths.at(self.entities), paths.at(self.edges)


def pointer_path(paths: DataRoot) -> Path:
    return paths.items_dir / POINTER


def read(paths: DataRoot) -> Pointer | None:
    """The published version, or None before the first publish."""
    try:
        raw = pointer_path(paths).read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return _legacy(paths)
    return Pointer.from_json(json.loads(raw))


def _legacy(paths: DataRoot) -> Pointer | None:
    """A root published before the pointer existed: its copied snapshot and LanceDB tag."""
    snapshot = paths.items_dir / LEGACY_SNAPSHOT
    if not snapshot.exists():
        return None
    import lancedb

    try:
        table = lancedb.connect(str(paths.lancedb)).open_table(ITEMS_TABLE)
        version = int(table.tags.list()[PUBLISHED_TAG]["version"])
    except Exception:  # no table or no tag: nothing was published
        return None
    graph = paths.graph_dir
    entities, edges = graph / "entities.parquet", graph / "edges.parquet"
    has_graph = entities.exists() and edges.exists()
    return Pointer(generation=0, version=version, items=paths.relative(snapshot),
                   entities=paths.relative(entities) if has_graph else None,
                   edges=paths.relative(edges) if has_graph else None)


def side_pointer_path(paths: DataRoot, name: str) -> Path:
    return paths.warehouse / SIDE_DIR / f"{name}.json"


def side_file(paths: DataRoot, name: str) -> Path | None:
    """The Parquet copy of side table ``name`` as last published, or None (never published,
    published before the copies existed, or dropped)."""
    try:
        raw = json.loads(side_pointer_path(paths, name).read_bytes())
    except (FileNotFoundError, NotADirectoryError):
        return None
    return paths.at(raw["file"])


def items_file(paths: DataRoot) -> Path | None:
    """The published items' Parquet file, or None before the first publish."""
    pointer = read(paths)
    return pointer.items_path(paths) if pointer else None


def graph_files(paths: DataRoot) -> tuple[Path, Path] | None:
    """The published version's entities and edges files, or None when it has no graph."""
    pointer = read(paths)
    return pointer.graph_paths(paths) if pointer else None


def published_at(paths: DataRoot) -> float | None:
    """When the pointer was last written (its file's modification time), None before
    the first publish: stored work newer than this is not published yet."""
    try:
        return pointer_path(paths).stat().st_mtime
    except (FileNotFoundError, NotADirectoryError):
        snapshot = paths.items_dir / LEGACY_SNAPSHOT
        return snapshot.stat().st_mtime if snapshot.exists() else None


class PointerCache:
    """The pointer as a reader keeps it: read again at most every ``seconds`` on an object
    store (a GET per search would cost a round trip), on every call from a disk (a stat)."""

    def __init__(self, paths: DataRoot, seconds: float = 1.0):
        import threading

        self.paths, self.seconds = paths, seconds
        self._read_at = float("-inf")
        self._key: tuple | None = None
        self._pointer: Pointer | None = None
        self._lock = threading.Lock()

    def get(self) -> Pointer | None:
        import time

        now = time.monotonic()
        key: tuple | None = None
        if self.paths.is_local:
            try:
                stat = pointer_path(self.paths).stat()
                key = (stat.st_mtime_ns, stat.st_size, stat.st_ino)  # a rename changes the inode
            except FileNotFoundError:
                key = None
        if key is not None:
            if key != self._key:
                with self._lock:
                    self._pointer, self._key = read(self.paths), key
            return self._pointer
        # An object store, or a root with no pointer file (nothing published, or published
        # before the pointer): read again at most every ``seconds``.
        if self._key is not None or now - self._read_at >= self.seconds:
            with self._lock:
                self._pointer, self._read_at, self._key = read(self.paths), now, None
        return self._pointer
