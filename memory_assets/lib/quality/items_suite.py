"""The extracted-facts and memory-items suites: what may reach an agent's prompt.

Everything here protects the injected block: scores the ranking formula can use
(importance and confidence in [0, 1]), vocabularies retrieval understands (category,
kind, tier, status, trust), ids that mean one thing, supersession links that point
somewhere, sources that exist (DESIGN principle 2), no credential (zero tolerance), and
the untrusted-importance cap. Referential rules are computed in polars as a derived
column (the dangling id, the unknown source) that GX expects to be null, so the UI
shows the offending id itself.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from memory_assets.lib.quality.credential_scan import ScanLedger, credential_kinds
from memory_assets.lib.quality.suite_report import QualityReport
from memory_assets.lib.quality.validation import Rule, validate
from retrieval.config import MemoryConfig
from retrieval.projects import PATTERN as PROJECT_PATTERN
from retrieval.schema import (FACT_REQUIRED, ITEM_REQUIRED, KINDS, PROVENANCE, SCOPES, SENTIMENTS, STATUSES, STRENGTHS,
                              TIERS, TRUST)
from retrieval.spans import spanned

NO_SOURCE = "<no source_resource_ids>"


def _required(columns: Iterable[str]) -> Rule:
    return Rule("required_fields_present", "ExpectColumnValuesToBeNull", "ERROR",
                f"retrieval reads these fields on every row it ranks: {', '.join(columns)}",
                {"column": "missing_fields"})


def _in_set(name: str, column: str, values: Iterable[str], severity: str, protects: str) -> Rule:
    return Rule(name, "ExpectColumnValuesToBeInSet", severity, protects, {"column": column, "value_set": list(values)})


def shared_rules(config: MemoryConfig, required: Iterable[str] = FACT_REQUIRED) -> list[Rule]:
    """Rules every fact and every item meets."""
    cap = float(config.importance.untrusted_cap)
    return [
        _required(required),
        Rule("id_unique", "ExpectColumnValuesToBeUnique", "ERROR",
             "feedback, supersession and citations address a memory by id; one id, one memory",
             {"column": "id_key"}, show_column=False),
        Rule("importance_in_range", "ExpectColumnValuesToBeBetween", "ERROR",
             "the ranking formula multiplies by importance: outside [0, 1] one row outranks everything",
             {"column": "importance", "min_value": 0.0, "max_value": 1.0}),
        Rule("confidence_in_range", "ExpectColumnValuesToBeBetween", "ERROR",
             "confidence ranks and tags ([uncertain] below 0.3) what the agent sees",
             {"column": "confidence", "min_value": 0.0, "max_value": 1.0}),
        _in_set("category_configured", "category", config.categories, "ERROR",
                "categories drive weights, TTLs and the tier-1 summaries; an unknown one has none"),
        _in_set("kind_in_set", "kind", KINDS, "ERROR", "decay half-lives are per kind"),
        _in_set("tier_in_set", "tier", TIERS, "ERROR", "the permanent tier never decays; others do"),
        _in_set("source_trust_in_set", "source_trust", TRUST, "ERROR",
                "untrusted memories are tagged [untrusted] and down-weighted; an unknown trust is neither"),
        _in_set("strength_in_set", "strength", STRENGTHS, "WARN", "confidence is derived from strength"),
        _in_set("sentiment_in_set", "sentiment", SENTIMENTS, "WARN", "sentiment match is a ranking modifier"),
        _in_set("scope_in_set", "scope", SCOPES, "WARN", "scope limits where a memory is injected"),
        Rule("project_matches_scope", "ExpectColumnValuesToBeNull", "ERROR",
             "a project-scoped memory is injected only into its project: it must name a valid one, and a "
             "global memory none (else one project's memory reaches another's prompt, or none)",
             {"column": "project_mismatch"}),
        _in_set("provenance_in_set", "provenance", PROVENANCE, "WARN", "provenance explains where a memory came from"),
        Rule("sources_exist", "ExpectColumnValuesToBeNull", "ERROR",
             "every memory points back to stored turns it came from (nothing is lost, everything is traceable)",
             {"column": "unknown_sources"}),
        Rule("no_credentials", "ExpectColumnValuesToBeNull", "ERROR",
             "a credential never reaches an agent's prompt (zero tolerance)",
             {"column": "credential"}),
        Rule("untrusted_importance_capped", "ExpectColumnValuesToBeBetween", "ERROR",
             f"tool output and pasted data never outrank the user: untrusted importance ≤ {cap}",
             {"column": "untrusted_importance", "min_value": 0.0, "max_value": cap}),
    ]


def item_rules(config: MemoryConfig) -> list[Rule]:
    """Facts' rules plus the item lifecycle: status and supersession links."""
    return [
        *shared_rules(config, ITEM_REQUIRED),
        _in_set("status_in_set", "status", STATUSES, "ERROR",
                "only active items are injected; superseded, archived and purged ones never are"),
        Rule("supersedes_exists", "ExpectColumnValuesToBeNull", "ERROR",
             "a correction points at the item it replaced", {"column": "dangling_supersedes"}),
        Rule("superseded_by_exists", "ExpectColumnValuesToBeNull", "ERROR",
             "a superseded item points at its successor", {"column": "dangling_superseded_by"}),
    ]


def _unknown_sources(frame: pl.DataFrame, resource_ids: pl.Series | None) -> pl.Series:
    """Per row: the cited resource ids not stored in ``resources`` (comma-joined), or null."""
    rows = frame.select(pl.int_range(pl.len()).alias("_row"), pl.col("source_resource_ids").alias("rid"))
    empty = rows.select(pl.col("rid").is_null() | (pl.col("rid").list.len() == 0)).to_series()
    if resource_ids is None:
        return pl.Series("unknown_sources", [NO_SOURCE if e else None for e in empty.to_list()], dtype=pl.String)
    exploded = rows.explode("rid").filter(pl.col("rid").is_not_null() & ~pl.col("rid").is_in(resource_ids.implode()))
    unknown = exploded.group_by("_row").agg(pl.col("rid").str.join(","))
    joined = rows.select("_row").join(unknown, on="_row", how="left").sort("_row")["rid"]
    return (pl.DataFrame({"rid": joined, "empty": empty})
            .select(pl.when(pl.col("empty")).then(pl.lit(NO_SOURCE)).otherwise(pl.col("rid")))
            .to_series().rename("unknown_sources"))


def _dangling(column: str, ids: pl.Series) -> pl.Expr:
    """The linked id when no row in the frame has it, else null."""
    return pl.when(pl.col(column).is_not_null() & ~pl.col(column).is_in(ids.implode())).then(pl.col(column))


def _missing_fields(frame: pl.DataFrame, required: Iterable[str]) -> pl.Expr:
    """Per row: the required fields that are null or absent (comma-joined), or null."""
    flags = [pl.when(pl.col(c).is_null()).then(pl.lit(c)) if c in frame.columns else pl.lit(c) for c in required]
    joined = pl.concat_str(flags, separator=",", ignore_nulls=True)
    return pl.when(joined != "").then(joined)


def _project_mismatch(frame: pl.DataFrame) -> pl.Expr:
    """Per row: what is wrong with its scope and project (``scope = "project"`` iff a valid
    ``project``), or null. A frame written before projects has neither: global, fine."""
    scope = pl.col("scope").cast(pl.String) if "scope" in frame.columns else pl.lit(None, dtype=pl.String)
    project = pl.col("project").cast(pl.String) if "project" in frame.columns else pl.lit(None, dtype=pl.String)
    scoped = scope == "project"
    return (pl.when(scoped & project.is_null()).then(pl.lit("project scope without a project"))
            .when(~scoped.fill_null(False) & project.is_not_null()).then(pl.lit("a project on a non-project scope"))
            .when(project.is_not_null() & ~project.str.contains(PROJECT_PATTERN)).then(pl.lit("invalid project name")))


def _derived(frame: pl.DataFrame, required: Iterable[str], resource_ids: pl.Series | None,
             ledger: ScanLedger | None) -> pl.DataFrame:
    content = frame["content"] if "content" in frame.columns else pl.Series("content", [None] * frame.height, pl.String)
    derived = frame.with_columns(
        missing_fields=_missing_fields(frame, required),
        # Uniqueness is tested on a 64-bit hash of the id: equal ids always collide, so no
        # duplicate is missed (a false alarm has odds ~1e-10 at 100k ids), and GX handles
        # integers far faster than 100k strings.
        id_key=pl.col("id").hash(seed=0) if "id" in frame.columns else pl.lit(None, dtype=pl.UInt64),
        credential=credential_kinds(content, ledger),
        unknown_sources=_unknown_sources(frame, resource_ids) if "source_resource_ids" in frame.columns
        else pl.lit(NO_SOURCE),
        project_mismatch=_project_mismatch(frame),
    )
    if {"source_trust", "importance"} <= set(frame.columns):
        derived = derived.with_columns(
            untrusted_importance=pl.when(pl.col("source_trust") == "untrusted").then(pl.col("importance")))
    return derived


def _as_series(ids: Iterable[str] | pl.Series | None) -> pl.Series | None:
    if ids is None or isinstance(ids, pl.Series):
        return ids
    return pl.Series("resource_id", list(ids), dtype=pl.String)


def facts_report(facts: pl.DataFrame, config: MemoryConfig, *, resource_ids: Iterable[str] | pl.Series | None,
                 ledger: ScanLedger | None = None, subject: str = "extracted_facts") -> QualityReport:
    """Check extracted facts (FACT_SCHEMA rows).

    Args:
        facts: the facts, e.g. one session's.
        config: the config in force (categories, the untrusted cap).
        resource_ids: every stored resource id the facts may cite; None skips the
            existence test (the non-empty test still runs).
        ledger: texts already scanned clean for credentials (scans everything without one).
        subject: what is checked, for the summary line.
    """
    frame = _derived(facts, FACT_REQUIRED, _as_series(resource_ids), ledger)
    return validate(frame, shared_rules(config), subject=subject, id_column="id",
                    context_columns=("content", "source_resource_ids"))


@spanned("check: items suite")
def items_report(items: pl.DataFrame, config: MemoryConfig, *, resource_ids: Iterable[str] | pl.Series | None,
                 ledger: ScanLedger | None = None, subject: str = "memory_items") -> QualityReport:
    """Check memory items (ITEM_SCHEMA rows); arguments as ``facts_report``."""
    frame = _derived(items, ITEM_REQUIRED, _as_series(resource_ids), ledger)
    ids = items["id"] if "id" in items.columns else pl.Series("id", [], pl.String)
    frame = frame.with_columns(
        **{f"dangling_{c}": _dangling(c, ids) for c in ("supersedes", "superseded_by") if c in items.columns})
    return validate(frame, item_rules(config), subject=subject, id_column="id",
                    context_columns=("content", "status", "source_resource_ids"))
