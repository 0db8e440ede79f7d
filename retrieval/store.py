"""The read side of the published stores. Never writes: only pipeline runs do.

The agent sees what the publish pointer (``retrieval.published``) names: the LanceDB
``items`` table at its version and that version's Parquet file, the pointer moved only
after a run's checks passed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from retrieval import published
from retrieval.corrections import Corrections
from retrieval.ids import ShortIds
from retrieval.paths import DataRoot
from retrieval.published import ITEMS_TABLE, PUBLISHED_TAG, SUMMARIES_TABLE
from retrieval.schema import EDGE_SCHEMA, ENTITY_SCHEMA, ITEM_SCHEMA
from retrieval.spans import spanned



class ItemStore:
    """Published memory items, as the agent may read them."""

    class DoesNotExist(LookupError):
        """Nothing has been published under this data root yet."""

    def __init__(self, paths: DataRoot):
        self.paths = paths

    def table(self, name: str = ITEMS_TABLE, pointer: published.Pointer | None = None) -> Any | None:
        """A LanceDB table at its published version, or None before its first publish:
        the items table at the pointer's version (``pointer``: one already read), a side
        table (summaries, insights) at its ``published`` tag."""
        import lancedb

        if name == ITEMS_TABLE:
            pointer = pointer or published.read(self.paths)
            if pointer is None:
                return None
        elif self.paths.is_local and not self.paths.lancedb.exists():
            return None
        db = lancedb.connect(str(self.paths.lancedb))
        if name not in db.list_tables().tables:
            return None
        table = db.open_table(name)
        if pointer is not None:
            table.checkout(pointer.version)
            return table
        if PUBLISHED_TAG not in table.tags.list():
            return None
        table.checkout(PUBLISHED_TAG)
        return table

    def summaries_table(self) -> Any | None:
        """Tier 1: the published category summaries, or None until they exist."""
        return self.table(SUMMARIES_TABLE)

    def published_version(self) -> int | None:
        table = self.table()
        return None if table is None else int(table.version)

    @spanned("read published items")
    def items(self, columns: Sequence[str] | None = None) -> pl.DataFrame:
        """Every published item (all statuses), from the published version's Parquet file;
        only ``columns`` when given (those the file has: a version written before a
        column existed lacks it)."""
        pointer = published.read(self.paths)
        if pointer is None:
            schema = ITEM_SCHEMA if columns is None else {c: ITEM_SCHEMA[c] for c in columns if c in ITEM_SCHEMA}
            return pl.DataFrame(schema=schema)
        path = str(pointer.items_path(self.paths))
        if columns is None:
            return pl.read_parquet(path)
        scan = pl.scan_parquet(path)
        present = scan.collect_schema()
        return scan.select([c for c in dict.fromkeys(columns) if c in present]).collect()

    def graph(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        """The published version's entities and edges; empty frames when it has no graph."""
        files = published.graph_files(self.paths)
        if files is None:
            return pl.DataFrame(schema=ENTITY_SCHEMA), pl.DataFrame(schema=EDGE_SCHEMA)
        return pl.read_parquet(str(files[0])), pl.read_parquet(str(files[1]))

    def get(self, item_id: str) -> dict[str, Any]:
        rows = self.items().filter(pl.col("id") == item_id)
        if rows.is_empty():
            raise ItemStore.DoesNotExist(f"no published item with id {item_id!r} under {self.paths.root}")
        return rows.row(0, named=True)

    @spanned("read vectors by hash")
    def vectors_for(self, hashes: pl.Series) -> tuple[np.ndarray | None, np.ndarray]:
        """The published vector of each of ``hashes`` (content hashes, in their order): a
        matrix with a row per hash (zeros where none is stored; None when nothing is) and
        which rows were found. The table is read a batch at a time straight into the
        matrix, so a million vectors are held once, not also as a dict of a million."""
        found = np.zeros(len(hashes), dtype=bool)
        table = self.table()
        if table is None or not len(hashes):
            return None, found
        wanted = pl.DataFrame({"content_hash": hashes.cast(pl.String)}).with_row_index("_at")
        matrix: np.ndarray | None = None
        for held, values in _vector_batches(table):
            pairs = wanted.join(pl.DataFrame({"content_hash": held}).with_row_index("_in"), on="content_hash", how="inner")
            if not pairs.height:
                continue
            if matrix is None:
                matrix = np.zeros((len(hashes), values.shape[1]), dtype=np.float32)
            at = pairs["_at"].to_numpy()
            matrix[at] = values[pairs["_in"].to_numpy()]
            found[at] = True
        return matrix, found

    def vectors_by_hash(self) -> dict[str, np.ndarray]:
        """content hash → vector of the published table (each a row of its batch's matrix)."""
        table = self.table()
        out: dict[str, np.ndarray] = {}
        for held, values in _vector_batches(table) if table is not None else ():
            out.update(zip(held.to_list(), values))
        return out


class SideTable:
    """A published side table (category summaries and entity profiles, archive insights)
    held in memory: its rows and their unit vectors. Read from the Parquet copy the publish
    wrote (no LanceDB on the read path), or from the LanceDB table of a root published
    before the copies."""

    def __init__(self, frame: pl.DataFrame, vectors: np.ndarray):
        self.frame = frame
        norms = np.linalg.norm(vectors, axis=1, keepdims=True) if len(vectors) else np.ones((0, 1))
        self.vectors = (vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)

    @classmethod
    def of(cls, frame: pl.DataFrame) -> SideTable:
        vectors = np.asarray(frame["vector"].to_list(), dtype=np.float32) if frame.height else np.zeros((0, 1), np.float32)
        return cls(frame.drop("vector"), vectors.reshape(frame.height, -1))

    def nearest(self, vector: np.ndarray, k: int, keep: pl.Expr | None = None) -> list[dict[str, Any]]:
        """The ``k`` rows nearest to ``vector`` by cosine (``_distance``, as LanceDB gives
        it), among those ``keep`` holds."""
        rows = np.arange(self.frame.height)
        if keep is not None:
            rows = np.flatnonzero(self.frame.select(keep.fill_null(False)).to_series().to_numpy())
        if not len(rows):
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        distances = 1.0 - self.vectors[rows] @ (query / (np.linalg.norm(query) or 1.0))
        best = np.argsort(distances, kind="stable")[:k]
        found = self.frame[rows[best].tolist()].to_dicts()
        return [{**row, "_distance": float(d)} for row, d in zip(found, distances[best])]

    def rows(self, keep: pl.Expr) -> list[dict[str, Any]]:
        return self.frame.filter(keep.fill_null(False)).to_dicts()


def _vector_batches(table: Any) -> Iterator[tuple[pl.Series, np.ndarray]]:
    """The table's content hashes and vectors (one float32 matrix), ``VECTOR_BATCH`` rows
    at a time: a million vectors are never held twice."""
    for batch in table.search().select(["content_hash", "vector"]).limit(None).to_batches(VECTOR_BATCH):
        if batch.num_rows:
            values = np.asarray(batch.column("vector").flatten().to_numpy(zero_copy_only=False), dtype=np.float32)
            yield (pl.Series("content_hash", batch.column("content_hash"), dtype=pl.String),
                   values.reshape(batch.num_rows, -1))


VECTOR_BATCH = 65_536  # rows of vectors read at a time (``vectors_for``, the embeddings check)


class PublishedRows:
    """The published Parquet snapshot held in memory, looked up by item id.

    Search asks LanceDB for ids and scores only and takes every other attribute from
    here: reading 27 columns of 100 candidate rows from the Lance files costs more than
    the search itself. ``refresh`` reloads when the publish pointer names another file
    (a publish or a rollback); ids it does not hold are for the caller to fetch.

    Safe to share between threads (the service serves many requests at once): a reload
    builds the new frame and its index aside and swaps them in as one snapshot, so a
    reader never pairs one version's index with another's rows.

    Every row handed out carries the user's corrections not published yet (``corrections``:
    forgotten, reworded, pinned), as is ``corrected``'s frame.
    """

    def __init__(self, paths: DataRoot, tier_for: Callable[[str, str | None], str] | None = None):
        self.paths = paths
        self.corrections = Corrections(paths, tier_for)
        self.pointer = published.PointerCache(paths)
        self._snapshot = _EMPTY
        self._loading = threading.Lock()

    @property
    def short_ids(self) -> ShortIds:
        """The short ids of every item in the snapshot (``retrieval.ids``), built once per load."""
        return self._snapshot.short_ids()

    def refresh(self) -> published.Pointer | None:
        """Hold the rows of the published version (as the pointer says now); the pointer."""
        pointer = self.pointer.get()
        self._load(pointer)
        return pointer

    def _load(self, pointer: published.Pointer | None) -> None:
        if pointer is None:
            self._snapshot = _EMPTY
            return
        key = (pointer.generation, pointer.items)
        if key == self._snapshot.key:
            return
        with self._loading:  # one thread loads; the others wait for it and find it loaded
            if key == self._snapshot.key:
                return
            # One chunk per column: gathering 150 rows from the 8 chunks a 1M-row file reads
            # into took 20 ms, from one 1.2 ms (rechunking: 0.3 s once per version).
            frame = pl.read_parquet(str(pointer.items_path(self.paths)), rechunk=True)
            ids = frame["id"].to_list()
            self._snapshot = _Snapshot(key, frame, {item_id: i for i, item_id in enumerate(ids)}, ids)

    @property
    def key(self) -> tuple[int, str] | None:
        """Which version is loaded (the pointer's generation and file); None when there is none."""
        return self._snapshot.key

    @property
    def frame(self) -> pl.DataFrame | None:
        """The loaded snapshot, every item of the published version."""
        return self._snapshot.frame

    @property
    def ids(self) -> list[str]:
        """The snapshot's item ids, in its row order (the read index's rows)."""
        return self._snapshot.ids

    def positions(self, ids: Sequence[str]) -> list[int | None]:
        """The snapshot row of each of ``ids`` (None for one it does not hold)."""
        index = self._snapshot.index
        return [index.get(i) for i in ids]

    def mask(self, where: str) -> np.ndarray:
        """The snapshot's rows that LanceDB's predicate ``where`` (``View.where``) holds, as a
        boolean array: polars evaluates the same SQL, so the filtered search in process
        finds what LanceDB's would. Kept per version and predicate (one agent asks the same)."""
        snapshot = self._snapshot
        if snapshot.frame is None:
            return np.zeros(0, dtype=bool)
        found = snapshot.masks.get(where)
        if found is None:
            found = snapshot.frame.select(pl.sql_expr(where).fill_null(False)).to_series().to_numpy()
            if len(snapshot.masks) >= MASKS_HELD:
                snapshot.masks.clear()
            snapshot.masks[where] = found
        return found

    def rows(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """id → row for the ``ids`` the snapshot holds."""
        snapshot = self._snapshot
        if snapshot.frame is None:
            return {}
        # A row leaves polars once per loaded version (converting ~40 rows of 56 columns is
        # 2 ms of an inject) and is handed out as a copy; an agent's queries come back to
        # the same items.
        held, found, missing = snapshot.held, {}, []
        for item_id in dict.fromkeys(ids):
            row = held.get(item_id)
            if row is not None:
                found[item_id] = dict(row)
            elif item_id in snapshot.index:
                missing.append(item_id)
        if missing:
            fetched = {row["id"]: row for row in snapshot.frame[[snapshot.index[i] for i in missing]].to_dicts()}
            if len(held) + len(fetched) > ROWS_HELD:
                held.clear()
            held.update(fetched)
            found.update((item_id, dict(row)) for item_id, row in fetched.items())
        if self.corrections:
            found = {item_id: self.corrections.apply(row) for item_id, row in found.items()}
        return {item_id: found[item_id] for item_id in dict.fromkeys(ids) if item_id in found}

    def corrected(self, frame: pl.DataFrame) -> pl.DataFrame:
        """``frame`` (rows of the snapshot) with the corrections not published yet laid over
        it: the rows they name replaced, the items of an erased namespace purged."""
        if not self.corrections or frame.is_empty():
            return frame
        named = frame.filter(pl.col("id").is_in(list(self.corrections.touched())))
        if not named.is_empty():
            rows = [self.corrections.apply(r) for r in named.to_dicts()]
            frame = frame.update(pl.DataFrame(rows, schema=frame.schema), on="id", include_nulls=True)
        for namespace, at in self.corrections.erased():
            frame = frame.with_columns(
                status=pl.when((pl.col("namespace") == namespace) & (pl.col("created_at") <= at))
                .then(pl.lit("purged")).otherwise(pl.col("status")))
        return frame


# Converted rows a snapshot keeps, at most (about 2 KiB each).
ROWS_HELD = 50_000
# Filter masks a snapshot keeps, at most (a byte a row each).
MASKS_HELD = 64


@dataclass
class _Snapshot:
    """One loaded version of the published rows, swapped in whole."""

    key: tuple[int, str] | None
    frame: pl.DataFrame | None
    index: dict[str, int]
    ids: list[str] = field(default_factory=list)
    short: ShortIds | None = None
    # Rows already converted to dicts (``PublishedRows.rows``; callers get copies).
    held: dict[str, dict[str, Any]] = field(default_factory=dict)
    masks: dict[str, np.ndarray] = field(default_factory=dict)

    def short_ids(self) -> ShortIds:
        if self.short is None:
            self.short = ShortIds(self.index)  # two threads may both build it: the same ids
        return self.short


_EMPTY = _Snapshot(None, None, {})
