"""Negative rules surfaced by what the context names (the coding-agent design).

A negative memory ("never commit .env files") keeps ``trigger_patterns``: the forbidden
action and what it acts on (``memory_assets/lib/extraction/kinds.trigger_patterns``:
``["commit", ".env", "repo"]``). The rule must reach the agent when it is about to do
that, which is rarely what the query asks about ("write the release notes and commit
them"). So besides search, every active negative rule the view may see is matched
against the context's words: a word pattern matches any of its inflections
("commit" → "commits", "committed", "committing"), a file name or flag (".env",
"--force") matches as written. Matching rules lead the block, tagged ``[rule: commit]``,
at most ``[injection] max_triggered`` of them, the rules matching more patterns first.

The rules are read from the published snapshot held in memory (``PublishedRows``), so
matching costs a set lookup per pattern, and reloads with it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from retrieval.text import inflections as forms, literal_pattern as _literal, normal_phrase, tokens, trigger_word


class NegativeRules:
    """The active negative rules of the published snapshot and their trigger patterns."""

    def __init__(self) -> None:
        self._key: object = None
        # (the rules, an inflected form → (rule, its pattern), literal patterns), one version
        self._index: tuple[list[tuple[dict[str, Any], tuple[str, ...]]], dict[str, list[tuple[int, str]]],
                           list[tuple[int, str, re.Pattern]]] = ([], {}, [])

    @property
    def rules(self) -> list[tuple[dict[str, Any], tuple[str, ...]]]:
        return self._index[0]

    def load(self, key: object, frame: Any, known: Mapping[str, Sequence[str]] | None = None) -> None:
        """Index ``frame``'s negative rules (a polars frame of items), unless ``key`` is the
        one loaded. The index is built aside and swapped in whole (readers on other threads
        see the old rules or the new ones, never half of them). ``known``: the inflected
        forms of the version's patterns, as its read index holds them (``retrieval.read_index.trigger_forms``;
        loading lemminflect's tables to inflect them again costs 0.7 s of a cold start)."""
        if key == self._key:
            return
        rules: list[tuple[dict[str, Any], tuple[str, ...]]] = []
        by_form: dict[str, list[tuple[int, str]]] = {}
        literals: list[tuple[int, str, re.Pattern]] = []
        if frame is not None and "trigger_patterns" in frame.columns:
            import polars as pl

            negative = frame.filter((pl.col("kind") == "negative") & (pl.col("status") == "active")
                                    & (pl.col("trigger_patterns").list.len() > 0))
            for row in negative.to_dicts():
                patterns = tuple(dict.fromkeys(p.lower() for p in row["trigger_patterns"] if p))
                index = len(rules)
                rules.append((row, patterns))
                for pattern in patterns:
                    if _literal(pattern):
                        literals.append((index, pattern, re.compile(rf"(?<![\w]){re.escape(pattern)}(?![\w])")))
                    else:
                        word = trigger_word(pattern)
                        for form in (known or {}).get(word) or forms(word):
                            by_form.setdefault(form, []).append((index, pattern))
        self._index = (rules, by_form, literals)
        self._key = key

    def matching(self, text: str, visible: Callable[[Mapping[str, Any]], bool], limit: int
                 ) -> list[tuple[dict[str, Any], list[str]]]:
        """The rules ``text`` triggers that ``visible`` admits, most patterns matched first:
        (row, the patterns it matched), at most ``limit``."""
        rules, by_form, literals = self._index  # one version throughout
        if not rules or limit <= 0 or not text:
            return []
        lowered = text.lower()
        matched: dict[int, list[str]] = {}
        for word in {normal_phrase(w) for w in tokens(lowered)}:
            for index, pattern in by_form.get(word, ()):
                matched.setdefault(index, []).append(pattern)
        for index, pattern, regex in literals:
            if pattern in lowered and regex.search(lowered):
                matched.setdefault(index, []).append(pattern)
        ranked = sorted(matched.items(), key=lambda kv: (-len(set(kv[1])), kv[0]))
        out = []
        for index, hit in ranked:
            row, patterns = rules[index]
            if visible(row):  # a rule the reader may see (namespace, scope)
                out.append((row, [p for p in patterns if p in hit]))
            if len(out) >= limit:
                break
        return out
