"""Publishing the category summaries: the markdown pages (each earlier version archived)
and the LanceDB ``summaries`` table tier 1 searches.

``update_summaries`` is the nightly step over a data root (the ``category_summaries``
asset and the evals' in-process builds call it): the categories whose items changed are
rewritten (the weekly run rebuilds every one from active items only), audited, then
published.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

from memory_assets.lib import warehouse
from memory_assets.lib.items import publish
from memory_assets.lib.summaries import entity_pages as profiles
from memory_assets.lib.summaries.writing import Summary, chat_client, missing_citations, rebuild, summarize, version_stamp
from retrieval import published
from retrieval.config import MemoryConfig
from retrieval.paths import DataRoot, location
from retrieval.profiles import PROFILE_PREFIX, profile_category
from retrieval.published import SUMMARIES_TABLE
from retrieval.schema import EDGE_SCHEMA, ENTITY_SCHEMA
from retrieval.store import ItemStore


class SummariesRefused(RuntimeError):
    """A summary cites an item that does not exist; the previous summaries stay published."""

    def __init__(self, missing: dict[str, list[str]]):
        super().__init__("summaries cite unknown items")
        self.missing = missing


# What pages read of an item (what is ranked, cited, retired and quoted): not its
# sources, entities or parse, which at a million items are most of the bytes.
SUMMARY_COLUMNS = (
    "id", "content", "category", "status", "source_trust", "expires_at", "supersedes", "contradicts", "confidence",
    "created_at", "first_seen_at", "updated_at", "last_referenced_at", "importance", "tier", "kind", "strength",
    "reinforcement", "retrieval_priority", "reference_count", "echo_count", "fizzle_count", "namespace", "project",
)


@dataclass
class SummariesUpdate:
    fresh: list[Summary]
    table: pl.DataFrame
    versions_archived: int
    lancedb_version: int | None


def current_summaries(paths: DataRoot) -> pl.DataFrame:
    """The published summaries' rows (``SUMMARY_SCHEMA``), empty before the first run."""
    return warehouse.read_frame(paths.summaries / "summaries.parquet", SUMMARY_SCHEMA)


def update_summaries(paths: DataRoot, embed: Callable[[Sequence[str]], np.ndarray], config: MemoryConfig,
                     now: datetime, *, rebuild_all: bool = False, model_id: str | None = None) -> SummariesUpdate:
    """Rewrite the summaries of the categories whose items changed since the last run (a
    summary citing an item that merged away is rewritten from scratch), or every one when
    ``rebuild_all``; audit their citations, archive the versions they replace, and publish
    the table with ``embed``'s vectors (with ``model_id``, a page whose text the table
    already holds from that model keeps its vector: most pages do not change in a night)."""
    items = ItemStore(paths).items(SUMMARY_COLUMNS)
    llm = chat_client(config)
    current = current_summaries(paths)
    known = set(items["id"].to_list())
    stamp_file = paths.summaries / ".last_run"
    if rebuild_all or current.is_empty():
        fresh = rebuild(items, config, now, llm=llm)
    else:
        last = warehouse.read_text(stamp_file)
        since = pl.Series([last.strip()]).str.to_datetime(time_zone="UTC")[0] if last else None
        changed = items if since is None else items.filter(pl.col("updated_at") > since)
        # (an entity profile citing a gone item is rewritten by _profiles)
        stale = {r["category"] for r in current.iter_rows(named=True)
                 if set(r["item_ids"]) - known and not r["category"].startswith(PROFILE_PREFIX)}
        fresh = []
        for category in sorted(set(changed["category"].to_list()) | stale):
            old = current.filter(pl.col("category") == category)
            if category in stale or not old.height:
                fresh.append(summarize(category, None, items.filter(pl.col("category") == category), config, now, llm=llm))
            else:
                fresh.append(summarize(category, old["markdown"][0], changed, config, now, llm=llm))
    pages, wanted = _profiles(paths, items, current, config, now,
                              None if rebuild_all or current.is_empty() else changed)
    fresh += pages
    broken = {s.category: missing_citations(s, known) for s in fresh}
    broken = {k: v for k, v in broken.items() if v}
    if broken:  # audit before publish: a summary never cites an item that does not exist
        raise SummariesRefused(broken)
    archived = [archive_versions(paths.summaries, s, now, config=config) for s in fresh]
    if rebuild_all:
        table = summaries_frame(fresh)
    else:
        updated = {s.category for s in fresh}
        kept = current.filter(~pl.col("category").is_in(list(updated)))
        # A profile whose entity is no longer important (or gone) is dropped.
        kept = kept.filter(~pl.col("category").str.starts_with(PROFILE_PREFIX) | pl.col("category").is_in(list(wanted)))
        table = pl.concat([kept, summaries_frame(fresh)], how="vertical_relaxed").sort("category")
    version = None
    if table.height:
        vectors = _page_vectors(paths, table["content"].to_list(), embed, model_id)
        marked = table if model_id is None else table.with_columns(pl.lit(model_id).alias(EMBEDDING_MODEL))
        version = publish.publish_table(paths, SUMMARIES_TABLE, marked, vectors)
        warehouse.write_frame(paths.summaries / "summaries.parquet", table)
    warehouse.write_text(stamp_file, now.isoformat())
    return SummariesUpdate(fresh, table, sum(a is not None for a in archived), version)


# LanceDB's summaries table only: the model that embedded each page.
EMBEDDING_MODEL = "embedding_model"


def _page_vectors(paths: DataRoot, texts: list[str], embed: Callable[[Sequence[str]], np.ndarray],
                  model_id: str | None) -> np.ndarray:
    """One vector per text: the published summaries table's for a text ``model_id``
    embedded there, ``embed``'s for the rest."""
    known: dict[str, np.ndarray] = {}
    table = ItemStore(paths).summaries_table() if model_id is not None else None
    if table is not None and EMBEDDING_MODEL in table.schema.names:
        held = table.search().select(["content", EMBEDDING_MODEL, "vector"]).limit(None).to_arrow().to_pylist()
        known = {r["content"]: np.asarray(r["vector"], dtype=np.float32) for r in held if r[EMBEDDING_MODEL] == model_id}
    missing = [t for t in dict.fromkeys(texts) if t not in known]
    if missing:
        known.update(zip(missing, np.asarray(embed(missing), dtype=np.float32)))
    return np.stack([known[t] for t in texts])


def _profiles(paths: DataRoot, items: pl.DataFrame, current: pl.DataFrame, config: MemoryConfig, now: datetime,
              changed: pl.DataFrame | None) -> tuple[list[Summary], set[str]]:
    """The entity pages to write, and the categories of every page that should exist.
    Every page on a rebuild or a first run (``changed`` None); otherwise the pages of the
    entities a changed item mentions, of the important entities without a page yet, and of
    the pages citing an item that is gone."""
    graph = published.graph_files(paths)
    entities = warehouse.read_frame(graph[0], ENTITY_SCHEMA) if graph else pl.DataFrame(schema=ENTITY_SCHEMA)
    chosen = profiles.important(entities, config)
    wanted = {profile_category(e) for e in chosen["id"].to_list()}
    edges = warehouse.read_frame(graph[1], EDGE_SCHEMA) if graph else pl.DataFrame(schema=EDGE_SCHEMA)
    if changed is not None:
        known = set(items["id"].to_list())
        have = {r["category"] for r in current.iter_rows(named=True)
                if r["category"] in wanted and not set(r["item_ids"]) - known}
        redo = {profile_category(e) for e in profiles.changed_entities(edges, set(changed["id"].to_list()))}
        redo = (redo | (wanted - have)) & wanted
        chosen = chosen.filter((pl.lit(PROFILE_PREFIX) + pl.col("id")).is_in(list(redo)))
    return profiles.profiles(items, chosen, edges, config, now), wanted


def archive_versions(folder: Path, summary: Summary, now: datetime, *, config: MemoryConfig) -> Path | None:
    """Write ``<folder>/<summary_file>``, archiving the version it replaces.

    The old file moves to ``<folder>/archive/<name>-<UTC stamp>.md``. Archived versions
    are kept forever unless ``[summaries] max_versions_kept`` > 0, which keeps that many
    of the newest. Writing the same text again changes nothing.

    Returns:
        the archived file, or None when there was nothing to archive.
    """
    folder = location(folder)
    target = folder / summary.file_name
    archived: Path | None = None
    current = warehouse.read_text(target)
    if current is not None:
        if current == summary.text:
            return None
        archive = folder / "archive"
        stem = Path(summary.file_name).stem
        archived = archive / f"{stem}-{version_stamp(now)}.md"
        n = 1
        while warehouse.exists(archived):
            archived = archive / f"{stem}-{version_stamp(now)}-{n}.md"
            n += 1
        warehouse.move(target, archived)
        _prune(archive, stem, int(config.summaries.max_versions_kept))
    warehouse.write_text(target, summary.text)
    return archived


def _prune(archive: Path, stem: str, keep: int) -> None:
    if keep <= 0:  # 0 = keep every archived version
        return
    pattern = re.compile(rf"^{re.escape(stem)}-(\d{{8}}T\d{{6}}Z)(?:-(\d+))?\.md$")
    versions = []
    for path in warehouse.files(archive, "*.md"):
        match = pattern.match(path.name)
        if match:
            versions.append(((match.group(1), int(match.group(2) or 0)), path))
    for _, old in sorted(versions)[:-keep]:
        warehouse.remove(old)


# --- the LanceDB ``summaries`` table ------------------------------------------------

SUMMARY_SCHEMA: dict[str, pl.DataType] = {
    "category": pl.String(),
    "file_name": pl.String(),
    "content": pl.String(),      # citations stripped: what tier 1 embeds and quotes
    "markdown": pl.String(),     # with [id] citations, as in the file
    "item_ids": pl.List(pl.String()),
    "version": pl.String(),
    "summarizer": pl.String(),
    "prompt_version": pl.String(),
    "model": pl.String(),
    "prompt_tokens": pl.Int64(),
    "completion_tokens": pl.Int64(),
    "cost_usd": pl.Float64(),
    "updated_at": pl.Datetime("us", "UTC"),
}


def summaries_frame(summaries: list[Summary]) -> pl.DataFrame:
    """One row per summary (``SUMMARY_SCHEMA``); add a ``vector`` of ``content`` for LanceDB."""
    return pl.DataFrame(
        [{
            "category": s.category, "file_name": s.file_name, "content": s.content,
            "markdown": s.text, "item_ids": list(s.item_ids), "version": s.version,
            "summarizer": s.summarizer, "prompt_version": s.prompt_version, "model": s.model,
            "prompt_tokens": s.prompt_tokens, "completion_tokens": s.completion_tokens,
            "cost_usd": s.cost_usd, "updated_at": s.updated_at,
        } for s in summaries],
        schema=SUMMARY_SCHEMA,
    )
