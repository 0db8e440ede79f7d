"""Promotion into MEMORY.md: what the agent has learned for good.

An item is promoted when it is important and users confirmed it repeatedly — above
``lifecycle.promote_importance`` (0.8) with at least ``promote_references`` (3)
user-confirmed references; untrusted items need 0.9 and 5. Injection is never a
reference, so being shown often promotes nothing. Promotion is a ratchet: an item leaves
MEMORY.md only by leaving ``active`` (superseded, archived, purged, forgotten).
"""

from __future__ import annotations

import polars as pl

from retrieval.config import MemoryConfig
from retrieval.spans import spanned

HEADER = "# MEMORY"
INTRO = ("What this agent has learned for good: important memories users confirmed again and again, "
         "promoted by the nightly lifecycle. Generated; edits here are overwritten.")


def should_promote(config: MemoryConfig, row: dict) -> bool:
    """``row`` is scored: its importance is already reinforced and decayed."""
    cfg = config.lifecycle
    untrusted = row.get("source_trust") == "untrusted"
    importance_bar = cfg.promote_importance_untrusted if untrusted else cfg.promote_importance
    references_bar = cfg.promote_references_untrusted if untrusted else cfg.promote_references
    return float(row.get("importance") or 0.0) > importance_bar and int(row.get("reference_count") or 0) >= references_bar


@spanned("MEMORY.md")
def memory_md(items: pl.DataFrame) -> str:
    """MEMORY.md: active promoted items, one section per category (alphabetical), most
    important first. No timestamps, so an unchanged memory gives a byte-identical file."""
    lines = [HEADER, "", INTRO]
    promoted = items.filter((pl.col("status") == "active") & pl.col("promoted").fill_null(False))
    if promoted.is_empty():
        return "\n".join([*lines, "", "_Nothing promoted yet._", ""])
    promoted = promoted.sort(["category", "importance", "content", "id"], descending=[False, True, False, False])
    for (category,), group in promoted.group_by("category", maintain_order=True):
        lines += ["", f"## {str(category).capitalize()}", ""]
        for row in group.iter_rows(named=True):
            mark = " [untrusted]" if row.get("source_trust") == "untrusted" else ""
            lines.append(f"- {row['content'].strip()}{mark}")
    return "\n".join(lines) + "\n"
