"""The conflict suite: slots the store gives two values and nobody settled.

A later fact that contradicts an earlier one without a rule sure enough to retire it
(``lib/items/validity``), or a contradiction the lifecycle found, leaves both active,
linked by ``contradicts``: the agent is shown both, marked ``[conflict]``, newest first.
That is the right answer for a night, not for ever. The nightly run reports every active
item still contradicted by another active item (a WARN: publishing goes on), so someone
can settle it (``memory update``, ``memory forget``) or the user's next word does.
"""

from __future__ import annotations

import polars as pl

from memory_assets.lib.quality.suite_report import QualityReport
from memory_assets.lib.quality.validation import Rule, validate
from retrieval.spans import spanned

CONFLICT_RULES = [
    Rule("conflicts_resolved", "ExpectColumnValuesToBeNull", "WARN",
         "an active item contradicted by another active item is served marked [conflict] until one side is "
         "retired: settle it with `memory update` or `memory forget`",
         {"column": "unresolved_with"}),
]


def unresolved(items: pl.DataFrame) -> pl.DataFrame:
    """Active items with the active item each first contradicts (``unresolved_with``)."""
    active = items.filter(pl.col("status") == "active")
    # Exploded and joined, not filtered inside each list (that would hold every active
    # id once per row: 10^10 at 100k items).
    links = (active.select("id", pl.col("contradicts").alias("unresolved_with")).explode("unresolved_with")
             .join(active.select(pl.col("id").alias("unresolved_with")), on="unresolved_with", how="semi")
             .group_by("id", maintain_order=True).agg(pl.col("unresolved_with").first()))
    return active.select("id", "namespace", "content").join(links, on="id", how="left", maintain_order="left")


@spanned("quality: conflict suite")
def conflicts_report(items: pl.DataFrame, *, subject: str = "published items") -> QualityReport:
    """Which active items stand in an unresolved conflict (WARN when any does)."""
    return validate(unresolved(items), CONFLICT_RULES, subject=subject, id_column="id",
                    context_columns=("namespace", "content"))
