"""The suite for documents built from items: category summaries, archive insights, the health report.

They share one contract: there is at least one, each is non-empty and within its size
cap, names are unique, every item id it cites exists, and no credential slipped in
through a summarizer. Each asset's check is one call, e.g. for summaries::

    citations_report(summaries, id_column="category", text_column="markdown",
                     cited_column="item_ids", item_ids=ItemStore(paths).items()["id"],
                     max_chars=config.summaries.max_chars, subject="category_summaries")
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from memory_assets.lib.quality.credential_scan import credential_kinds
from memory_assets.lib.quality.suite_report import QualityReport
from memory_assets.lib.quality.validation import Rule, validate


def citation_rules(id_column: str, max_chars: int, *, min_rows: int) -> list[Rule]:
    return [
        Rule("not_empty", "ExpectTableRowCountToBeBetween", "ERROR",
             "retrieval's tier 1 has something to answer from", {"min_value": min_rows}),
        Rule(f"{id_column}_unique", "ExpectColumnValuesToBeUnique", "ERROR",
             "one document per name", {"column": id_column}),
        Rule("text_within_size_cap", "ExpectColumnValuesToBeBetween", "ERROR",
             f"every document has text, and at most {max_chars:,} characters fit the injection budget",
             {"column": "text_chars", "min_value": 1, "max_value": max_chars}),
        Rule("cited_items_exist", "ExpectColumnValuesToBeNull", "ERROR",
             "every line points at items the agent can open; a dangling citation is an invented fact",
             {"column": "unknown_citations"}),
        Rule("no_credentials", "ExpectColumnValuesToBeNull", "ERROR",
             "a credential never reaches an agent's prompt (zero tolerance)", {"column": "credential"}),
    ]


def citations_report(frame: pl.DataFrame, *, id_column: str, text_column: str, cited_column: str,
                     item_ids: Iterable[str] | pl.Series, max_chars: int, subject: str,
                     min_rows: int = 1) -> QualityReport:
    """Check documents that cite items.

    Args:
        frame: one row per document.
        id_column: the document's name (``category``, ``cluster_id``).
        text_column: its text (``markdown``, ``insight``).
        cited_column: a list column of the item ids it cites.
        item_ids: every item id that exists (the published items).
        max_chars: the size cap of one document's text.
        subject: what is checked, for the summary line.
        min_rows: how many documents there must be at least (0 when none is fine).
    """
    known = item_ids if isinstance(item_ids, pl.Series) else pl.Series(list(item_ids), dtype=pl.String)
    cited = frame.select(pl.int_range(pl.len()).alias("_row"), pl.col(cited_column).alias("cited")).explode("cited")
    unknown = (cited.filter(pl.col("cited").is_not_null() & ~pl.col("cited").is_in(known.implode()))
               .group_by("_row").agg(pl.col("cited").str.join(",")))
    unknown_by_row = (frame.select(pl.int_range(pl.len()).alias("_row"))
                      .join(unknown, on="_row", how="left").sort("_row")["cited"])
    derived = frame.with_columns(
        text_chars=pl.col(text_column).str.len_chars().fill_null(0),
        unknown_citations=unknown_by_row,
        credential=credential_kinds(frame[text_column]),
    )
    return validate(derived, citation_rules(id_column, max_chars, min_rows=min_rows), subject=subject,
                    id_column=id_column, context_columns=(text_column,))


# A lesson or a trigger message is one line of an agent's prompt.
LIFECYCLE_MAX_CHARS = 1_000


def lifecycle_frame(lessons: list[str], triggers: pl.DataFrame) -> pl.DataFrame:
    """The lessons and forward triggers as documents: a name, a text and the items cited
    (a lesson cites none: it is the wording of an item already checked)."""
    rows = [{"name": f"lesson {i + 1}", "text": text, "cited": []} for i, text in enumerate(lessons)]
    for i, trigger in enumerate(triggers.iter_rows(named=True)):
        rows.append({"name": f"trigger {i + 1} ({trigger['trigger_date']})", "text": trigger["message"],
                     "cited": list(trigger["item_ids"] or [])})
    return pl.DataFrame(rows, schema={"name": pl.String, "text": pl.String, "cited": pl.List(pl.String)})


def lifecycle_report(lessons: list[str], triggers: pl.DataFrame, item_ids: Iterable[str] | pl.Series) -> QualityReport:
    """The lessons and triggers ``MemoryClient.lessons()``/``due_triggers()`` return: each
    non-empty, one line's size, credential-free, citing only items that exist (none at
    all is fine: a new store has no lessons yet)."""
    return citations_report(lifecycle_frame(lessons, triggers), id_column="name", text_column="text",
                            cited_column="cited", item_ids=item_ids, max_chars=LIFECYCLE_MAX_CHARS,
                            subject="lifecycle", min_rows=0)
