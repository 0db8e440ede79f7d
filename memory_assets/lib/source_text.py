"""Each item's source text: the turns it came from, as they were said.

An atomic fact paraphrases ("Melanie is starting to realize that self-care is really
important"); a later question asks in the speaker's own words ("carving out me-time").
So every item keeps the text of exactly the turns in its ``source_resource_ids`` — never
a neighbouring turn — each with the day it was said, and full-text search reads it with
the content (``publish.search_text``): either wording finds the item, and "in May 2023"
finds what was said that month. Only the item's content is ever injected.

Resources are append-only and credential-redacted at ingest, so the text needs no
second redaction here.
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

# A fact restated in many sessions merges into one item with every source; its first
# turns say it well enough, and a search document of dozens of turns would match anything.
MAX_TURNS = 8


def turn_line(speaker: str | None, content: str, said_at: datetime | None) -> str:
    """``[8 May 2023] Caroline: I went to a LGBTQ support group yesterday…``, on one line."""
    who = f"{speaker}: " if speaker else ""
    when = f"[{said_at.day} {said_at:%B %Y}] " if said_at is not None else ""
    return f"{when}{who}{' '.join(content.split())}"


def turn_texts(resources: pl.DataFrame) -> pl.DataFrame:
    """``resource_id`` → ``line`` (``turn_line``) for every resource (RESOURCE_SCHEMA rows)."""
    if resources.is_empty():
        return pl.DataFrame(schema={"resource_id": pl.String, "line": pl.String})
    lines = [turn_line(s, c or "", t) for s, c, t in resources.select("speaker", "content", "content_at").iter_rows()]
    return pl.DataFrame({"resource_id": resources["resource_id"], "line": lines}).unique("resource_id", keep="first")


def attach(items: pl.DataFrame, texts: pl.DataFrame) -> pl.DataFrame:
    """``items`` with ``source_text``: their source turns' lines, in source order, one per
    line (at most ``MAX_TURNS``); null for an item none of whose resources is known."""
    if items.is_empty():
        return items.with_columns(source_text=pl.lit(None, dtype=pl.String))
    sources = (
        items.select("id", pl.col("source_resource_ids").list.head(MAX_TURNS).alias("resource_id"))
        .with_row_index("position")
        .explode("resource_id")
        .with_columns(pl.int_range(pl.len()).over("position").alias("order"))
        .join(texts, on="resource_id", how="inner")
        .sort("position", "order")
        .group_by("position", maintain_order=True)
        .agg(pl.col("line").str.join("\n").alias("text"))
    )
    joined = items.with_row_index("position").join(sources, on="position", how="left").sort("position")
    return joined.with_columns(source_text=pl.col("text")).drop("position", "text")
