"""Step 3 of an erasure (the ``erased_versions`` asset), once the memory rebuilt without
the words is published: every kept version rewritten without them, every LanceDB table cut
to its latest version, the rollback history with it, then the audit rows."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import polars as pl

from memory_assets.lib import warehouse
from memory_assets.lib.erasure.targets import (LOG_SCHEMA, ErasureIncomplete, Target, drop_rows,
                                               erased_item, item_files, manifest_file, names_any)
from memory_assets.lib.items import publish
from retrieval import published
from retrieval.citations import cited_ids
from retrieval.config import MemoryConfig
from retrieval.files import stamp
from retrieval.moments import parse_utc
from retrieval.paths import DataRoot
from retrieval.published import INSIGHTS_TABLE, ITEMS_TABLE, PUBLISHED_TAG, SUMMARIES_TABLE


@dataclass
class Purged:
    """What ``purge_versions`` did (counts; the asset's metadata)."""

    requests: int = 0
    logged: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    lancedb_versions_removed: dict[str, int] = field(default_factory=dict)

    def add(self, what: str, n: int) -> None:
        if n:
            self.counts[what] = self.counts.get(what, 0) + n


def purge_versions(paths: DataRoot, config: MemoryConfig, now: datetime) -> Purged:
    """Step 3, after the clean version is published: rewrite every kept version without
    the erased rows, keep only the latest LanceDB versions, and write the audit rows."""
    raw = warehouse.read_json(manifest_file(paths))
    if raw is None:
        return Purged()
    target = Target.from_json(raw)
    live = published.items_file(paths)
    items = warehouse.read_frame(live) if live is not None else None
    if items is not None and items.filter(erased_item(target)).height:
        raise ErasureIncomplete(f"the published items under {paths.root} still hold erased items: the items build "
                                "did not publish (see its checks), so the versions that hold them are kept; run "
                                "`memory erase` again once `memory materialize` publishes")
    done = Purged(len(target.requests))
    done.add("item_versions", drop_rows(item_files(paths), erased_item(target)))
    done.add("graph_versions", _graph_versions(paths, target))
    done.add("read_indexes", _read_indexes(paths))
    done.add("summary_lines", _summary_pages(paths, target))
    done.add("summaries", drop_rows([paths.summaries / "summaries.parquet"], names_any("item_ids", target.item_ids)))
    done.lancedb_versions_removed = _lancedb(paths, target)
    done.add("side_table_copies", _side_copies(paths))
    _history(paths)
    done.logged = _log(paths, target, now)
    warehouse.remove(manifest_file(paths))
    return done


def _read_indexes(paths: DataRoot) -> int:
    """Every version's read indexes but the published one's (built from the clean version):
    their terms and vectors are the erased items' words. A rolled-back version without its
    indexes is searched through LanceDB, as before they existed."""
    pointer = published.read(paths)
    keep = pointer.index_path(paths) if pointer is not None else None
    removed = 0
    for folder in _index_folders(paths):
        if keep is None or str(folder).rstrip("/") != str(keep).rstrip("/"):
            warehouse.remove_folder(folder)
            removed += 1
    return removed


def _side_copies(paths: DataRoot) -> int:
    """The Parquet copies of side tables but the published ones (rebuilt without the erased
    rows by ``_lancedb``): the older ones hold the erased items' words."""
    keep = {str(f) for name in _CITING if (f := published.side_file(paths, name)) is not None}
    removed = 0
    for file in warehouse.files(paths.warehouse / published.SIDE_DIR, "*.parquet"):
        if str(file) not in keep:
            warehouse.remove(file)
            removed += 1
    return removed


def _index_folders(paths: DataRoot) -> list:
    """The read-index folders under the root, whole or left half-written by a crash."""
    return sorted({file.parent for file in warehouse.files(paths.items_dir / "indexes", "*/*")}, key=str)


def _graph_versions(paths: DataRoot, target: Target) -> int:
    """Each kept graph without the erased items' edges and the entities only they mention
    (their names are the items' words), and the alias merges of those entities."""
    changed, dropped = 0, set()
    entity_files = [paths.graph_dir / "entities.parquet",  # a root's graph from before the publish pointer
                    *warehouse.files(paths.graph_dir / "versions", "entities-*.parquet")]
    for entities_file in entity_files:
        edges_file = entities_file.with_name(entities_file.name.replace("entities", "edges", 1))
        entities, edges = warehouse.read_frame(entities_file), warehouse.read_frame(edges_file)
        if entities is None or edges is None:
            continue
        kept_entities, kept_edges = scrub_graph(entities, edges, target)
        dropped |= set(entities.join(kept_entities, on="id", how="anti").select("namespace", "name").iter_rows())
        if kept_entities.height != entities.height:
            warehouse.write_frame(entities_file, kept_entities)
        if kept_edges.height != edges.height:
            warehouse.write_frame(edges_file, kept_edges)
        changed += entities.height - kept_entities.height + edges.height - kept_edges.height
    names = {(ns, str(name).lower()) for ns, name in dropped}
    for file in warehouse.files(paths.graph_dir / "merges", "*.parquet"):
        frame = warehouse.read_frame(file)
        keep = [not (target.names_namespace(r.get("namespace"))
                     or (r.get("namespace"), str(r.get("into", "")).lower()) in names
                     or (r.get("namespace"), str(r.get("alias", "")).lower()) in names) for r in frame.to_dicts()]
        if not all(keep):
            warehouse.write_frame(file, frame.filter(pl.Series(keep, dtype=pl.Boolean)))
            changed += len(keep) - sum(keep)
    return changed


def scrub_graph(entities: pl.DataFrame, edges: pl.DataFrame, target: Target) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One graph version without the erased: an erased namespace's entities and edges,
    every edge to an erased item, the entities no kept item mentions any more, and the
    relations between two entities an erased item mentioned (its statement as data)."""
    erased = sorted(target.item_ids)
    mentions = edges.filter(pl.col("kind") == "mentions")
    by_erased = set(mentions.filter(pl.col("source").is_in(erased))["target"].to_list())
    by_kept = set(mentions.filter(~pl.col("source").is_in(erased))["target"].to_list())
    gone = sorted((by_erased - by_kept) | set(entities.filter(target.of_namespace())["id"].to_list()))
    said = sorted(by_erased)
    edges = edges.filter(~(
        pl.col("source").is_in(erased) | pl.col("target").is_in(erased)
        | pl.col("source").is_in(gone) | pl.col("target").is_in(gone) | target.of_namespace()
        | ((pl.col("kind") == "relation") & pl.col("source").is_in(said) & pl.col("target").is_in(said))))
    return entities.filter(~pl.col("id").is_in(gone)), edges


def _summary_pages(paths: DataRoot, target: Target) -> int:
    """Every summary page, current and archived: a line citing an erased item goes, and a
    page left citing nothing (an erased entity's profile) goes whole."""
    removed = 0
    for file in sorted(paths.summaries.rglob("*.md")) if paths.summaries.exists() else []:
        lines = warehouse.read_text(file).splitlines(keepends=True)
        cited = [set(cited_ids(line)) for line in lines]
        kept = [line for line, ids in zip(lines, cited) if not ids & target.item_ids]
        if len(kept) == len(lines):
            continue
        removed += len(lines) - len(kept)
        if any(ids and not ids & target.item_ids for ids in cited):
            warehouse.write_text(file, "".join(kept))
        else:
            warehouse.remove(file)
    return removed


def _lancedb(paths: DataRoot, target: Target) -> dict[str, int]:
    """Every LanceDB table keeps its latest version only: an older one is readable with
    ``checkout`` and holds the erased rows. The latest must be the published one."""
    import lancedb

    if not paths.lancedb.exists():
        return {}
    db = lancedb.connect(str(paths.lancedb))
    removed = {}
    for name in db.list_tables().tables:
        table = db.open_table(name)
        if name in _CITING:
            table = _without_erased(paths, db, name, table, target)
            if table is None:
                continue
        stale = {t: v["version"] for t, v in table.tags.list().items() if v["version"] != table.version}
        if name in (ITEMS_TABLE, SUMMARIES_TABLE) and PUBLISHED_TAG in stale:
            raise ErasureIncomplete(f"LanceDB {name}: version {stale[PUBLISHED_TAG]} is published, not the latest "
                                    f"({table.version}); publish the erased build first")
        for tag in stale:
            table.tags.delete(tag)
        before = len(table.list_versions())
        with warnings.catch_warnings():  # no reader may keep an old version: that is the point
            warnings.simplefilter("ignore")
            table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
        removed[name] = before - len(table.list_versions())
    return removed


# Side tables whose rows cite items: a summary (rebuilt by then, unless nothing was left to
# summarize) and an archive insight (the weekly run clusters again).
_CITING = {SUMMARIES_TABLE: "item_ids", INSIGHTS_TABLE: "member_ids"}


def _without_erased(paths: DataRoot, db, name: str, table, target: Target):
    """``table`` without the rows citing an erased item, published; None when none is left
    (the table goes)."""
    frame = pl.from_arrow(table.to_arrow())
    kept = frame.filter(~names_any(_CITING[name], target.item_ids))
    if kept.height == frame.height:
        return table
    if kept.is_empty():
        db.drop_table(name)
        warehouse.remove(published.side_pointer_path(paths, name))
        return None
    publish.publish_table(paths, name, kept.drop("vector"), kept["vector"].to_numpy())
    return db.open_table(name)


def _history(paths: DataRoot) -> None:
    """The rollback history keeps the versions still there (the latest)."""
    import lancedb

    if (paths.lancedb / f"{ITEMS_TABLE}.lance").exists():
        table = lancedb.connect(str(paths.lancedb)).open_table(ITEMS_TABLE)
        publish.keep_history(paths, {v["version"] for v in table.list_versions()})


def _log(paths: DataRoot, target: Target, now: datetime) -> int:
    rows = []
    for request in target.requests:
        asked_at = parse_utc(request["requested_at"])
        common = {"request_id": request["id"], "requested_at": asked_at, "erased_at": now,
                  "reason": request["reason"], "requested_by": request["by"]}
        if request["namespace"] is not None:
            rows.append({**common, "scope": "namespace", "namespace": request["namespace"], "item_id": None})
        rows += [{**common, "scope": "item", "namespace": target.owners.get(i), "item_id": i}
                 for i in request["item_ids"]]
    frame = pl.DataFrame(rows, schema=LOG_SCHEMA)
    warehouse.write_frame(paths.erasure_log / f"erasures-{stamp(now)}.parquet", frame)
    return frame.height
