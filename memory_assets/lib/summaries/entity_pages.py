"""Entity profiles: one short page per important entity ("what do we know about Caroline?").

An entity of the published graph (``lib/items/graph.py``) is important when it is a name
(a person, a place, a product; not a concept like "photo") and at least ``[graph]
profile_min_facts`` active items mention it. Its profile is written like a category
summary (``writing.py``): the entity's active, trusted, unexpired facts ranked by
``memory_score``, near-duplicates dropped, at most ``profile_max_facts`` lines, each
citing the item it rests on as ``[id]``. Profiles are versioned like the category
summaries (each replaced page archived under ``summaries/archive/``) and published as rows
of the same LanceDB ``summaries`` table, ``category = "entity:<entity id>"``; tier 1
serves one when a message asks about the entity as a whole (``retrieval.profiles``).
Search over category summaries leaves these rows out.

At most ``profile_max_entities`` profiles are kept, the entities with the most facts
first, so a large memory does not embed thousands of pages each night.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime

import polars as pl

from memory_assets.lib.summaries.writing import Summary, _eligible, _one_line, bulleted, version_stamp
from retrieval.citations import cited_ids
from retrieval.config import MemoryConfig
from retrieval.profiles import profile_category
from retrieval.scoring import memory_score


def _slug(name: str, entity_id: str) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40] or "entity"
    return f"{base}-{entity_id[-8:]}"


def important(entities: pl.DataFrame, config: MemoryConfig) -> pl.DataFrame:
    """The entities that get a profile, most facts first."""
    g = config.graph
    if entities.is_empty():
        return entities
    return (entities.filter((pl.col("kind") == "name") & (pl.col("status") == "active")
                            & (pl.col("facts") >= int(g.profile_min_facts)))
            .sort(["facts", "id"], descending=[True, False]).head(int(g.profile_max_entities)))


def _page(entity: dict, ranked: list[tuple[str, str]], config: MemoryConfig, now: datetime) -> Summary | None:
    """One entity's page from the items that mention it, ranked (content, id), best first,
    written like an offline category summary (``writing.bulleted``); None when none may
    be summarized."""
    text, count = bulleted(entity["name"], [(_one_line(content), [item_id]) for content, item_id in ranked], config,
                           int(config.graph.profile_max_facts))
    if not count:
        return None
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    return Summary(category=profile_category(entity["id"]), file_name=f"entities/{_slug(entity['name'], entity['id'])}.md",
                   text=text, item_ids=tuple(cited_ids(text)), version=f"{version_stamp(now)}-{digest}",
                   updated_at=now, summarizer="offline")


# Ranked lines a page is first written from: a page holds at most profile_max_facts, a few
# fall out as near-duplicates or too long, and the page is written again from all of them
# only when these run out first.
LINES_PER_PAGE = 200
SCORED_ROWS = 50_000  # items scored at a time (as dicts)


def profiles(items: pl.DataFrame, chosen: pl.DataFrame, edges: pl.DataFrame, config: MemoryConfig,
             now: datetime) -> list[Summary]:
    """The pages of the ``chosen`` entities (``important``, or some of them), in entity-id order.

    Each mentioned item is scored once, a chunk of rows at a time, and each entity's
    lines are ranked in polars: the important entities can be mentioned by most of a
    million items, which as dicts would not fit in memory."""
    if chosen.is_empty() or edges.is_empty() or items.is_empty():
        return []
    ids = chosen["id"].to_list()
    mentions = edges.filter((pl.col("kind") == "mentions") & pl.col("target").is_in(ids)).select("source", "target")
    about = items.filter(pl.col("id").is_in(mentions["source"].unique().implode()))
    eligible, scores = [], []
    for start in range(0, about.height, SCORED_ROWS):
        for row in about.slice(start, SCORED_ROWS).to_dicts():
            eligible.append(_eligible(row, now))
            scores.append(memory_score(config, row, now) if eligible[-1] else None)
    scored = (about.select("id", "content").with_columns(score=pl.Series(scores, dtype=pl.Float64))
              .filter(pl.Series(eligible, dtype=pl.Boolean)))
    ranked = (mentions.join(scored, left_on="source", right_on="id", how="inner")
              .sort(["target", "score", "source"], descending=[False, True, False]))
    lines = {target: list(zip(content, source)) for target, content, source in
             ranked.group_by("target", maintain_order=True).head(LINES_PER_PAGE)
             .group_by("target", maintain_order=True).agg("content", "source").iter_rows()}
    counts = dict(ranked.group_by("target").len().iter_rows())
    out = []
    for entity in chosen.sort("id").to_dicts():
        eid = entity["id"]
        page = _page(entity, lines.get(eid, []), config, now)
        if counts.get(eid, 0) > LINES_PER_PAGE and (page is None or len(page.item_ids) < int(config.graph.profile_max_facts)):
            every = ranked.filter(pl.col("target") == eid).select("content", "source").rows()
            page = _page(entity, every, config, now)
        if page is not None:
            out.append(page)
    return out


def changed_entities(edges: pl.DataFrame, changed_items: set[str]) -> set[str]:
    """The entities a changed item mentions: their profiles are rewritten."""
    if edges.is_empty() or not changed_items:
        return set()
    hit = edges.filter((pl.col("kind") == "mentions") & pl.col("source").is_in(list(changed_items)))
    return set(hit["target"].to_list())
