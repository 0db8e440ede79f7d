"""Each item's source text: the turns it came from, as they were said, and the turns around them.

An atomic fact paraphrases ("Melanie is starting to realize that self-care is really
important"); a later question asks in the speaker's own words ("carving out me-time").
So full-text search reads each item's content together with the text of exactly the
turns in its ``source_resource_ids`` (``source_text``), each with the day it was said
(``search_texts``, LanceDB's ``search_text`` column): either wording finds the item, and
"in May 2023" finds what was said that month. Only the item's content is ever injected,
and the text is not stored with the items: it is derived from the resources each time
the items are written.

A turn also leans on the turns around it: "I'm super stoked for the Harry Potter stuff"
answers "Have you been to Universal Studios?". So the search text also holds the
``CONTEXT_TURNS`` turns before and after each of its source turns in the same session
(``context_text``; contextual retrieval). On
the LoCoMo retrieval eval this lifted recall@10 from 0.751 (own turns only) to 0.778
with one turn before, 0.793 with one each side, 0.811 with two each side, and 0.803
with three (README). The context never becomes a fact and is never injected.

Resources are append-only and credential-redacted at ingest, so the text needs no
second redaction here.
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

# A fact restated in many sessions merges into one item with every source; its first
# turns say it well enough, and a search document of dozens of turns would match anything.
MAX_TURNS = 8
# Turns each side of a source turn, in its session, that give it context.
CONTEXT_TURNS = 2

_TEXTS_SCHEMA = {"resource_id": pl.String, "line": pl.String, "session_id": pl.String, "position": pl.Int64}


def turn_line(speaker: str | None, content: str, said_at: datetime | None) -> str:
    """``[8 May 2023] Caroline: I went to a LGBTQ support group yesterday…``, on one line."""
    who = f"{speaker}: " if speaker else ""
    when = f"[{said_at.day} {said_at:%B %Y}] " if said_at is not None else ""
    return f"{when}{who}{' '.join(content.split())}"


def turn_texts(resources: pl.DataFrame) -> pl.DataFrame:
    """``resource_id`` → ``line`` (``turn_line``), ``session_id`` and ``position`` (the
    turn's place in its session, 0-based) for every resource (RESOURCE_SCHEMA rows; a
    frame without ``session_id``/``turn`` is one session in row order)."""
    if resources.is_empty():
        return pl.DataFrame(schema=_TEXTS_SCHEMA)
    lines = [turn_line(s, c or "", t) for s, c, t in resources.select("speaker", "content", "content_at").iter_rows()]
    session = resources["session_id"] if "session_id" in resources.columns else pl.repeat("", resources.height, eager=True)
    turn = resources["turn"] if "turn" in resources.columns else pl.int_range(resources.height, eager=True)
    frame = pl.DataFrame({"resource_id": resources["resource_id"], "line": lines,
                          "session_id": session.cast(pl.String), "turn": turn.cast(pl.Int64)})
    frame = frame.unique("resource_id", keep="first", maintain_order=True)
    return frame.with_columns(
        position=(pl.col("turn").rank("ordinal").over("session_id") - 1).cast(pl.Int64)).drop("turn")


def attach(items: pl.DataFrame, texts: pl.DataFrame) -> pl.DataFrame:
    """``items`` with ``source_text`` (their source turns' lines, in source order, one per
    line, at most ``MAX_TURNS``) and ``context_text`` (the lines of the turns within
    ``CONTEXT_TURNS`` of those, in the same session, that are not sources themselves);
    each null when there is none."""
    if items.is_empty():
        return items.with_columns(source_text=pl.lit(None, dtype=pl.String), context_text=pl.lit(None, dtype=pl.String))
    sources = (
        items.select(pl.col("source_resource_ids").list.head(MAX_TURNS).alias("resource_id"))
        .with_row_index("item")
        .explode("resource_id")
        .with_columns(pl.int_range(pl.len()).over("item").alias("order"))
        .join(texts, on="resource_id", how="inner")
    )
    own = (sources.sort("item", "order").group_by("item", maintain_order=True)
           .agg(pl.col("line").str.join("\n").alias("source_text")))
    offsets = pl.DataFrame({"offset": [o for o in range(-CONTEXT_TURNS, CONTEXT_TURNS + 1) if o]}, schema={"offset": pl.Int64})
    around = (
        sources.select("item", "order", "session_id", "position").join(offsets, how="cross")
        .with_columns(pl.col("position") + pl.col("offset"))
        .join(texts.rename({"resource_id": "neighbour", "line": "context"}), on=["session_id", "position"], how="inner")
        .join(sources.select("item", pl.col("resource_id").alias("neighbour")), on=["item", "neighbour"], how="anti")
        .sort("item", "order", "offset")
        .unique(["item", "neighbour"], keep="first", maintain_order=True)
        .group_by("item", maintain_order=True)
        .agg(pl.col("context").str.join("\n").alias("context_text"))
    )
    joined = (items.with_row_index("item")
              .join(own, on="item", how="left").join(around, on="item", how="left").sort("item"))
    return joined.drop("item")


def search_texts(items: pl.DataFrame, texts: pl.DataFrame) -> pl.Series:
    """What full-text search reads of each item, in item order: its content, its source
    turns, then the turns around them (``attach``), one per line."""
    with_text = attach(items.select("content", "source_resource_ids"), texts)
    return with_text.select(pl.concat_str(["content", "source_text", "context_text"], separator="\n",
                                          ignore_nulls=True)).to_series()
