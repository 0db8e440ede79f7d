"""The graph suite: the entities and edges published with the items.

It protects dual search (``retrieval.agent.dual_search``), which walks the edges: an edge whose end is
missing would lead the walk nowhere, and an active entity that no active fact mentions
would start a walk to nothing. Referential rules are derived in polars as a column (the
missing node's id) that GX expects to be null, as in ``items_suite``.
"""

from __future__ import annotations

from collections.abc import Iterable

import polars as pl

from memory_assets.lib.quality.items_suite import _in_set
from memory_assets.lib.quality.suite_report import QualityReport
from memory_assets.lib.quality.validation import Rule, validate
from retrieval.schema import EDGE_KINDS
from retrieval.spans import spanned

EDGE_RULES = [
    Rule("edge_source_exists", "ExpectColumnValuesToBeNull", "ERROR",
         "dual search walks from an edge's source: it must be an item or entity of this version",
         {"column": "missing_source"}),
    Rule("edge_target_exists", "ExpectColumnValuesToBeNull", "ERROR",
         "dual search walks to an edge's target: an item, an entity, or (derived_from) a stored resource",
         {"column": "missing_target"}),
    _in_set("edge_kind_in_set", "kind", EDGE_KINDS, "ERROR", "the walk weighs edges by kind; an unknown kind has no weight"),
    Rule("edge_confidence_in_range", "ExpectColumnValuesToBeBetween", "ERROR",
         "the walk multiplies by confidence: outside [0, 1] one edge outweighs every other",
         {"column": "confidence", "min_value": 0.0, "max_value": 1.0}),
]
ENTITY_RULES = [
    Rule("entity_id_unique", "ExpectColumnValuesToBeUnique", "ERROR", "one node per entity", {"column": "id"}),
    Rule("entity_has_active_fact", "ExpectColumnValuesToBeNull", "ERROR",
         "an active entity is one some active fact mentions; otherwise it is archived",
         {"column": "orphan"}),
    _in_set("entity_status_in_set", "status", ("active", "archived"), "ERROR", "entities are active or archived"),
]


@spanned("quality: graph suite")
def graph_report(entities: pl.DataFrame, edges: pl.DataFrame, items: pl.DataFrame,
                 resource_ids: Iterable[str] | pl.Series | None, *, subject: str = "graph") -> QualityReport:
    """Check a version's entities and edges against its items (and the stored resources)."""
    nodes = pl.concat([items["id"], entities["id"]]).implode()
    resources = (pl.Series(list(resource_ids), dtype=pl.String) if resource_ids is not None and not isinstance(
        resource_ids, pl.Series) else resource_ids)
    resource_missing = (~pl.col("target").is_in(resources.implode()) if resources is not None else pl.lit(False))
    edge_frame = edges.with_row_index("row").with_columns(
        missing_source=pl.when(~pl.col("source").is_in(nodes)).then(pl.col("source")),
        missing_target=pl.when(pl.when(pl.col("kind") == "derived_from").then(resource_missing)
                               .otherwise(~pl.col("target").is_in(nodes))).then(pl.col("target")),
    ).with_columns(pl.col("row").cast(pl.String))
    active = items.filter(pl.col("status") == "active")["id"].implode()
    mentioned = edges.filter((pl.col("kind") == "mentions") & pl.col("source").is_in(active))["target"].unique()
    entity_frame = entities.with_columns(
        orphan=pl.when((pl.col("status") == "active") & ~pl.col("id").is_in(mentioned.implode())).then(pl.col("id")))
    return QualityReport.combine(
        validate(edge_frame, EDGE_RULES, subject=f"{subject} edges", id_column="row",
                 context_columns=("source", "target", "kind")),
        validate(entity_frame, ENTITY_RULES, subject=f"{subject} entities", id_column="id",
                 context_columns=("name", "namespace")),
        subject=subject)
