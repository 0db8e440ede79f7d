"""The one config: defaults in ``defaults.toml``, overridden by a TOML file of yours.

``load_config()`` reads ``defaults.toml`` shipped with this package, then deep-merges the
file named by the ``path`` argument, ``memory --config PATH`` or the ``MEMORY_CONFIG``
environment variable. Every section is a typed, frozen pydantic model that forbids unknown
keys, so a typo fails loudly instead of silently changing nothing::

    ConfigError: my.toml [ranking] memory_wieght: unknown key (did you mean memory_weight?)

Each key is documented where its default is set, in ``defaults.toml``. Code reads
attributes (``config.ranking.memory_weight``); tests and evals derive a variant with
``config.replace(ranking={"memory_weight": 1.0})``, which is validated the same way.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

DEFAULTS = Path(__file__).with_name("defaults.toml")


class ConfigError(ValueError):
    """The config file is unreadable, names an unknown key, or holds a value of the wrong type."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Category(_Section):
    name: str = ""
    weight: float = Field(ge=0.0, le=1.0)
    ttl_days: int = 0
    summary_file: str = ""
    keywords: tuple[str, ...] = ()
    # What the category is about, as phrases between commas: the offline extractor gives
    # a clause no keyword places the category of the nearest phrase, when clearly nearer
    # than its default (empty: chosen by keywords only).
    description: str = ""
    # What happens here is part of the person's story: its events are not transient.
    lasting: bool = False

    @field_validator("keywords")
    @classmethod
    def _lower(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(k.lower() for k in value)


class Importance(_Section):
    remember_boost: float
    action_required_boost: float
    untrusted_multiplier: float
    untrusted_cap: float


class Confidence(_Section):
    explicit: float
    implied: float
    inferred: float
    merge_bonus: float


class Tiers(_Section):
    permanent: tuple[str, ...]
    transient: tuple[str, ...]


class Decay(_Section):
    half_life_days: dict[str, float]
    inferred_half_life_days: float
    score_decay_per_day: float
    reinforce_step: float
    demote_step: float
    reinforcement_rate: float
    stale_after_days: float


class Ranking(_Section):
    memory_weight: float
    memory_floor: float
    untrusted_multiplier: float
    sentiment_match: float
    subject_match: float
    answer_match: float = 1.0
    same_source_penalty: float
    candidates: int


class Dedup(_Section):
    semantic_threshold: float = Field(gt=0.0, le=1.0)
    supersede_min_similarity: float = Field(ge=0.0, le=1.0)


class Gate(_Section):
    min_words: int
    max_chars: int
    min_confidence: float


class Injection(_Section):
    max_items: int
    budget_max_items: int
    token_budget: int
    uncertain_below: float
    conflict_similarity: float
    change_conflict_similarity: float
    summary_sufficient: float
    summary_coverage: float
    header: str
    min_similarity: float
    archived_multiplier: float
    cold_multiplier: float
    max_triggered: int = Field(ge=0)


class Embedding(_Section):
    provider: Literal["local", "openai"]
    local_model: str
    openai_model: str
    batch_size: int = Field(gt=0)
    query_threads: int = Field(ge=0)
    idle_query_threads: int = Field(ge=0)
    query_cache: int = Field(ge=1)
    runtime: Literal["onnx", "torch"]
    model_cache: str


class LLM(_Section):
    enabled: bool
    model: str
    timeout_seconds: float
    max_retries: int = Field(ge=0)
    transport_retries: int = Field(ge=0)
    max_words_per_request: int = Field(gt=0)
    temperature: float
    input_cost_per_mtok: float
    output_cost_per_mtok: float


class Ingest(_Section):
    max_message_bytes: int = Field(gt=0)


class Lifecycle(_Section):
    weekly_decay: dict[str, float]
    today_boost: float
    echo_boost: float
    fizzle_penalty: float
    priority_cap: float
    reinforce_multiplier: float
    confirm_bonus: float
    contradiction_penalty: float
    contradiction_similarity: float
    speculative_below: float
    speculative_ttl_days: float
    purge_below: float
    promote_importance: float
    promote_references: int
    promote_importance_untrusted: float
    promote_references_untrusted: int
    max_lessons: int = Field(ge=0)
    archive_after_days: float
    cold_after_days: float


class Summaries(_Section):
    max_items: int
    max_chars: int
    max_versions_kept: int = Field(ge=0)
    near_duplicate_overlap: float = Field(gt=0.0, le=1.0)


class Archive(_Section):
    min_cluster_size: int = Field(ge=2)
    min_samples: int = Field(ge=0)


class Jobs(_Section):
    nightly: float
    weekly: float
    monthly: float


class Pipeline(_Section):
    namespace: str
    sessions_per_run: int = Field(ge=1)
    sensor_seconds: int = Field(ge=1)
    extraction_seconds: float = Field(gt=0)
    # Categories whose facts are about the work of the session's project (scoped to it).
    project_categories: tuple[str, ...]


class Feedback(_Section):
    echo_similarity: float
    echo_overlap: float = Field(gt=0.0, le=1.0)


class Privacy(_Section):
    redact: tuple[str, ...]
    # gitignore patterns of files whose text never enters memory (retrieval.ignored_files).
    secret_files: tuple[str, ...] = ()

    @field_validator("redact", mode="before")
    @classmethod
    def _known_kinds(cls, value: Any) -> Any:
        from retrieval.credentials import PII_KINDS

        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise ValueError(f"must be a list of kinds (any of {', '.join(PII_KINDS)})")
        unknown = [k for k in value if k not in PII_KINDS]
        if unknown:
            raise ValueError(f"unknown kind(s) {', '.join(map(repr, unknown))}; known: {', '.join(PII_KINDS)}")
        return tuple(dict.fromkeys(value))


class Graph(_Section):
    relations: dict[str, str]
    single_valued: tuple[str, ...]
    attributes: dict[str, str]
    possessed_is_single: bool
    schedule_relations: tuple[str, ...]
    place_relations: tuple[str, ...]
    change_min_similarity: float = Field(ge=0.0, le=1.0)
    conflict_min_similarity: float = Field(ge=0.0, le=1.0)
    slot_min_similarity: float = Field(ge=0.0, le=1.0)
    slot_retire_similarity: float = Field(ge=0.0, le=1.0)
    kind_retire_similarity: float = Field(ge=0.0, le=1.0)
    kind_slot_floor: float = Field(ge=0.0, le=1.0)
    kind_min_similarity: float = Field(ge=0.0, le=1.0)
    change_model_retire: float = Field(ge=0.0, le=1.0)
    change_model_conflict: float = Field(ge=0.0, le=1.0)
    alias_min_similarity: float = Field(ge=0.0, le=1.0)
    expansion_depth: int = Field(ge=0, le=3)
    hop_decay: float = Field(gt=0.0, le=1.0)
    weight: float = Field(ge=0.0)
    max_seed_degree: int = Field(gt=0)
    edge_decay_per_night: float = Field(gt=0.0, le=1.0)
    edge_floor: float = Field(ge=0.0, le=1.0)
    reinforce_step: float = Field(ge=0.0, le=1.0)
    co_recall_confidence: float = Field(ge=0.0, le=1.0)
    profile_min_facts: int = Field(ge=1)
    profile_max_facts: int = Field(ge=1)
    profile_max_entities: int = Field(ge=0)


class Service(_Section):
    host: str
    port: int = Field(ge=0, le=65535)
    workers: int = Field(ge=1, le=64)
    writes_per_minute: int = Field(ge=1)
    max_request_bytes: int = Field(ge=1024)
    max_list: int = Field(ge=1)
    shared_penalty: float = Field(gt=0.0, le=1.0)
    checkpoint_dsn: str
    signal_scan: bool
    concurrent_searches: int = Field(ge=0)
    searches_per_key: int = Field(ge=0)


class MemoryConfig(_Section):
    categories: dict[str, Category]
    importance: Importance
    confidence: Confidence
    tiers: Tiers
    decay: Decay
    dedup: Dedup
    ranking: Ranking
    gate: Gate
    injection: Injection
    embedding: Embedding
    llm: LLM
    ingest: Ingest
    pipeline: Pipeline
    jobs: Jobs
    lifecycle: Lifecycle
    summaries: Summaries
    archive: Archive
    feedback: Feedback
    privacy: Privacy
    graph: Graph
    service: Service
    source: tuple[str, ...] = ()

    @property
    def llm_enabled(self) -> bool:
        """Whether the LLM paths are on (extraction, summaries, insights, query rewrite):
        only when chosen — ``[llm] enabled = true`` or ``MEMORY_EXTRACTOR=llm`` — never
        because ``OPENAI_API_KEY`` happens to be set (a silent switch to a paid path)."""
        return self.llm.enabled or os.environ.get("MEMORY_EXTRACTOR", "").strip() == "llm"

    @property
    def default_namespace(self) -> str:
        """The namespace of whatever is handed over without one (a transcript without a user,
        an item or turn whose ``namespace`` is null): ``[pipeline] namespace``. Everything
        asks this one property (``tests/test_one_home.py``)."""
        return str(self.pipeline.namespace)

    def category(self, name: str) -> Category:
        try:
            return self.categories[name]
        except KeyError:
            raise ConfigError(
                f"unknown category {name!r}; configured: {', '.join(self.categories)}"
            ) from None

    def confidence_for(self, strength: str) -> float:
        if strength not in ("explicit", "implied", "inferred"):
            raise ConfigError(f"unknown strength {strength!r}; known: explicit, implied, inferred")
        return float(getattr(self.confidence, strength))

    def tier_for(self, kind: str, category: str | None = None) -> str:
        """The tier a ``kind`` lands in (``[tiers]``); in a ``lasting`` category a
        transient kind is standard instead: "Caroline went to a support group on 7 May"
        is autobiography, not chatter to forget in weeks."""
        if kind in self.tiers.permanent:
            return "permanent"
        if kind in self.tiers.transient:
            lasting = category in self.categories and self.categories[category].lasting
            return "standard" if lasting else "transient"
        return "standard"

    def replace(self, **sections: dict[str, Any]) -> MemoryConfig:
        """This config with some keys changed, validated like a file:
        ``config.replace(ranking={"memory_weight": 1.0})``."""
        return _build(_merge(self._raw(), sections), [*self.source, "replace()"])

    def _raw(self) -> dict[str, Any]:
        raw = self.model_dump(exclude={"source"})
        for name, spec in raw["categories"].items():
            spec.pop("name", None)
        return raw


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


def _known_keys(loc: tuple[Any, ...]) -> list[str]:
    """The keys allowed where ``loc`` points: the fields of that section."""
    model: type[BaseModel] = MemoryConfig
    parts = [str(p) for p in loc[:-1]]
    while parts:
        part = parts.pop(0)
        if model is MemoryConfig and part == "categories":
            parts = parts[1:]  # the category's name
            model = Category
            continue
        annotation = model.model_fields[part].annotation if part in model.model_fields else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return [k for k in model.model_fields if k not in ("name", "source")]


def _describe(error: dict[str, Any], source: str) -> str:
    loc = tuple(error["loc"])
    section = f"[{'.'.join(str(p) for p in loc[:-1])}] " if len(loc) > 1 else ""
    key = str(loc[-1]) if loc else ""
    if error["type"] == "extra_forbidden":
        close = difflib.get_close_matches(key, _known_keys(loc), n=1)
        if len(loc) == 1:
            return f"{source} [{key}]: unknown section" + (f" (did you mean [{close[0]}]?)" if close else "")
        return f"{source} {section}{key}: unknown key" + (f" (did you mean {close[0]}?)" if close else "")
    if error["type"] == "missing":
        return f"{source} {section}{key}: missing key"
    return f"{source} {section}{key}: {error['msg'].removeprefix('Value error, ')} (got {error.get('input')!r})"


def _build(raw: dict[str, Any], sources: list[str]) -> MemoryConfig:
    raw = dict(raw)
    raw["categories"] = {name: {**spec, "name": name, "summary_file": spec.get("summary_file") or f"{name}.md"}
                         if isinstance(spec, dict) else spec
                         for name, spec in (raw.get("categories") or {}).items()}
    try:
        return MemoryConfig(**raw, source=tuple(sources))
    except ValidationError as exc:
        raise ConfigError("; ".join(_describe(e, sources[-1]) for e in exc.errors())) from None


@lru_cache(maxsize=8)
def _load(path: str | None) -> MemoryConfig:
    raw = _read_toml(DEFAULTS)
    sources = ["defaults.toml"]
    if path:
        raw = _merge(raw, _read_toml(Path(path)))
        sources.append(path)
    return _build(raw, sources)


def load_config(path: str | os.PathLike[str] | None = None) -> MemoryConfig:
    """Load the config.

    Args:
        path: a TOML file whose keys override the defaults; when omitted,
            ``MEMORY_CONFIG`` is used if set (``memory --config PATH`` sets it).
    """
    chosen = path if path is not None else os.environ.get("MEMORY_CONFIG") or None
    return _load(str(chosen) if chosen else None)
