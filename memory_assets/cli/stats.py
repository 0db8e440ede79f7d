"""``memory stats``: counts over what the pipeline has stored and published."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from memory_assets.lib.ingest import intake
from memory_assets.lib.extraction import quarantine
from retrieval.paths import DataRoot
from retrieval.store import ItemStore


def _count_rows(folder: Path, pattern: str) -> int:
    files = list(folder.glob(pattern)) if folder.exists() else []
    return sum(pl.scan_parquet(str(f)).select(pl.len()).collect().item() for f in files)


def collect_stats(data_root: str | Path | None = None) -> dict[str, Any]:
    paths = DataRoot.resolve(data_root)
    store = ItemStore(paths)
    items = store.items()
    active = items.filter(pl.col("status") == "active") if items.height else items
    rejections = (pl.concat([pl.read_parquet(str(f)) for f in paths.rejections.glob("*.parquet")])
                  if paths.rejections.exists() and any(paths.rejections.glob("*.parquet")) else None)
    return {
        "data_root": str(paths.root),
        "sessions": len(intake.inbox_files(paths)),
        "pending_sessions": len(intake.pending_files(paths)),
        "resources": _count_rows(paths.resources, "*/part-*.parquet"),
        "extracted_facts": _count_rows(paths.extracted_facts, "*.parquet"),
        "items": items.height,
        "active_items": active.height,
        "items_by_status": dict(items.group_by("status").len().iter_rows()) if items.height else {},
        "active_by_category": dict(active.group_by("category").len().sort("len", descending=True).iter_rows()) if active.height else {},
        "active_by_tier": dict(active.group_by("tier").len().iter_rows()) if active.height else {},
        "untrusted_active_items": int((active["source_trust"] == "untrusted").sum()) if active.height else 0,
        "rejections_by_reason": dict(rejections.group_by("reason").len().iter_rows()) if rejections is not None and rejections.height else {},
        "quarantined_sessions": quarantine.quarantined_sessions(paths),
        "published_version": store.published_version(),
    }
