"""Write–audit–publish for the item store (DESIGN principle 4).

``write_items`` writes a versioned Parquet file and a new LanceDB table version with its
full-text index, and ``stage`` records it as the version awaiting its checks; nothing
the agent reads has changed yet. ``publish`` moves the LanceDB ``published`` tag (which
keeps the version from clean-up) and then writes the one object agents read first, the
publish pointer (``retrieval.published``: one conditional PUT on object storage, one
rename on a disk, no file copied or renamed besides), and appends to the publish history
that ``rollback`` re-points along.
"""

from __future__ import annotations

import json
import secrets
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl

from memory_assets.lib import warehouse
from retrieval import published, read_index
from retrieval.files import stamp
from retrieval.paths import DataRoot, location
from retrieval.published import ITEMS_TABLE, PUBLISHED_TAG
from retrieval.spans import spanned, timed


# Above this many rows brute-force vector search gets slow (~250 ms at 100k on 2 cores):
# build an ANN index instead.
VECTOR_INDEX_MIN_ROWS = 20_000
# The full-text index covers what ``write_items`` is given as each item's search text
# (``lib/source_text.search_texts``: the content, the turns it came from and the turns
# around them), LanceDB only; retrieval's full-text query finds the table's one FTS index
# by itself.
FTS_COLUMN = "search_text"
# What ``write_items`` compares to find the rows a night changed; LanceDB only.
ROW_HASH = "row_hash"
# More changed rows than this share of the table: write it whole (and index it afresh).
REWRITE_SHARE = 0.5
DELETE_CHUNK = 5_000
# LanceDB versions older than this are cleaned up (tagged ones are kept): how far back
# ``rollback --to`` reaches.
VERSIONS_KEPT = timedelta(days=30)


@dataclass(frozen=True)
class ItemsVersion:
    version: int
    parquet: Path
    rows: int
    written_at: str = ""
    event_files: list[str] = field(default_factory=list)
    sweep_files: list[str] = field(default_factory=list)
    # The version's graph (``write_graph``); None for a version written before the graph.
    entities: str | None = None
    edges: str | None = None
    # The version's in-process read indexes (``retrieval.read_index``); None without rows,
    # or for a version written before them (readers then search LanceDB).
    index: str | None = None

    def to_json(self) -> dict:
        return {**asdict(self), "parquet": str(self.parquet)}

    @classmethod
    def from_json(cls, raw: dict) -> "ItemsVersion":
        return cls(**{**raw, "parquet": location(raw["parquet"])})


class RollbackError(LookupError):
    """No earlier published version to go back to (or not the one asked for)."""


@spanned("write_items")
def write_items(paths: DataRoot, items: pl.DataFrame, vectors: np.ndarray, now: datetime,
                search_text: pl.Series | None = None, *, rewrite: bool = False) -> ItemsVersion:
    """Write (not publish) a new version of the items: Parquet file + LanceDB version.

    ``search_text`` (one per item; default: the content) is what the full-text index
    reads; it goes to LanceDB only, never to the Parquet snapshot retrieval holds in memory.

    The LanceDB table changes by what changed (``_apply_changes``: a night touches a few
    per cent of the rows, and rebuilding a 1M-row vector index takes half an hour); it is
    written whole when it is new, its columns changed, most rows changed, or ``rewrite``
    (an erasure: the erased rows' bytes must leave the live files, not only be marked).
    """
    parquet = warehouse.write_frame(paths.items_dir / "versions" / f"items-{stamp(now)}.parquet", items)

    text = items["content"] if search_text is None else search_text
    index = _write_read_index(paths, items, vectors, text, now)
    frame = _with_vectors(items.with_columns(text.alias(FTS_COLUMN)), vectors)
    # One hash per row over every column LanceDB holds, the vector included: what
    # ``_apply_changes`` compares. (polars' row hash is stable within a polars version; a
    # new version's hashes all differ, and the table is written whole once.)
    frame = frame.with_columns(_row_hashes(frame).alias(ROW_HASH))
    import lancedb  # here: loading the code location needs no lancedb
    db = lancedb.connect(str(paths.lancedb))
    table = None if rewrite or not items.height else _open_items(db)
    # Arrow's copy of the whole frame (its strings are converted) only when it is written whole.
    if table is None or table.schema != frame.head(0).to_arrow().schema or not _apply_changes(table, frame):
        with timed("lancedb: write table"):
            table = db.create_table(ITEMS_TABLE, data=frame.to_arrow(), mode="overwrite")
    _index(table)
    return ItemsVersion(version=table.version, parquet=parquet, rows=items.height, written_at=now.isoformat(),
                        index=str(index) if index is not None else None)


def _trigger_patterns(items: pl.DataFrame) -> list[str]:
    """Every trigger pattern of the negative rules among ``items``."""
    if "trigger_patterns" not in items.columns or "kind" not in items.columns:
        return []
    patterns = items.filter(pl.col("kind") == "negative")["trigger_patterns"].explode().drop_nulls().unique()
    return patterns.to_list()


@spanned("write read index")
def _write_read_index(paths: DataRoot, items: pl.DataFrame, vectors: np.ndarray, text: pl.Series,
                      now: datetime) -> Path | None:
    """The version's read indexes, built on this machine's disk and copied under the root
    (``warehouse.put_folder``, the manifest last); None for a version without rows."""
    if not items.height:
        return None
    models = items["embedding_model"].unique().drop_nulls().to_list() if "embedding_model" in items.columns else []
    # Named apart from any earlier build of the same moment: a reader may hold that one mapped.
    target = paths.items_dir / "indexes" / f"index-{stamp(now)}-{secrets.token_hex(4)}"
    with tempfile.TemporaryDirectory(prefix="read-index-") as work:
        read_index.build(Path(work), items["id"].to_list(), vectors, text.fill_null("").to_list(), models,
                         _trigger_patterns(items))
        warehouse.put_folder(Path(work), target, last=read_index.MANIFEST)
    return target


# Rows hashed at a time: polars' row hash of a million 58-column rows at once held 5.4 GB
# beside the frame; per slice it is the same hash (a row's hash is its own).
HASH_CHUNK = 50_000


def _row_hashes(frame: pl.DataFrame) -> pl.Series:
    if frame.height <= HASH_CHUNK:
        return frame.hash_rows()
    return pl.concat([frame.slice(start, HASH_CHUNK).hash_rows() for start in range(0, frame.height, HASH_CHUNK)])


def _open_items(db):
    try:
        return db.open_table(ITEMS_TABLE)
    except ValueError:  # not created yet
        return None


@spanned("lancedb: apply changes")
def _apply_changes(table, frame: pl.DataFrame) -> bool:
    """Delete the rows that changed or left and add the changed and new ones; False (and
    nothing done) when so much changed that writing the table whole is cheaper."""
    held = pl.from_arrow(table.search().select(["id", ROW_HASH]).limit(None).to_arrow())
    keys = frame.select("id", ROW_HASH)
    gone = held.join(keys, on=["id", ROW_HASH], how="anti")["id"].unique().to_list()
    fresh = keys.with_row_index("row").join(held, on=["id", ROW_HASH], how="anti")["row"]
    if len(gone) + fresh.len() > REWRITE_SHARE * max(held.height, 1):
        return False
    for start in range(0, len(gone), DELETE_CHUNK):
        chunk = gone[start:start + DELETE_CHUNK]
        with timed("lancedb: delete"):
            table.delete("id IN (" + ", ".join("'" + i.replace("'", "''") + "'" for i in chunk) + ")")
    if fresh.len():
        with timed("lancedb: add"):
            table.add(frame[fresh.to_list()].to_arrow())
    return True


def _index(table) -> None:
    """The full-text index (and, from ``VECTOR_INDEX_MIN_ROWS`` rows, the vector index):
    built when missing, else brought up to date with the rows just added (LanceDB's
    ``optimize``: new rows join the index's existing partitions, small files merge, nothing
    is retrained; ``items_index`` retrains monthly). Until then a query searches the rows
    no index covers yet by brute force, so nothing is missed."""
    rows = table.count_rows()
    if not rows:
        return
    have = {tuple(index.columns) for index in table.list_indices()}
    built = False
    if (FTS_COLUMN,) not in have:
        with timed("lancedb: full-text index"):
            table.create_fts_index(FTS_COLUMN, replace=True, with_position=False)
        built = True
    if rows >= VECTOR_INDEX_MIN_ROWS and ("vector",) not in have:
        with timed("lancedb: vector index"):
            table.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_HNSW_SQ")
        built = True
    if not built:
        with timed("lancedb: optimize"):
            table.optimize(cleanup_older_than=VERSIONS_KEPT)


@spanned("write graph")
def write_graph(paths: DataRoot, entities: pl.DataFrame, edges: pl.DataFrame, now: datetime) -> tuple[str, str]:
    """Write (not publish) a version's entities and edges; their paths, for ``ItemsVersion``."""
    at = stamp(now)
    written = (warehouse.write_frame(paths.graph_dir / "versions" / f"entities-{at}.parquet", entities),
               warehouse.write_frame(paths.graph_dir / "versions" / f"edges-{at}.parquet", edges))
    return str(written[0]), str(written[1])


def _with_vectors(frame: pl.DataFrame, vectors: np.ndarray) -> pl.DataFrame:
    """``frame`` with its ``vector`` column (LanceDB's fixed-size list of float32)."""
    dim = vectors.shape[1] if vectors.ndim == 2 and vectors.shape[0] else 384
    matrix = np.asarray(vectors, dtype=np.float32).reshape(-1, dim)
    return frame.with_columns(pl.Series("vector", matrix, dtype=pl.Array(pl.Float32, dim)))


@spanned("publish summaries table")
def publish_table(paths: DataRoot, name: str, frame: pl.DataFrame, vectors: np.ndarray) -> int:
    """Write a small side table (summaries, insights) as a new version and publish it."""
    import lancedb  # here: loading the code location needs no lancedb
    db = lancedb.connect(str(paths.lancedb))
    with timed("lancedb: write table"):
        table = db.create_table(name, data=_with_vectors(frame, vectors).to_arrow(), mode="overwrite")
    if PUBLISHED_TAG in table.tags.list():
        table.tags.update(PUBLISHED_TAG, table.version)
    else:
        table.tags.create(PUBLISHED_TAG, table.version)
    # The same version as one Parquet file, then its pointer: what agents read.
    copy = warehouse.write_frame(paths.warehouse / published.SIDE_DIR / f"{name}-v{table.version}.parquet",
                                 _with_vectors(frame, vectors))
    warehouse.write_json(published.side_pointer_path(paths, name),
                         {"version": int(table.version), "file": paths.relative(copy)})
    return int(table.version)


def _staged_file(paths: DataRoot) -> Path:
    return paths.items_dir / "staged.json"


def _history_file(paths: DataRoot) -> Path:
    return paths.items_dir / "published_history.json"


@spanned("stage")
def stage(paths: DataRoot, written: ItemsVersion) -> None:
    """Record ``written`` as the version the checks audit and ``published_items`` publishes."""
    warehouse.write_json(_staged_file(paths), written.to_json(), indent=1)


@spanned("lifecycle report")
def write_report(paths: DataRoot, metadata: dict) -> None:
    """What the last items run's lifecycle did, for the ``lifecycle`` asset to report."""
    warehouse.write_json(paths.lifecycle / "last_report.json", metadata, indent=1, default=str)


def read_report(paths: DataRoot) -> dict:
    return warehouse.read_json(paths.lifecycle / "last_report.json", {})


def staged(paths: DataRoot) -> ItemsVersion | None:
    raw = warehouse.read_json(_staged_file(paths))
    return ItemsVersion.from_json(raw) if raw is not None else None


def staged_table(paths: DataRoot, written: ItemsVersion):
    """The LanceDB items table at the staged (not yet published) version."""
    import lancedb  # here: loading the code location needs no lancedb
    table = lancedb.connect(str(paths.lancedb)).open_table(ITEMS_TABLE)
    table.checkout(written.version)
    return table


def history(paths: DataRoot) -> list[ItemsVersion]:
    """Every version ever published, oldest first."""
    return [ItemsVersion.from_json(r) for r in warehouse.read_json(_history_file(paths), [])]


@spanned("publish")
def publish(paths: DataRoot, written: ItemsVersion, *, record: bool = True) -> None:
    """Point the agent at ``written``: the LanceDB tag, then the pointer (the publish)."""
    import lancedb  # here: loading the code location needs no lancedb
    db = lancedb.connect(str(paths.lancedb))
    table = db.open_table(ITEMS_TABLE)
    tags = table.tags.list()
    if PUBLISHED_TAG in tags:
        table.tags.update(PUBLISHED_TAG, written.version)
    else:
        table.tags.create(PUBLISHED_TAG, written.version)
    warehouse.crash_point("publish")  # the tag moved, the pointer not yet: readers see the old version
    point(paths, written)
    if record:
        entries = [v.to_json() for v in history(paths) if v.version != written.version] + [written.to_json()]
        warehouse.write_json(_history_file(paths), entries, indent=1)


def point(paths: DataRoot, written: ItemsVersion) -> published.Pointer:
    """Write the publish pointer naming ``written``'s files, one generation on from the
    pointer read just before; ``warehouse.WriteConflict`` when another publisher wrote it
    in between (theirs stays)."""
    target = published.pointer_path(paths)
    before, token = warehouse.read_versioned(target)
    generation = int(json.loads(before)["generation"]) if before else 0
    pointer = published.Pointer(
        generation=generation + 1, version=written.version, items=paths.relative(written.parquet),
        rows=written.rows, entities=paths.relative(written.entities) if written.entities else None,
        edges=paths.relative(written.edges) if written.edges else None,
        index=paths.relative(written.index) if written.index else None,
        published_at=datetime.now().astimezone().isoformat())
    warehouse.write_if_unchanged(target, json.dumps(pointer.to_json(), indent=1).encode(), token,
                                 existed=before is not None)
    return pointer


def current(paths: DataRoot) -> ItemsVersion | None:
    """The version the agent reads now."""
    pointer = published.read(paths)
    if pointer is None:
        return None
    return next((v for v in reversed(history(paths)) if v.version == pointer.version), None)


def _hold_file(paths: DataRoot) -> Path:
    return paths.items_dir / "hold.json"


def held(paths: DataRoot) -> int | None:
    """The version a rollback holds published (later builds are staged, not published), or None."""
    raw = warehouse.read_json(_hold_file(paths))
    return int(raw["version"]) if raw is not None else None


def unhold(paths: DataRoot) -> bool:
    """Lift a rollback's hold without publishing anything (an erasure publishes next:
    the held version holds the erased words). Whether there was a hold."""
    was = held(paths) is not None
    warehouse.remove(_hold_file(paths))
    return was


def keep_history(paths: DataRoot, versions: set[int]) -> int:
    """Keep only the published versions whose LanceDB version still exists (an erasure
    removes the others); returns how many entries went."""
    entries = history(paths)
    kept = [v for v in entries if v.version in versions]
    if len(kept) != len(entries):
        warehouse.write_json(_history_file(paths), [v.to_json() for v in kept], indent=1)
    return len(entries) - len(kept)


def release(paths: DataRoot, version: int | None = None) -> ItemsVersion:
    """``memory publish``: lift the hold and publish ``version`` (default: the latest staged
    one, which passed its checks: only such a version is ever staged for publish)."""
    from memory_assets.lib.quality import audit

    target = staged(paths) if version is None else next((v for v in history(paths) if v.version == version), None)
    if target is None and version is not None and (s := staged(paths)) is not None and s.version == version:
        target = s
    if target is None:
        raise RollbackError(f"version {version} is neither staged nor was ever published" if version is not None
                            else "nothing staged: run `memory materialize` first")
    if not audit.passed(paths, target.version):
        raise RollbackError(f"version {target.version} has not passed its blocking checks; it cannot be published")
    publish(paths, target)
    warehouse.remove(_hold_file(paths))
    return target


def rollback(paths: DataRoot, to_version: int | None = None) -> ItemsVersion:
    """Re-point the agent at an earlier published version (default: the one before now),
    and hold it there: later builds are staged and audited but not published until
    ``release`` (``memory publish``), so the next ``materialize`` cannot undo the rollback."""
    versions = history(paths)
    now = current(paths)
    if to_version is not None:
        target = next((v for v in versions if v.version == to_version), None)
        if target is None:
            known = ", ".join(str(v.version) for v in versions) or "none"
            raise RollbackError(f"version {to_version} was never published; published versions: {known}")
    else:
        earlier = [v for v in versions if now is None or v.version < now.version]
        if not earlier:
            raise RollbackError("no earlier published version to roll back to")
        target = earlier[-1]
    publish(paths, target, record=False)
    warehouse.write_json(_hold_file(paths), {"version": target.version})
    return target
