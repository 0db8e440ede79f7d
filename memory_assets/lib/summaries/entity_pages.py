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


def profile(entity: dict, rows: list[dict], config: MemoryConfig, now: datetime) -> Summary | None:
    """One entity's page from the items that mention it, written like an offline category
    summary (``writing.bulleted``); None when none may be summarized."""
    ranked = sorted((r for r in rows if _eligible(r, now)), key=lambda r: (-memory_score(config, r, now), r["id"]))
    text, count = bulleted(entity["name"], [(_one_line(r["content"]), [r["id"]]) for r in ranked], config,
                           int(config.graph.profile_max_facts))
    if not count:
        return None
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]
    return Summary(category=profile_category(entity["id"]), file_name=f"entities/{_slug(entity['name'], entity['id'])}.md",
                   text=text, item_ids=tuple(cited_ids(text)), version=f"{version_stamp(now)}-{digest}",
                   updated_at=now, summarizer="offline")


def profiles(items: pl.DataFrame, chosen: pl.DataFrame, edges: pl.DataFrame, config: MemoryConfig,
             now: datetime) -> list[Summary]:
    """The pages of the ``chosen`` entities (``important``, or some of them), in entity-id order."""
    if chosen.is_empty() or edges.is_empty() or items.is_empty():
        return []
    ids = chosen["id"].to_list()
    mentions = edges.filter((pl.col("kind") == "mentions") & pl.col("target").is_in(ids)).select("source", "target")
    by_id = {r["id"]: r for r in items.filter(pl.col("id").is_in(mentions["source"].unique().to_list())).to_dicts()}
    about: dict[str, list[dict]] = {}
    for source, target in mentions.iter_rows():
        if source in by_id:
            about.setdefault(target, []).append(by_id[source])
    out = []
    for entity in chosen.sort("id").to_dicts():
        page = profile(entity, about.get(entity["id"], []), config, now)
        if page is not None:
            out.append(page)
    return out


def changed_entities(edges: pl.DataFrame, changed_items: set[str]) -> set[str]:
    """The entities a changed item mentions: their profiles are rewritten."""
    if edges.is_empty() or not changed_items:
        return set()
    hit = edges.filter((pl.col("kind") == "mentions") & pl.col("source").is_in(list(changed_items)))
    return set(hit["target"].to_list())
