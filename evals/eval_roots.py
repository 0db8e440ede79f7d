"""The retrieval eval's data roots: each LoCoMo conversation ingested and run through the
pipeline as the product runs it, as of a day after its last session, built once per
``build_key`` (dataset, extractor, code versions, config) and cached."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from evals.locomo import Conversation
from retrieval.config import load_config
from retrieval.paths import DataRoot


# Bump when how the eval builds a data root changes (here: the nightly job runs after the
# first build, so category summaries exist), so roots built the old way are not reused.
BUILD_RECIPE = "3"
# Config sections only retrieval reads; every other section can change what a build holds.
QUERY_TIME_CONFIG = ("injection", "ranking", "source")


class EvalError(RuntimeError):
    """The eval could not build or read a conversation's memory; the message says which."""


# --- building each conversation's memory ------------------------------------------------

def default_cache_dir() -> Path:
    return Path(tempfile.gettempdir()) / "agent-memory-retrieval-eval"


def default_extractor() -> str:
    return "llm" if os.environ.get("OPENAI_API_KEY") else "offline"


def build_key(conv: Conversation, extractor: str) -> dict[str, str]:
    """Everything a built data root depends on; a change to any part rebuilds it."""
    from memory_assets.defs.extraction.assets import EXTRACTION_CODE_VERSION
    from memory_assets.defs.items.assets import memory_items
    from memory_assets.defs.summaries.assets import category_summaries

    config = load_config().model_dump(mode="json", exclude={"source"})
    # Read at question time, not build time: tuning them reuses the build.
    for section in QUERY_TIME_CONFIG:
        config.pop(section, None)
    if extractor != "llm":
        config.pop("llm", None)
    key = {
        "build_recipe": BUILD_RECIPE,
        "dataset_sha256": conv.sha256,
        "extractor": extractor,
        "extraction_code_version": EXTRACTION_CODE_VERSION,
        "items_code_version": str(memory_items.code_versions_by_key[memory_items.key]),
        "summaries_code_version": str(category_summaries.code_versions_by_key[category_summaries.key]),
        "config_sha256": hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest(),
    }
    if extractor == "llm":
        key["llm_endpoint"] = os.environ.get("OPENAI_BASE_URL", "")
    return key


def build_root(conv: Conversation, *, extractor: str, cache_dir: Path, rebuild: bool = False,
               progress: Callable[[str], None] | None = None) -> Path:
    """A data root holding ``conv`` ingested and materialized, built once per build key.

    The root is built under a temporary name and renamed into place, so an interrupted
    build never leaves a half-built root that looks cached.
    """
    import dagster as dg

    from memory_assets.lib.ingest.intake import ingest_paths
    from memory_assets.cli.runner import materialize_pending, run_job

    key = build_key(conv, extractor)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    final = cache_dir / f"{conv.sample_id}-{extractor}-{digest}"
    if final.exists() and not rebuild:
        return final
    cache_dir.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{conv.sample_id}-", dir=cache_dir))
    try:
        if progress:
            progress(f"building {conv.sample_id} ({extractor} extractor)")
        started = time.perf_counter()
        report = ingest_paths([conv.path], building)
        if not report.messages:
            raise EvalError(f"{conv.path}: nothing ingested ({'; '.join(report.errors) or 'no turns'})")
        # An ephemeral instance: the eval's runs do not belong in anyone's run history. The
        # lifecycle runs as of the questions' clock: against the wall clock a 2023
        # conversation would have decayed, expired and been purged long ago.
        # Then the nightly job, as the product runs it: items again (a no-op at the same
        # clock), the lifecycle and the category summaries that tier 1 answers from.
        with dg.DagsterInstance.ephemeral(settings={"telemetry": {"enabled": False}}) as instance:
            paths = DataRoot.resolve(building)
            summary = materialize_pending(paths, extractor=extractor, instance=instance, now=conv.now)
            if summary.failed or not summary.items_materialized:
                raise EvalError(f"{conv.path}: the pipeline failed for {', '.join(summary.failed) or 'memory_items'}")
            if not run_job(paths, "nightly", now=conv.now, extractor=extractor, instance=instance):
                raise EvalError(f"{conv.path}: the nightly job failed (memory_items, lifecycle or category_summaries)")
        (building / "eval_build.json").write_text(json.dumps({
            **key, "sessions": len(report.sessions), "turns": report.messages,
            "quarantined": summary.quarantined, "build_seconds": round(time.perf_counter() - started, 1),
        }, indent=2))
        if final.exists():
            shutil.rmtree(final)
        os.replace(building, final)
    finally:
        if building.exists():
            shutil.rmtree(building, ignore_errors=True)
    return final
