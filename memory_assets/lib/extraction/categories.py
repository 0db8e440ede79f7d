"""Which configured category a fact belongs to, for the offline extractor.

Three steps, each used only when the one before it cannot decide:

1. **Keywords** (``[categories] keywords``), matched on the words as written and on
   their lemmas (lemminflect's lexicon, a lookup: a spaCy parse per clause is too slow
   for a 700-turn conversation), so a keyword in its base form also finds its
   inflections: "prefer" finds "preferred", "deploy" finds "deploying", "oil change"
   finds "oil changes". The category with the most distinct keywords wins; a tie goes
   to the category listed first.
2. **Code**: a first-person or unattributed clause with no keyword that names code (a
   path, a flag, an identifier with a number, a version) is about ``work``.
3. **Meaning**: "Noor has a persistent cough" names no health keyword, but it reads
   like one of the health description's phrases. The nearest category is taken when it
   is clearly nearer than the extractor's default (``PRIOR_MARGIN``) and near at all
   (``MIN_SIMILARITY``); else the default stands: it says what the clause is when
   nothing else does (a first-person life fact, a rule for the assistant, untrusted
   tool output).

The embedder is the pipeline's own local MiniLM (``retrieval.embeddings``), loaded once
per process, always local: the offline extractor never calls out. A category without a
``description`` is never chosen by meaning, only by its keywords or as the default.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np

from memory_assets.lib.extraction import cues as C
from retrieval.config import MemoryConfig
from retrieval.text import TOKEN, lexicon

# How much nearer (cosine) than the default category a category must be for a clause
# without keywords to leave its default. Tuned on half the gold sessions (the even ones
# by file name), checked on the other half.
PRIOR_MARGIN = 0.1
# Below this similarity to every description the clause is about nothing in particular:
# the default stands.
MIN_SIMILARITY = 0.25
# A clause naming code (a path, a flag, a hyphenated or versioned identifier:
# "payments/", "--force", "vpc-runners-2", "0.8.0") and no keyword is about the work.
TECHNICAL_CATEGORY = "work"
_TECHNICAL = re.compile(
    r"\b[\w.-]+/(?=[\s,;:)]|$)"                        # a folder: "payments/"
    r"|\b[\w.-]+(?:/[\w.-]+){2,}"                        # a path: "src/app/main.go"
    r"|(?<![\w-])--?[a-z][a-z]+(?:-[a-z]+)*\b"            # a flag: "-auto-approve", "--force"
    r"|\b[a-z][a-z0-9]*_[a-z0-9_]+\b"                     # snake_case
    r"|\b[a-z][a-z0-9]*-[\w-]*\d[\w-]*\b"                 # a name with a number: "vpc-runners-2"
    r"|\b\d+\.\d+\.\d+\b"                                # a version: "0.8.0"
    r"|\b[a-z]{2,}[A-Z]\w*"                              # camelCase
    r"|\b\w+\.(?:py|js|ts|go|rs|java|rb|json|ya?ml|toml|md|sh|sql|tf|env|cfg|ini|lock)\b")


class Categorizer:
    """The best category for a clause: keyword hits (words and lemmas), then the nearest
    category description to break a tie or, with no hit, to replace a default it
    clearly beats.

    Args:
        config: the memory config; ``[categories]`` gives each category's keywords, its
            description and the order ties fall back to.
        embed: turns texts into unit vectors (tests pass their own); default the local
            MiniLM model.
    """

    def __init__(self, config: MemoryConfig, embed: Any = None):
        self.config = config
        self.owners: dict[str, list[str]] = {}
        for name, category in config.categories.items():
            for keyword in category.keywords:
                self.owners.setdefault(keyword, []).append(name)
        self.order = {name: i for i, name in enumerate(config.categories)}
        # Longest first, so "run the" wins over "run" and "oil change" over "change".
        keywords = sorted(self.owners, key=len, reverse=True)
        self.pattern = re.compile(r"\b(?:" + "|".join(re.escape(k) for k in keywords) + r")\b") if keywords else None
        # Single words match a token's lemma too; phrases match the lemmas joined.
        self.words = {k for k in self.owners if k[:1].isalpha() and TOKEN.fullmatch(k)}
        self.phrases = [(k, tuple(k.split())) for k in self.owners if " " in k]
        self._chosen: dict[tuple[str, str, tuple[str, ...]], tuple[str, list[str]]] = {}
        self.descriptions = {name: c.description for name, c in config.categories.items() if c.description.strip()}
        self._embed_fn = embed
        self._prototypes: dict[str, np.ndarray] | None = None

    # --- keywords ------------------------------------------------------------------

    def hits(self, text: str) -> list[tuple[str, str]]:
        """(category, keyword) for each keyword written in ``text`` as configured."""
        if self.pattern is None:
            return []
        lowered = text.lower()
        # "like" only counts as a liking after a subject ("I like"), not as a comparison.
        masked = re.sub(r"\blike\b", "____", lowered)
        for m in C.LIKE_AS_VERB.finditer(lowered):
            masked = masked[:m.start()] + lowered[m.start():m.end()] + masked[m.end():]
        return [(name, m.group(0)) for m in self.pattern.finditer(masked) for name in self.owners[m.group(0)]]

    def lemma_hits(self, text: str) -> list[tuple[str, str]]:
        """(category, keyword) for each keyword that is a lemma of a word in ``text``
        ("preferred" → "prefer"), or a phrase of lemmas ("oil changes" → "oil change").
        A word that is itself a keyword is left to ``hits`` (counted once)."""
        if not self.owners:
            return []
        lowered = text.lower()
        # "like" only counts as a liking after a subject ("I like"), as in hits().
        masked = re.sub(r"\blike\b", "____", lowered)
        for m in C.LIKE_AS_VERB.finditer(lowered):
            masked = masked[:m.start()] + lowered[m.start():m.end()] + masked[m.end():]
        spans = [m for m in TOKEN.finditer(masked) if m.group()[0].isalpha()]
        words = [m.group(0) for m in spans]
        forms = [_lemmas(w) for w in words]
        found: list[tuple[str, str]] = []
        for m, word, lemmas in zip(spans, words, forms):
            if word in self.owners or (m.start() > 0 and text[m.start()].isupper()):
                continue  # as written: hits()'s; capitalised mid-sentence: a name ("Moto Works")
            for lemma in sorted(lemmas & self.words):
                found += [(name, lemma) for name in self.owners[lemma]]
        for phrase, parts in self.phrases:
            n = len(parts)
            for i in range(len(words) - n + 1):
                if " ".join(words[i:i + n]) != phrase and all(
                        part == word or part in lemmas for part, word, lemmas in zip(parts, words[i:i + n], forms[i:i + n])):
                    found += [(name, phrase) for name in self.owners[phrase]]
                    break
        return found

    # --- meaning -------------------------------------------------------------------

    def _embed(self, texts: list[str]) -> np.ndarray:
        if self._embed_fn is None:
            self._embed_fn = _local_embedder(self.config)
        return np.asarray(self._embed_fn(texts), dtype=np.float32)

    def similarities(self, text: str) -> dict[str, float]:
        """Cosine similarity of ``text`` to each category's description: to the nearest
        of its phrases (a short phrase embeds sharper than a long list)."""
        if not self.descriptions:
            return {}
        if self._prototypes is None:
            phrases = {name: phrases_of(d) for name, d in self.descriptions.items()}
            vectors = iter(self._embed([p for name in phrases for p in phrases[name]]))
            self._prototypes = {name: np.stack([next(vectors) for _ in phrases[name]]) for name in phrases}
        vector = self._nearest_cache(text)
        return {name: float((protos @ vector).max()) for name, protos in self._prototypes.items()}

    @functools.lru_cache(maxsize=4096)
    def _nearest_cache(self, text: str) -> np.ndarray:
        return self._embed([text])[0]

    # --- the choice ----------------------------------------------------------------

    def best(self, text: str, default: str, skip: tuple[str, ...] = ()) -> tuple[str, list[str]]:
        """The category for ``text`` and the keywords that chose it; ``skip``:
        categories not to choose. With no keyword: code-like words make a first-person
        or unattributed clause ``work``; else the nearest description when it is clearly
        nearer than ``default``'s; else ``default``."""
        key = (text, default, tuple(skip))
        if key not in self._chosen:
            if len(self._chosen) > 8192:
                self._chosen.clear()
            self._chosen[key] = self._best(text, default, tuple(skip))
        category, keywords = self._chosen[key]
        return category, list(keywords)

    def _best(self, text: str, default: str, skip: tuple[str, ...]) -> tuple[str, list[str]]:
        hits = [h for h in dict.fromkeys(self.hits(text) + self.lemma_hits(text)) if h[0] not in skip]
        if hits:
            counts: dict[str, int] = {}
            for name, _ in hits:
                counts[name] = counts.get(name, 0) + 1
            best = min(counts, key=lambda c: (-counts[c], self.order[c]))
            return best, list(dict.fromkeys(k for _, k in hits))
        if (default in (C.LIFE_DEFAULT_CATEGORY, C.OTHER_DEFAULT_CATEGORY) and TECHNICAL_CATEGORY in self.order
                and TECHNICAL_CATEGORY not in skip and _TECHNICAL.search(text)):
            return TECHNICAL_CATEGORY, []
        near = {c: s for c, s in self.similarities(text).items() if c not in skip}
        if not near:
            return default, []
        nearest = max(near, key=lambda c: (near[c], -self.order[c]))
        if nearest == default or near[nearest] < MIN_SIMILARITY:
            return default, []
        if default in near and near[nearest] - near[default] < PRIOR_MARGIN:
            return default, []
        return nearest, []


@functools.lru_cache(maxsize=65536)
def _lemmas(word: str) -> frozenset[str]:
    """Every lemma lemminflect's English lexicon gives ``word`` (any part of speech):
    a dictionary lookup, no parse, so categorising stays as fast as the rules around it."""
    return frozenset(lemma.lower() for lemmas in lexicon().getAllLemmas(word).values() for lemma in lemmas)


def phrases_of(description: str) -> list[str]:
    """A description's phrases: "Health: an illness, an injury; sleep" → ["Health", "an
    illness", "an injury", "sleep"]."""
    return [p.strip(" .") for p in re.split(r"[,;:]", description) if p.strip(" .")]


def _local_embedder(config: MemoryConfig):
    """The pipeline's local MiniLM model (loaded once per process by ``Embedder``),
    whatever provider the config names for item vectors: the offline extractor stays
    offline. One text is embedded as a query (``embed_one``: few threads)."""
    from retrieval.embeddings import Embedder

    embedder = Embedder(config if config.embedding.provider == "local"
                        else config.replace(embedding={"provider": "local"}))
    return lambda texts: [embedder.embed_one(texts[0])] if len(texts) == 1 else embedder.embed(texts)


def technical_session(turns) -> bool:
    """A session about code and systems: at least two of its turns name a path, a flag,
    an identifier with a number or an underscore, a version or a source file, or hold code
    in backticks. Its facts that nothing else places are about the work."""
    hits = 0
    for turn in turns:
        text = turn.content or ""
        # Window by window: over a whole pasted log, the pattern's scans for a word run
        # followed by "/" took time growing with the square of its length.
        if "`" in text or any(_TECHNICAL.search(text, at, at + 1000) for at in range(0, len(text), 800)):
            hits += 1
            if hits >= 2:
                return True
    return False
