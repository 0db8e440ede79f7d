"""Which memories of a project session belong to the project.

A session about a project (``Turn.project``) mixes the project's work with the rest of
a life: "deploys go out on Thursdays" is the project's, "I'm allergic to peanuts" is the
person's wherever they said it. A fact is the project's (``scope = "project"``, its
``project`` set) when its category is about work on something (``[pipeline]
project_categories``: work, process, incidents, decisions, system state) or when it
names the project; every other fact is global (``project`` null), so a reader of any
project, or of none, sees it.
"""

from __future__ import annotations

import re

from retrieval.config import MemoryConfig

# "atlas-web" is written "atlas-web", "atlas_web", "Atlas Web" or "atlasweb".
_SEPARATORS = re.compile(r"[-_.\s]+")


def names_project(content: str, project: str) -> bool:
    """``content`` names ``project`` (its last path part: "acme/atlas-web" is "atlas-web"),
    in any case, its words joined by any separator or none."""
    words = [w for w in _SEPARATORS.split(project.rsplit("/", 1)[-1].lower()) if w]
    if not words:
        return False
    spelled = r"[-_.\s]?".join(re.escape(w) for w in words)
    return re.search(rf"(?<![\w]){spelled}(?![\w])", content.lower()) is not None


def scope_of(category: str, content: str, project: str | None, config: MemoryConfig) -> tuple[str, str | None]:
    """(scope, project) of a fact said in a session about ``project`` (None: no project)."""
    if project and (category in config.pipeline.project_categories or names_project(content, project)):
        return "project", project
    return "global", None
