"""Whose memory a reader sees, and when: a namespace, scopes, a project, shared
namespaces and a day (``View``), and which statuses a query may find.

The namespace rule lives here alone: the default namespace and ``"*"`` (``View.of``),
what a reader owns (``owns``, ``own_rows``) and where its writes go (``writer``).
``MemoryClient``, the pending overlay and the retrieval core ask a ``View``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import polars as pl

from retrieval.config import MemoryConfig
from retrieval.moments import utc
from retrieval.text import asks_about_before

# What search may return: active items first; archived, then cold ones only to fill the
# block ("forgotten by filing" is not forgetting: koshi and Engram keep the archive searchable).
RECALLABLE = ("active", "archived", "cold")


@dataclass(frozen=True)
class View:
    """Whose memory a reader sees, and when: one namespace (None: every one), scopes
    (None: all) and ``as_of`` (None: now). As of a past day, an item is seen when it was
    true then (``valid_from`` ≤ day < ``invalid_at``), superseded since or not.

    ``project``: the project the reader works on. It sees the global items and that
    project's (``scope = "project"``), never another project's. Without a project it
    sees every item: an agent that never names projects still finds all it wrote.

    ``shared``: other namespaces this reader was granted (another agent's memory, a
    team's), read too but ranked × ``shared_penalty``: off-domain for this reader
    (ADR-0077, cross-agent).

    ``author``: the key its writes come from (``retrieval.schema.author``; None: no key),
    recorded with every turn, pending write and correction it makes."""

    namespace: str | None = None
    scopes: tuple[str, ...] | None = None
    as_of: datetime | None = None
    shared: tuple[str, ...] = ()
    shared_penalty: float = 1.0
    project: str | None = None
    author: str | None = None

    @classmethod
    def of(cls, config: MemoryConfig, namespace: str | None = None, scopes: Sequence[str] | None = None) -> View:
        """An agent's view: ``namespace`` (default ``[pipeline] namespace``, where sessions
        handed over without a user go; ``"*"`` every one) and ``scopes`` (default all)."""
        return cls(None if namespace == "*" else (namespace or config.default_namespace),
                   tuple(scopes) if scopes else None)

    def at(self, as_of: datetime | None) -> View:
        """This view as of a day (a naive time is UTC); None: as of now."""
        return self if as_of is None else dataclasses.replace(self, as_of=utc(as_of))

    def for_project(self, project: str | None) -> View:
        """This view for a reader working on ``project`` (None: no project, every item)."""
        return self if project == self.project else dataclasses.replace(self, project=project)

    def in_project(self, row: Mapping[str, Any]) -> bool:
        """A global item, or one of this reader's project (any item, without a project)."""
        return self.project is None or row.get("scope") != "project" or row.get("project") == self.project

    def statuses(self, statuses: Sequence[str]) -> tuple[str, ...]:
        """As of a past day, a superseded item may have been the one that held."""
        return (*statuses, "superseded") if self.as_of is not None and "superseded" not in statuses else tuple(statuses)

    def held(self, row: Mapping[str, Any]) -> bool:
        """True then: valid from on or before ``as_of``, not yet replaced (always, without ``as_of``)."""
        if self.as_of is None:
            return True
        start, end = row.get("valid_from") or row.get("created_at"), row.get("invalid_at")
        return (start is None or utc(start) <= self.as_of) and (end is None or utc(end) > self.as_of)

    def by(self, author: str | None) -> View:
        """This view writing as ``author`` (a key's ``author``)."""
        return self if author == self.author else dataclasses.replace(self, author=author)

    def sharing(self, shared: Sequence[str], penalty: float) -> View:
        """This view reading ``shared`` namespaces too, their items × ``penalty``."""
        return dataclasses.replace(self, shared=tuple(n for n in shared if n != self.namespace), shared_penalty=penalty)

    def shared_from(self, row: Mapping[str, Any]) -> str | None:
        """The namespace ``row`` was shared from, when it is not this reader's own (None:
        its own, or a view of every namespace)."""
        namespace = row.get("namespace")
        return namespace if self.namespace and namespace and namespace != self.namespace else None

    def owns(self, row: Mapping[str, Any]) -> bool:
        """The row is of this reader's namespace (not one shared with it); a view of every
        namespace owns every row."""
        return not self.namespace or row.get("namespace") == self.namespace

    def own_rows(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The rows of ``frame`` this reader owns (``owns``) and, for a reader of a project,
        that are of its project or global (``in_project``; only a project's item can be
        another project's, so it is asked of those alone)."""
        if self.namespace:
            frame = frame.filter(pl.col("namespace") == self.namespace)
        if self.project is not None:
            scoped = frame.filter(pl.col("scope") == "project").select("id", "scope", "project")
            others = [row["id"] for row in scoped.iter_rows(named=True) if not self.in_project(row)]
            frame = frame.filter(~pl.col("id").is_in(others))
        return frame

    def writer(self, what: str) -> str:
        """The namespace this reader's writes go to: its own. A view of every namespace
        (``"*"``, an operator's) has none to write to: ``ValueError`` saying ``what`` needed one."""
        if not self.namespace:
            raise ValueError(f"{what} needs a namespace (this client reads every namespace)")
        return self.namespace

    def visible(self, row: Mapping[str, Any], statuses: Sequence[str] = ("active",)) -> bool:
        """What ``where`` says, for a row in hand."""
        return (row.get("status") in self.statuses(statuses)
                and (self.owns(row) or row.get("namespace") in self.shared)
                and (not self.scopes or row.get("scope") in self.scopes)
                and self.in_project(row)
                and self.held(row))

    def where(self, statuses: Sequence[str] = ("active",)) -> str:
        """The same filter as a LanceDB predicate (``as_of`` is applied to the rows after)."""
        clauses = ["status IN (" + ", ".join(f"'{s}'" for s in self.statuses(statuses)) + ")"]
        if self.namespace:
            names = (self.namespace, *self.shared)
            clauses.append("namespace IN (" + ", ".join("'" + n.replace("'", "''") + "'" for n in names) + ")")
        if self.scopes:
            clauses.append("scope IN (" + ", ".join(f"'{s}'" for s in self.scopes) + ")")
        if self.project is not None:
            project = self.project.replace("'", "''")
            clauses.append(f"(scope IS NULL OR scope <> 'project' OR project = '{project}')")
        return " AND ".join(clauses)


def recallable_for(query: str) -> tuple[str, ...]:
    """The statuses a query may find: a question about what held before ("what did I use
    before Neovim?") finds superseded items too, ranked below active ones."""
    return (*RECALLABLE, "superseded") if asks_about_before(query) else RECALLABLE
