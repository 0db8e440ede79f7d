"""The resources suite: every stored turn is complete, attributable and dated.

Resources are the ground truth every memory points back to (DESIGN principle 2), so a
turn without a role, a duplicate resource id or a date that does not parse is an ERROR.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from memory_assets.lib.quality.suite_report import QualityReport
from memory_assets.lib.quality.validation import Rule, validate
from retrieval.projects import PATTERN as PROJECT_PATTERN
from retrieval.schema import ROLES, TRUST

# external_id is optional (only some formats have turn ids); everything else is required.
REQUIRED = ("resource_id", "session_id", "turn", "role", "speaker", "content", "content_at", "trust",
            "source_format", "source_file", "ingested_at")
TIMESTAMPS = ("content_at", "ingested_at")


def _parsed(frame: pl.DataFrame, column: str) -> pl.Expr:
    """The column as a UTC datetime; null where it is missing or does not parse."""
    if column not in frame.columns:
        return pl.lit(None, dtype=pl.Datetime("us", "UTC"))
    dtype = frame.schema[column]
    if isinstance(dtype, pl.Datetime):
        return pl.col(column)
    if dtype == pl.String:
        return pl.col(column).str.to_datetime(strict=False, time_zone="UTC")
    return pl.lit(None, dtype=pl.Datetime("us", "UTC"))


def _invalid_project(frame: pl.DataFrame) -> pl.Expr:
    """The project when it is not a valid name, else null (a part written before projects has none)."""
    if "project" not in frame.columns:
        return pl.lit(None, dtype=pl.String)
    project = pl.col("project").cast(pl.String)
    return pl.when(~project.str.contains(PROJECT_PATTERN)).then(project)


def resource_rules(session_ids: Sequence[str] | None = None) -> list[Rule]:
    rules = [
        Rule(f"{column}_not_null", "ExpectColumnValuesToNotBeNull", "ERROR",
             "every turn says who said what, when, in which session", {"column": column})
        for column in REQUIRED
    ]
    rules += [
        Rule("resource_id_unique", "ExpectColumnValuesToBeUnique", "ERROR",
             "a turn is stored once: memories cite resource ids, and one id must mean one turn",
             {"column": "resource_id"}),
        Rule("role_in_set", "ExpectColumnValuesToBeInSet", "ERROR",
             "extraction's rules depend on the role (system turns are never extracted)",
             {"column": "role", "value_set": list(ROLES)}),
        Rule("trust_in_set", "ExpectColumnValuesToBeInSet", "ERROR",
             "tool output stays untrusted all the way to the injected block",
             {"column": "trust", "value_set": list(TRUST)}),
        # ``project`` is optional (null: no project); when set it scopes the session's work memories.
        Rule("project_name_valid", "ExpectColumnValuesToBeNull", "ERROR",
             "a session's project decides which readers see its work memories; it must be a valid name",
             {"column": "invalid_project"}),
    ]
    rules += [
        Rule(f"{column}_parses", "ExpectColumnValuesToNotBeNull", "ERROR",
             "recency decay and 'age: 3d' in the injected block need a real date",
             {"column": f"{column}_parsed"})
        for column in TIMESTAMPS
    ]
    if session_ids is not None:
        rules.append(Rule("session_matches_partition", "ExpectColumnValuesToBeInSet", "ERROR",
                          "a session's partition holds only that session's turns",
                          {"column": "session_id", "value_set": list(session_ids)}))
    return rules


def resources_report(resources: pl.DataFrame, *, session_ids: Sequence[str] | None = None,
                     subject: str = "resources") -> QualityReport:
    """Check stored turns (RESOURCE_SCHEMA rows).

    Args:
        resources: the turns to check, e.g. one session's partition.
        session_ids: when given, every turn must belong to one of these sessions.
        subject: what is checked, for the summary line.
    """
    frame = resources.with_columns(**{f"{c}_parsed": _parsed(resources, c) for c in TIMESTAMPS},
                                   invalid_project=_invalid_project(resources))
    return validate(frame, resource_rules(session_ids), subject=subject, id_column="resource_id",
                    context_columns=("session_id", "turn", "content"))
