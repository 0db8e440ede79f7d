"""Data-quality suites: what every asset the agent depends on must satisfy before it is published.

Each suite is a plain function over polars frames (or an arrow table) that returns a
``QualityReport``; Dagster asset checks in ``defs/<area>/checks.py`` are thin shells
over them (``defs/check_results.py``: ``to_check_result``). The expectations are Great Expectations
1.x rules, run by ``validation.validate`` against one cached ephemeral context.

| suite | module | guards |
|---|---|---|
| ``schema_report`` | ``schema_suite`` | Parquet columns and types against ``retrieval.schema`` |
| ``resources_report`` | ``resources_suite`` | stored turns |
| ``facts_report``, ``items_report`` | ``items_suite`` | extracted facts, memory items |
| ``embeddings_report`` | ``embeddings_suite`` | LanceDB vectors and the full-text index |
| ``citations_report`` | ``citation_suite`` | summaries, insights, the health report: documents citing items |
| ``graph_report`` | ``graph_suite`` | the entities and edges published with the items |
| ``conflicts_report`` | ``conflict_suite`` | active items still contradicted by an active item (WARN) |

A new suite is one function: derive any referential column in polars (the cited item
ids that do not exist, as ``citations`` does), list ``Rule``s, and call ``validate``.
"""

from memory_assets.lib.quality.citation_suite import citations_report
from memory_assets.lib.quality.conflict_suite import conflicts_report
from memory_assets.lib.quality.credential_scan import ScanLedger
from memory_assets.lib.quality.graph_suite import graph_report
from memory_assets.lib.quality.embeddings_suite import MODEL_DIMENSIONS, embeddings_report, index_report, vectors_report
from memory_assets.lib.quality.items_suite import facts_report, items_report
from memory_assets.lib.quality.suite_report import Finding, QualityReport
from memory_assets.lib.quality.resources_suite import resources_report
from memory_assets.lib.quality.schema_suite import schema_report

__all__ = [
    "MODEL_DIMENSIONS", "Finding", "QualityReport", "ScanLedger", "citations_report", "conflicts_report", "embeddings_report", "facts_report",
    "graph_report", "index_report", "items_report", "resources_report", "schema_report", "vectors_report",
]
