"""The monthly upkeep of the published items' search indexes (``items_index``)."""

from __future__ import annotations

from dataclasses import dataclass

from memory_assets.lib.items import publish
from memory_assets.lib.quality import audit
from retrieval.paths import DataRoot
from retrieval.store import ItemStore


@dataclass
class IndexUpkeep:
    rows: int
    versions_before: int
    versions_after: int
    indexes: list[str]
    compaction: str


def optimize(paths: DataRoot) -> IndexUpkeep | None:
    """The full-text index and (above ``VECTOR_INDEX_MIN_ROWS`` items) the vector index
    rebuilt, the LanceDB table compacted and versions older than ``VERSIONS_KEPT`` cleaned
    up (tagged versions are kept); None before anything is published.

    The agent moves to the compacted version only when the latest version is the
    published one: compacting never publishes a version that failed its checks.
    """
    table = ItemStore(paths).table()
    if table is None:
        return None
    import lancedb  # here: loading the code location needs no lancedb

    live = lancedb.connect(str(paths.lancedb)).open_table("items")
    before = len(live.list_versions())
    published_is_latest = live.version == table.version
    stats = live.optimize(cleanup_older_than=publish.VERSIONS_KEPT)
    rows = live.count_rows()
    # A table written before items kept their source text has only the content to index.
    fts_column = publish.FTS_COLUMN if publish.FTS_COLUMN in live.schema.names else "content"
    live.create_fts_index(fts_column, replace=True, with_position=False)
    if rows >= publish.VECTOR_INDEX_MIN_ROWS:
        live.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_HNSW_SQ", replace=True)
    # Same rows, fresh indexes: the agent moves to the compacted version.
    current = publish.current(paths)
    if published_is_latest and current is not None and live.version != table.version:
        audit.carry(paths, table.version, live.version, "compaction")
        publish.publish(paths, publish.ItemsVersion(**{**current.__dict__, "version": live.version}))
    return IndexUpkeep(rows=rows, versions_before=before, versions_after=len(live.list_versions()),
                       indexes=[i.name for i in live.list_indices()],
                       compaction=str(getattr(stats, "compaction", stats))[:500])
