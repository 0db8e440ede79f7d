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

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from retrieval.config import MemoryConfig
from retrieval.llm import chat_client, complete_validated, load_prompt
from retrieval.schema import INJECTION_END, INJECTION_START

_BLOCK = re.compile(re.escape(INJECTION_START) + r".*?(?:" + re.escape(INJECTION_END) + r"|\Z)", re.DOTALL)
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9'+&.-]*[A-Za-z0-9+]|[A-Za-z]|\d[\d,.:/-]*\d|\d")
STOPWORDS = frozenset("""
a about above after again against all also am an and any are aren't as at be because been before
being below between both but by can can't cannot could couldn't did didn't do does doesn't doing
don't down during each few for from further had hadn't has hasn't have haven't having he he'd
he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into
is isn't it it's its itself let's me more most mustn't my myself no nor not of off on once only
or other ought our ours ourselves out over own same shan't she she'd she'll she's should
shouldn't so some such than that that's the their theirs them themselves then there there's
these they they'd they'll they're they've this those through to too under until up very was
wasn't we we'd we'll we're we've were weren't what what's when when's where where's which while
who who's whom why why's will with won't would wouldn't you you'd you'll you're you've your
yours yourself yourselves
tell know remember recall think said say says mention mentioned please thanks thank okay ok yes
yeah hey hi hello just really actually also still kind sort thing things something anything lot
get got go going gonna want like would could should might may much many ever
""".split())
_MAX_TERMS = 16
_MAX_WORDS = 64  # of the sentence; MiniLM reads 256 word pieces
# Words and phrases that are no part of what is asked.
_POLITE = frozenset("please thanks thank hey hi hello okay ok yeah".split())
_ASKS_TO_REMEMBER = re.compile(
    r"\b(?:do|did|can|could|would) you (?:still )?(?:remember|recall|tell me|remind me)(?: of| about| if| whether)?\b"
    r"|\bremind me(?: of| about)?\b", re.IGNORECASE)


@dataclass(frozen=True)
class SearchQuery:
    """What the stores are asked.

    Attributes:
        text: embedded for the vector search (and tier 1).
        terms: the full-text query.
    """

    text: str
    terms: str


def _text(context: str | Sequence[Mapping[str, Any]], last: int = 5) -> list[str]:
    if isinstance(context, str):
        return [_BLOCK.sub(" ", context)]
    return [_BLOCK.sub(" ", str(m.get("content", ""))) for m in list(context)[-last:]]


def keywords(text: str) -> list[str]:
    """Content words of ``text`` in order, entities (capitalized) and numbers kept as written."""
    out: list[str] = []
    seen: set[str] = set()
    for token in _TOKEN.findall(text):
        low = token.lower().strip("'.")
        if low in STOPWORDS or (len(low) < 2 and not low.isdigit()):
            continue
        if low.endswith("'s"):
            token, low = token[:-2], low[:-2]
        if low not in seen:
            seen.add(low)
            out.append(token)
    return out


def keyword_query(context: str | Sequence[Mapping[str, Any]]) -> str:
    """The offline rewrite: the latest message's terms first, then earlier messages' entities."""
    texts = _text(context)
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


def sentence_query(context: str | Sequence[Mapping[str, Any]]) -> str:
    """The offline rewrite for the vector search: the latest message's words in order,
    without greetings and asks-to-remember ("Hey, do you remember when…" → "when …"),
    a final "?" kept when it asks; then the earlier messages' names and numbers."""
    texts = _text(context)
    latest = _ASKS_TO_REMEMBER.sub(" ", texts[-1]) if texts else ""
    words = [t for t in _TOKEN.findall(latest) if t.lower() not in _POLITE][:_MAX_WORDS]
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
        self.client = chat_client(config, timeout=timeout, max_retries=1)

    def __call__(self, context: str | Sequence[Mapping[str, Any]]) -> str:
        """The query, or "" when the model gave none (``rewrite`` then falls back offline).

        Raises:
            LLMOutputFailed: the endpoint failed.
        """
        transcript = "\n".join(f"- {t.strip()}" for t in _text(context) if t.strip())
        messages = [{"role": "system", "content": self.system}, {"role": "user", "content": transcript}]
        query, _ = complete_validated(self.client, messages, _first_line, str, model=self.model)
        return query


def _first_line(reply: str) -> str:
    lines = reply.strip().splitlines()
    return lines[0].strip().strip('"') if lines else ""


def rewrite(context: str | Sequence[Mapping[str, Any]], *, llm: LLMRewriter | None = None) -> SearchQuery:
    """The search query for ``context``: the LLM's when given (one query for both
    searches), else, or when the LLM fails, the sentence and its keywords."""
    if llm is not None:
        try:
            query = llm(context)
            if query:
                return SearchQuery(query, query)
        except Exception:  # the agent must get memory even when the LLM is down
            pass
    return SearchQuery(sentence_query(context), keyword_query(context))
