"""Query rewrite: the recent conversation becomes one search query.

With an LLM configured, the last 5 messages go through ``prompts/query_rewrite.md``;
offline (or if the LLM fails), an extractor over the same messages does the job, in two
forms: the latest message as a plain sentence for the vector search (MiniLM was trained
on questions paired with the statements that answer them, so a question finds answers
better than its keywords do: README, "Retrieval on LoCoMo") and its content words for
full-text search (function words only add noise to BM25); each with the names and
numbers of the earlier messages. The raw user message is never handed to the stores as
is: the injected memory block, punctuation, greetings and asks-to-remember are gone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from retrieval.config import MemoryConfig
from retrieval.intent import ASKS_TO_RECALL
from retrieval.llm import chat_client, complete_validated, load_prompt
from retrieval.text import POLITE, QUERY_STOPWORDS, strip_injected, tokens

_MAX_TERMS = 16
_MAX_WORDS = 64  # of the sentence; MiniLM reads 256 word pieces


@dataclass(frozen=True)
class SearchQuery:
    """What the stores are asked.

    Attributes:
        text: embedded for the vector search (and tier 1).
        terms: the full-text query.
    """

    text: str
    terms: str


# How many of the latest messages a query is built from: retrieval reads no further back.
CONTEXT_MESSAGES = 5


def _text(context: str | Sequence[Mapping[str, Any]], header: str, last: int = CONTEXT_MESSAGES) -> list[str]:
    """The latest messages' texts, without the memory block the agent was given (``header``:
    ``[injection] header``)."""
    if isinstance(context, str):
        return [strip_injected(context, header)]
    return [strip_injected(str(m.get("content", "")), header) for m in list(context)[-last:]]


def keywords(text: str) -> list[str]:
    """Content words of ``text`` in order, entities (capitalized) and numbers kept as written."""
    out: list[str] = []
    seen: set[str] = set()
    for token in tokens(text):
        low = token.lower().strip("'.")
        if low in QUERY_STOPWORDS or (len(low) < 2 and not low.isdigit()):
            continue
        if low.endswith("'s"):
            token, low = token[:-2], low[:-2]
        if low not in seen:
            seen.add(low)
            out.append(token)
    return out


def keyword_query(context: str | Sequence[Mapping[str, Any]], header: str) -> str:
    """The offline rewrite: the latest message's terms first, then earlier messages' entities."""
    texts = _text(context, header)
    terms = keywords(texts[-1]) if texts else []
    terms += _earlier_entities(texts, {t.lower() for t in terms})
    return " ".join(terms[:_MAX_TERMS])


def _earlier_entities(texts: list[str], have: set[str]) -> list[str]:
    """Names and numbers of the earlier messages (latest first) not in ``have``."""
    out = []
    for earlier in reversed(texts[:-1]):
        for token in keywords(earlier):
            if (token[:1].isupper() or token[:1].isdigit()) and token.lower() not in have:
                have.add(token.lower())
                out.append(token)
    return out


def sentence_query(context: str | Sequence[Mapping[str, Any]], header: str) -> str:
    """The offline rewrite for the vector search: the latest message's words in order,
    without greetings and asks-to-remember ("Hey, do you remember when…" → "when …"),
    a final "?" kept when it asks; then the earlier messages' names and numbers."""
    texts = _text(context, header)
    latest = ASKS_TO_RECALL.sub(" ", texts[-1]) if texts else ""
    words = [t for t in tokens(latest) if t.lower() not in POLITE][:_MAX_WORDS]
    words += _earlier_entities(texts, {w.lower() for w in words})
    if not words:
        return ""
    return " ".join(words) + ("?" if latest.rstrip().endswith("?") else "")


class LLMRewriter:
    """One search query from the last messages, via an OpenAI-compatible endpoint
    (``prompts/query_rewrite.md``). On the agent's hot path: a short timeout, one retry."""

    def __init__(self, config: MemoryConfig, timeout: float = 10.0):
        self.system = load_prompt("query_rewrite").text
        self.model = config.llm.model
        self.header = config.injection.header
        self.client = chat_client(config, timeout=timeout, max_retries=1)

    def __call__(self, context: str | Sequence[Mapping[str, Any]]) -> str:
        """The query, or "" when the model gave none (``rewrite`` then falls back offline).

        Raises:
            LLMOutputFailed: the endpoint failed.
        """
        transcript = "\n".join(f"- {t.strip()}" for t in _text(context, self.header) if t.strip())
        messages = [{"role": "system", "content": self.system}, {"role": "user", "content": transcript}]
        query, _ = complete_validated(self.client, messages, _first_line, str, model=self.model)
        return query


def _first_line(reply: str) -> str:
    lines = reply.strip().splitlines()
    return lines[0].strip().strip('"') if lines else ""


def rewrite(context: str | Sequence[Mapping[str, Any]], *, header: str, llm: LLMRewriter | None = None) -> SearchQuery:
    """The search query for ``context``: the LLM's when given (one query for both
    searches), else, or when the LLM fails, the sentence and its keywords. ``header`` is
    ``[injection] header``: a memory block pasted back without its markers is not asked."""
    if llm is not None:
        try:
            query = llm(context)
            if query:
                return SearchQuery(query, query)
        except Exception:  # the agent must get memory even when the LLM is down
            pass
    return SearchQuery(sentence_query(context, header), keyword_query(context, header))
