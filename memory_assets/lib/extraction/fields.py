"""The typed fields a fact carries besides its wording (``Candidate``, ``FACT_SCHEMA``).

An extractor may give them; what it leaves out is read here, once, from what was said:
the ``directive`` of a rule-like fact (``directives``) and the future days it points to
(``remind_on``, ``retrieval.text.future_dates``). The same reading runs when the agent rewords an item
(``update``), so the fields follow the words. Nothing later parses the wording back:
lessons read ``directive``, forward triggers read ``remind_on``.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

import polars as pl

from memory_assets.lib.extraction.directives import directive_of
from retrieval.schema import FACT_SCHEMA
from retrieval.text import future_dates

TYPED = ("subject", "directive", "reported_by", "remind_on")


def read_fields(content: str, kind: str, said_at: datetime, *, directive: str | None = None,
                remind_on: list[date] | None = None) -> dict[str, Any]:
    """``directive`` and ``remind_on`` for a fact, the given ones first."""
    return {
        "directive": directive if directive is not None else directive_of(content, kind),
        "remind_on": list(remind_on) if remind_on is not None else future_dates(content, said_at),
    }


def with_fields(facts: pl.DataFrame) -> pl.DataFrame:
    """``facts`` with every typed field: a fact written before facts carried them
    (``remind_on`` null, not an empty list) has them read from its wording now, once
    per run until it is extracted again."""
    missing = [pl.lit(None, dtype=FACT_SCHEMA[c]).alias(c) for c in TYPED if c not in facts.columns]
    facts = facts.with_columns(missing) if missing else facts
    legacy = facts["remind_on"].is_null()
    if not legacy.any():
        return facts
    positions = pl.arg_where(legacy, eager=True).to_list()
    columns = {c: facts[c].to_list() for c in ("directive", "remind_on")}
    rows = facts.select("content", "kind", "created_at").rows()
    for pos in positions:
        content, kind, said_at = rows[pos]
        for column, value in read_fields(content, kind, said_at).items():
            columns[column][pos] = value
    return facts.with_columns(pl.Series(c, v, dtype=FACT_SCHEMA[c]) for c, v in columns.items())
