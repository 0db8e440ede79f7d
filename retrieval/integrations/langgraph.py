"""LangGraph's long-term memory on this product: a ``BaseStore`` over ``MemoryClient``.

A LangGraph agent keeps what it learns as documents in its store (``store.put(("memories",
user_id), key, {"text": "Aaron takes his coffee black"})``) and finds them again by
meaning (``store.search(("memories", user_id), query="coffee")``). With ``MemoryStore``
each document becomes a memory of this product: redacted where it enters, taken through
the inbox and the gate by the next pipeline run, de-duplicated, scored and decayed, found
by the same hybrid search every door uses, and in the block any other agent of the user
is given. Until the pipeline has published it, it is found as a pending write is.

* **Namespaces.** LangGraph's namespace is a path of names; ours is a user or agent.
  ``namespace_at=1`` takes ours from the path's second name (``("memories", "aaron")`` is
  Aaron's memory); None keeps every path in the client's namespace.
* **Documents.** The document itself (redacted) and its key are kept beside the memory
  made of it (``retrieval.documents``), so ``get`` answers at once with what was put, and
  ``search`` filters on its fields as LangGraph's own stores do.
* **What becomes a memory**: the document's words (``index`` fields as LangGraph names
  them, ``["text"]`` or ``["facts[*]"]``; by default every string in it); ``index=False``
  keeps a document out of memory (found by key and filters only).
* ``put`` of a key that holds a document rewords its memory (the user's words win, as
  ``update`` does); ``delete`` forgets it. A memory forgotten at another door (the CLI,
  the service) takes its document with it.
* No TTL: memories age by the product's decay and tiers (``supports_ttl`` is False).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)
from langgraph.store.base.embed import get_text_at_path

from retrieval.documents import Document, DocumentStore
from retrieval.limits import MEMORY_MAX_CHARS
from retrieval.store import ItemStore

if TYPE_CHECKING:
    from retrieval.agent.client import MemoryClient

GONE = "purged"  # a memory forgotten or erased reads this status
SEARCH_DEPTH = 4  # memories asked of the search per document wanted (others of the namespace compete)


class MemoryStore(BaseStore):
    """LangGraph's ``BaseStore`` over ``client``'s data root.

    Args:
        client: the memory (``MemoryClient``); its namespace unless ``namespace_at``.
        namespace_at: the position in LangGraph's namespace of the name that is ours.
        index: the fields whose words become the memory (LangGraph's path syntax); None:
            every string of the document.
        documents: where the documents are kept (default: the client's service database).
    """

    supports_ttl = False

    def __init__(self, client: MemoryClient, *, namespace_at: int | None = None,
                 index: Sequence[str] | None = None, documents: DocumentStore | None = None) -> None:
        self.client = client
        self.namespace_at = namespace_at
        self.index = list(index) if index is not None else None
        self.documents = documents or DocumentStore.for_root(client.paths, client.config)
        if namespace_at is None and not client.namespace:
            raise ValueError("MemoryStore: the client reads every namespace; give it one, or namespace_at")

    # -- LangGraph's two entry points ------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, PutOp):
                results.append(self._put(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise TypeError(f"MemoryStore: unknown operation {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    # -- namespaces -------------------------------------------------------------------------

    def _ours(self, path: Sequence[str]) -> str:
        if self.namespace_at is None:
            return str(self.client.namespace)
        if len(path) <= self.namespace_at:
            raise InvalidNamespaceError(f"namespace {tuple(path)!r} has no name at position {self.namespace_at} "
                                        "(whose memory it is)")
        return path[self.namespace_at]

    def _reader(self, namespace: str) -> MemoryClient:
        return self.client if namespace == self.client.namespace else self.client.scoped(namespace)

    def _readable(self, prefix: Sequence[str]) -> list[str] | None:
        """Our namespaces a path prefix covers (None: every one holding a document)."""
        if self.namespace_at is None:
            return [str(self.client.namespace)]
        return [prefix[self.namespace_at]] if len(prefix) > self.namespace_at else None

    # -- the operations ---------------------------------------------------------------------

    def _get(self, op: GetOp) -> Item | None:
        document = self.documents.get(self._ours(op.namespace), op.namespace, op.key)
        if document is None or self._gone(document):
            return None
        return _item(document)

    def _gone(self, document: Document) -> bool:
        """Whether the document's memory was forgotten or erased at some door."""
        if document.memory_id is None:
            return False
        try:
            return self._reader(document.namespace).get(document.memory_id).get("status") == GONE
        except ItemStore.DoesNotExist:
            return False  # neither pending nor published yet as one item (merged, or refused by the gate)

    def _put(self, op: PutOp) -> None:
        namespace = self._ours(op.namespace)
        old = self.documents.get(namespace, op.namespace, op.key)
        if op.value is None:
            if old is not None:
                self._forget(old)
                self.documents.delete(namespace, op.namespace, op.key)
            return None
        client = self._reader(namespace)
        clean = self.documents.redact(op.value)
        text = _words(clean, self.index if op.index is None else op.index)
        memory_id = old.memory_id if old is not None else None
        if not text:
            if old is not None:
                self._forget(old)
            memory_id = None
        elif memory_id is not None and not self._gone(old):  # type: ignore[arg-type]
            client.update(memory_id, text)
        else:
            memory_id = str(client.remember(text)["id"])
        self.documents.put(namespace, op.namespace, op.key, clean, memory_id, datetime.now(timezone.utc))
        return None

    def _forget(self, document: Document) -> None:
        if document.memory_id is not None and not self._gone(document):
            self._reader(document.namespace).forget(document.memory_id)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        documents = [d for d in self.documents.under(self._readable(op.namespace_prefix), op.namespace_prefix)
                     if _matches(d.value, op.filter or {})]
        if not op.query:
            ranked = [(d, None) for d in documents if not self._gone(d)]
        else:
            ranked = self._ranked(documents, op.query, op.limit + op.offset)
        return [_item(d, score) for d, score in ranked[op.offset:op.offset + op.limit]]

    def _ranked(self, documents: list[Document], query: str, wanted: int) -> list[tuple[Document, float | None]]:
        """The documents whose memories the product's search finds for ``query``, best first
        (score: the search's relevance); memories of other sources are left to ``inject``."""
        by_session: dict[tuple[str, str], Document] = {
            (d.namespace, d.memory_id.split(":", 1)[1]): d for d in documents if d.memory_id}
        scores: dict[tuple[str, str], float] = {}
        for namespace in sorted({d.namespace for d in documents}):
            for hit in self._reader(namespace).search(query[:MEMORY_MAX_CHARS], k=max(10, wanted * SEARCH_DEPTH)):
                key = (namespace, hit.session_id)
                if key in by_session:
                    scores[key] = max(scores.get(key, 0.0), float(hit.relevance))
        best = sorted(scores, key=lambda k: (-scores[k], by_session[k].key))
        return [(by_session[k], round(scores[k], 6)) for k in best]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        paths = self.documents.paths_of(None if self.namespace_at is not None else [str(self.client.namespace)])
        paths = [p for p in paths if all(_path_matches(c, p) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            paths = sorted({p[:op.max_depth] for p in paths})
        return paths[op.offset:op.offset + op.limit]


def _item(document: Document, score: float | None = None) -> SearchItem:
    return SearchItem(namespace=document.path, key=document.key, value=document.value,
                      created_at=document.created_at, updated_at=document.updated_at, score=score)


def _words(value: Mapping[str, Any], fields: Sequence[str] | bool | None) -> str:
    """What of the document becomes the memory: the named fields' words, or every string
    (one string: itself; several: ``field: words`` each); empty for ``index=False``."""
    if fields is False:
        return ""
    if fields and list(fields) != ["$"]:
        texts = [t for f in fields for t in get_text_at_path(dict(value), f)]
        return "\n".join(t.strip() for t in texts if t.strip())[:MEMORY_MAX_CHARS]
    leaves = list(_leaves(value, ""))
    if len(leaves) == 1:
        return leaves[0][1][:MEMORY_MAX_CHARS]
    return "; ".join(f"{name}: {text}" for name, text in leaves)[:MEMORY_MAX_CHARS]


def _leaves(value: Any, name: str) -> Iterable[tuple[str, str]]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _leaves(v, f"{name}.{k}" if name else str(k))
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v, name)
    elif isinstance(value, str) and value.strip():
        yield name, value.strip()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield name, str(value)


def _matches(value: Any, wanted: Mapping[str, Any]) -> bool:
    """LangGraph's filter: each field equal, or every ``$eq``/``$ne``/``$gt``/``$gte``/``$lt``/``$lte`` true."""
    return all(_holds(value.get(k) if isinstance(value, Mapping) else None, v) for k, v in wanted.items())


_COMPARE = {"$eq": lambda a, b: a == b, "$ne": lambda a, b: a != b,
            "$gt": lambda a, b: float(a) > float(b), "$gte": lambda a, b: float(a) >= float(b),
            "$lt": lambda a, b: float(a) < float(b), "$lte": lambda a, b: float(a) <= float(b)}


def _holds(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping) and any(str(k).startswith("$") for k in wanted):
        unknown = [k for k in wanted if k not in _COMPARE]
        if unknown:
            raise ValueError(f"MemoryStore: unsupported filter operator {unknown[0]!r} (known: {', '.join(_COMPARE)})")
        try:
            return all(_COMPARE[k](actual, v) for k, v in wanted.items())
        except (TypeError, ValueError):
            return False  # a missing or non-numeric field compared with a number
    if isinstance(wanted, Mapping):
        return isinstance(actual, Mapping) and _matches(actual, wanted)
    return actual == wanted


def _path_matches(condition: MatchCondition, path: tuple[str, ...]) -> bool:
    pattern = tuple(condition.path)
    if len(path) < len(pattern):
        return False
    part = path[:len(pattern)] if condition.match_type == "prefix" else path[len(path) - len(pattern):]
    return all(want in ("*", have) for want, have in zip(pattern, part, strict=True))
