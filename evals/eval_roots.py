"""The retrieval eval's data roots: each LoCoMo conversation ingested and run through the
pipeline's own stage steps, in process (no Dagster run), as of a day after its last
session, built once per ``build_key`` (dataset, extractor, the pipeline's code, config)
and cached.

The steps are the ones the assets call (``lib/<stage>``), in the order the asset graph
runs them: store each session's turns, extract them, stage the items, audit them,
publish them; then the nightly work as of the same clock (the lessons and triggers, the
category summaries tier 1 answers from).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import memory_assets.lib as pipeline
import prompts as prompt_files
import retrieval
from evals.locomo import Conversation
from retrieval.config import MemoryConfig
from retrieval.embeddings import Embedder
from retrieval.paths import DataRoot


# Bump when how the eval builds a data root changes, so roots built the old way are not
# reused (4: built in process by the stage steps, keyed by the pipeline's source;
# 5: the items built once).
BUILD_RECIPE = "5"
# Config sections only retrieval reads; every other section can change what a build holds.
QUERY_TIME_CONFIG = ("injection", "ranking", "source")
# The code a built root depends on: any change to the pipeline's or the reader's source rebuilds it.
CODE = tuple(Path(package.__file__).parent for package in (pipeline, retrieval, prompt_files))


class EvalError(RuntimeError):
    """The eval could not build or read a conversation's memory; the message says which."""


# --- building each conversation's memory ------------------------------------------------

def default_cache_dir() -> Path:
    return Path(tempfile.gettempdir()) / "agent-memory-retrieval-eval"


def default_extractor() -> str:
    return "llm" if os.environ.get("OPENAI_API_KEY") else "offline"


@functools.cache
def code_sha256() -> str:
    """One hash of every source file the pipeline builds a data root with (read once per process)."""
    digest = hashlib.sha256()
    for folder in CODE:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.suffix in (".py", ".md", ".toml"):
                digest.update(str(path.relative_to(folder.parent)).encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()


def build_key(conv: Conversation, extractor: str, config: MemoryConfig) -> dict[str, str]:
    """Everything a built data root depends on; a change to any part rebuilds it."""
    shaping = config.model_dump(mode="json", exclude={"source"})
    # Read at question time, not build time: tuning them reuses the build.
    for section in QUERY_TIME_CONFIG:
        shaping.pop(section, None)
    if extractor != "llm":
        shaping.pop("llm", None)
    key = {
        "build_recipe": BUILD_RECIPE,
        "dataset_sha256": conv.sha256,
        "extractor": extractor,
        "code_sha256": code_sha256(),
        "config_sha256": hashlib.sha256(json.dumps(shaping, sort_keys=True, default=str).encode()).hexdigest(),
    }
    if extractor == "llm":
        key["llm_endpoint"] = os.environ.get("OPENAI_BASE_URL", "")
    return key


def build_root(conv: Conversation, *, config: MemoryConfig, extractor: str, cache_dir: Path, rebuild: bool = False,
               progress: Callable[[str], None] | None = None) -> Path:
    """A data root holding ``conv`` ingested and materialized, built once per build key.

    The root is built under a temporary name and renamed into place, so an interrupted
    build never leaves a half-built root that looks cached.
    """
    key = build_key(conv, extractor, config)
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
        built = build(conv, building, extractor, config)
        (building / "eval_build.json").write_text(json.dumps({
            **key, **built, "build_seconds": round(time.perf_counter() - started, 1),
        }, indent=2))
        if final.exists():
            shutil.rmtree(final)
        os.replace(building, final)
    finally:
        if building.exists():
            shutil.rmtree(building, ignore_errors=True)
    return final


def build(conv: Conversation, root: Path, extractor: str, config: MemoryConfig) -> dict[str, int]:
    """Run ``conv`` through the pipeline's stage steps into ``root`` with ``config``, as of ``conv.now``.

    The lifecycle runs as of the questions' clock: against the wall clock a 2023
    conversation would have decayed, expired and been purged long ago.
    """
    from memory_assets.lib.extraction.session import choose_extractor, extract_session
    from memory_assets.lib.ingest.intake import ingest_paths, store_session
    from memory_assets.lib.lifecycle.housekeeping import publish_housekeeping
    from memory_assets.lib.summaries import update_summaries

    report = ingest_paths([conv.path], root, config)
    if not report.messages:
        raise EvalError(f"{conv.path}: nothing ingested ({'; '.join(report.errors) or 'no turns'})")
    paths, now = DataRoot.resolve(root), conv.now
    impl = choose_extractor(extractor, config)
    quarantined = 0
    for session_id in report.sessions:
        store_session(paths, session_id, config, now)
        quarantined += extract_session(paths, session_id, impl, config, now).failed is not None
    model = Embedder(config)
    # The items once (the nightly job would build them again at the same clock, to the same
    # version), then the nightly's lessons and triggers and the category summaries.
    _publish_items(paths, model, config, now, conv)
    publish_housekeeping(paths, config, now)
    update_summaries(paths, model.embed, config, now)
    return {"sessions": len(report.sessions), "turns": report.messages, "quarantined": quarantined}


def _publish_items(paths: DataRoot, model: Embedder, config: MemoryConfig, now: datetime, conv: Conversation) -> None:
    """Stage, audit and publish the items, as ``memory_items``, its checks and ``published_items`` do."""
    from memory_assets.lib.items.staging import PublishRefused, audit_staged, publish_staged, stage_items

    stage_items(paths, model, config, now)
    audit_staged(paths, config)
    try:
        publish_staged(paths, now)
    except PublishRefused as refused:
        raise EvalError(f"{conv.path}: the items were not published: {refused}") from None
