"""The one config: defaults in ``defaults.toml``, overridden by a TOML file of yours.

``load_config()`` reads ``defaults.toml`` shipped with this package, then deep-merges
the file named by the ``path`` argument or the ``MEMORY_CONFIG`` environment variable.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any


DEFAULTS = Path(__file__).with_name("defaults.toml")


class ConfigError(ValueError):
    """The config file is unreadable or names an unknown category, tier or kind."""


@dataclass(frozen=True)
class Category:
    name: str
    weight: float
    ttl_days: int
    summary_file: str
    keywords: tuple[str, ...] = ()
    # What happens here is part of the person's story: its events are not transient.
    lasting: bool = False


@dataclass(frozen=True)
class MemoryConfig:
    categories: dict[str, Category]
    importance: dict[str, float]
    confidence: dict[str, float]
    tiers: dict[str, tuple[str, ...]]
    decay: dict[str, Any]
    dedup: dict[str, float]
    ranking: dict[str, float]
    gate: dict[str, Any]
    injection: dict[str, Any]
    embedding: dict[str, Any]
    llm: dict[str, Any]
    ingest: dict[str, Any]
    pipeline: dict[str, Any]
    jobs: dict[str, float]
    lifecycle: dict[str, Any]
    summaries: dict[str, Any]
    archive: dict[str, Any]
    feedback: dict[str, Any] = field(default_factory=dict)
    privacy: dict[str, Any] = field(default_factory=dict)
    source: tuple[str, ...] = field(default=())

    @property
    def llm_enabled(self) -> bool:
        """Whether the LLM paths are on (extraction, summaries, insights, query rewrite):
        only when chosen — ``[llm] enabled = true`` or ``MEMORY_EXTRACTOR=llm`` — never
        because ``OPENAI_API_KEY`` happens to be set (a silent switch to a paid path)."""
        return bool(self.llm.get("enabled")) or os.environ.get("MEMORY_EXTRACTOR", "").strip() == "llm"

    def category(self, name: str) -> Category:
        try:
            return self.categories[name]
        except KeyError:
            raise ConfigError(
                f"unknown category {name!r}; configured: {', '.join(self.categories)}"
            ) from None

    def confidence_for(self, strength: str) -> float:
        return float(self.confidence[strength])

    def tier_for(self, kind: str, category: str | None = None) -> str:
        """The tier a ``kind`` lands in (``[tiers]``); in a ``lasting`` category a
        transient kind is standard instead: "Caroline went to a support group on 7 May"
        is autobiography, not chatter to forget in weeks."""
        for tier, kinds in self.tiers.items():
            if kind in kinds:
                lasting = category in self.categories and self.categories[category].lasting
                return "standard" if tier == "transient" and lasting else tier
        return "standard"


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None


@lru_cache(maxsize=8)
def _load(path: str | None) -> MemoryConfig:
    raw = _read_toml(DEFAULTS)
    sources = ["defaults.toml"]
    if path:
        raw = _merge(raw, _read_toml(Path(path)))
        sources.append(path)
    categories = {}
    for name, spec in raw["categories"].items():
        if not 0.0 <= float(spec.get("weight", -1)) <= 1.0:
            raise ConfigError(f"{sources[-1]}: category {name!r} needs a weight in [0, 1]")
        categories[name] = Category(
            name=name,
            weight=float(spec["weight"]),
            ttl_days=int(spec.get("ttl_days", 0)),
            summary_file=str(spec.get("summary_file", f"{name}.md")),
            keywords=tuple(k.lower() for k in spec.get("keywords", ())),
            lasting=bool(spec.get("lasting", False)),
        )
    return MemoryConfig(
        categories=categories,
        importance=raw["importance"],
        confidence=raw["confidence"],
        tiers={k: tuple(v) for k, v in raw["tiers"].items()},
        decay=raw["decay"],
        dedup=raw["dedup"],
        ranking=raw["ranking"],
        gate=raw["gate"],
        injection=raw["injection"],
        embedding=raw["embedding"],
        llm=raw["llm"],
        ingest=raw["ingest"],
        pipeline=raw["pipeline"],
        jobs=raw["jobs"],
        lifecycle=raw["lifecycle"],
        summaries=raw["summaries"],
        archive=raw["archive"],
        feedback=raw["feedback"],
        privacy=raw["privacy"],
        source=tuple(sources),
    )


def load_config(path: str | os.PathLike[str] | None = None) -> MemoryConfig:
    """Load the config.

    Args:
        path: a TOML file whose keys override the defaults; when omitted,
            ``MEMORY_CONFIG`` is used if set.
    """
    chosen = path if path is not None else os.environ.get("MEMORY_CONFIG") or None
    return _load(str(chosen) if chosen else None)
