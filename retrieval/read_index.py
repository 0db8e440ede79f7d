"""A published version's in-process read indexes: what every ``inject`` searches.

LanceDB is the store of record, the path for filters and ``as_of``, and the fallback. But a
LanceDB query costs about 2 ms even on a 500-row table, and importing it 3 s (a hook's cold
start). So each version the pipeline writes also gets, aligned row by row with its Parquet
snapshot (entry ``i`` is the snapshot's row ``i``), a folder of:

- ``vectors.faiss``: the version's vectors (FAISS, inner product over unit vectors: the
  cosine). Up to ``EXACT_ROWS`` rows a flat index, searched exactly as LanceDB searches a
  table without a vector index; above, an HNSW graph (``HNSW_LINKS`` links a node, built at
  ``HNSW_BUILD_DEPTH``, searched at ``HNSW_SEARCH_DEPTH`` or deeper). Both keep the vectors
  as stored, so ``vectors(rows)`` returns them; opened with the codes memory-mapped.
- ``bm25/``: a BM25 index of each item's search text (bm25s: Lucene's formula, LanceDB's k1
  and b), over the words LanceDB's full-text index makes of it (``analyze``).
- ``trigger_forms.json``: the inflected forms of the negative rules' trigger words
  (``trigger_forms``), so a reader does not load lemminflect's tables to inflect them;
- ``manifest.json``, written last: the rows, the digest of their ids (a reader checks the
  index against the snapshot it holds), the embedding model and dimension (the vectors of
  one model are never searched with another's query).

The pipeline builds the folder on its disk (``build``) and the warehouse copies it under
the data root; a reader opens it in place on a disk and, from an object store, fetches the
files once into a local cache named by the version (``local_copy``), never rebuilding.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from retrieval.text import FULL_TEXT_STOPWORDS, inflections, literal_pattern, trigger_word

FORMAT = 1
MANIFEST = "manifest.json"
VECTORS = "vectors.faiss"
BM25 = "bm25"
FORMS = "trigger_forms.json"
# LanceDB searches a table exactly below its vector index's size (lib/items/publish.py's
# VECTOR_INDEX_MIN_ROWS): so does this, and the two lists are the same there.
EXACT_ROWS = 20_000
HNSW_LINKS = 32
HNSW_BUILD_DEPTH = 80
HNSW_SEARCH_DEPTH = 128
# LanceDB's BM25 parameters (and Lucene's).
K1, B = 1.2, 0.75
# LanceDB's full-text analyzer: words of letters and digits, a token of this many bytes or
# more dropped, then lower case, stop words, ASCII folding and the English stemmer.
_WORD = re.compile(r"[^\W_]+")
MAX_TOKEN_BYTES = 40


class IndexUnusable(RuntimeError):
    """This folder cannot answer for the snapshot or model at hand (why is the message)."""


@dataclass(frozen=True)
class Manifest:
    format: int
    rows: int
    dimension: int
    models: tuple[str, ...]
    ids_digest: str
    exact: bool
    files: tuple[str, ...]

    @classmethod
    def read(cls, raw: bytes) -> Manifest:
        data = json.loads(raw)
        return cls(**{**data, "models": tuple(data["models"]), "files": tuple(data["files"])})


def ids_digest(ids: Sequence[str]) -> str:
    """The digest of the rows' ids in order: an index answers only for the snapshot it was built from."""
    h = hashlib.sha256()
    for item_id in ids:
        h.update(item_id.encode() + b"\n")
    return h.hexdigest()


_STEMMER: Any = None


def analyze(text: str) -> list[str]:
    """The terms of ``text`` as LanceDB's full-text index makes them (its defaults: the simple
    tokenizer, long tokens removed, lower case, English stop words, ASCII folding, the
    English Snowball stemmer): a query matches the same words in both."""
    global _STEMMER
    words = []
    for token in _WORD.findall(text):
        if len(token.encode()) >= MAX_TOKEN_BYTES:
            continue
        token = token.lower()
        if token in FULL_TEXT_STOPWORDS:
            continue
        if not token.isascii():
            token = "".join(c for c in unicodedata.normalize("NFKD", token) if not unicodedata.combining(c))
        words.append(token)
    if _STEMMER is None:
        import Stemmer

        _STEMMER = Stemmer.Stemmer("english")
    return _STEMMER.stemWords(words)


def trigger_forms(patterns: Sequence[str]) -> dict[str, list[str]]:
    """The inflected forms of each word pattern among ``patterns`` (a negative rule's
    ``trigger_patterns``; literal ones are matched as written), by its normal phrase."""
    words = {trigger_word(p) for p in patterns if p and not literal_pattern(p.lower())}
    return {word: sorted(inflections(word)) for word in sorted(words)}


def build(folder: Path, ids: Sequence[str], vectors: np.ndarray, search_text: Sequence[str],
          models: Sequence[str], patterns: Sequence[str] = ()) -> Manifest:
    """Write the indexes of one version into the empty local ``folder``: ``vectors`` (a row
    per id, unit length) and ``search_text`` (one per id) in the snapshot's row order, and
    the forms of the negative rules' trigger ``patterns``."""
    import faiss

    folder.mkdir(parents=True, exist_ok=True)
    matrix = np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(ids), -1)
    dimension = int(matrix.shape[1])
    exact = len(ids) <= EXACT_ROWS
    index = faiss.IndexFlatIP(dimension) if exact else faiss.IndexHNSWFlat(dimension, HNSW_LINKS, faiss.METRIC_INNER_PRODUCT)
    if not exact:
        index.hnsw.efConstruction = HNSW_BUILD_DEPTH
    faiss.omp_set_num_threads(os.cpu_count() or 1)  # a reader in this process may have set one
    index.add(matrix)
    faiss.write_index(index, str(folder / VECTORS))
    _bm25(folder / BM25, search_text)
    (folder / FORMS).write_text(json.dumps(trigger_forms(patterns)))
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    manifest = Manifest(format=FORMAT, rows=len(ids), dimension=dimension, models=tuple(sorted(set(models))),
                        ids_digest=ids_digest(ids), exact=exact, files=tuple(files))
    (folder / MANIFEST).write_text(json.dumps(asdict(manifest), indent=1))
    return manifest


def _bm25(folder: Path, texts: Sequence[str]) -> None:
    import bm25s

    retriever = bm25s.BM25(k1=K1, b=B, method="lucene")
    # Every row gets at least the empty term, so the index has as many documents as the snapshot rows.
    retriever.index([analyze(t or "") for t in texts], show_progress=False)
    retriever.save(str(folder), show_progress=False)


def local_copy(source: Path, cache: Path) -> Path:
    """``source`` (an index folder under the data root) as a local folder: itself on a disk;
    from an object store, its files fetched once into ``cache`` / the folder's name (a
    version's files never change, so a copy with its manifest is complete)."""
    if isinstance(source, Path) and not hasattr(source, "protocol"):
        return source
    target = cache / source.name
    if (target / MANIFEST).exists():
        return target
    manifest = Manifest.read((source / MANIFEST).read_bytes())
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{source.name}-", dir=cache))
    try:
        for name in manifest.files:
            local = staging / name
            local.parent.mkdir(parents=True, exist_ok=True)
            local.write_bytes((source / name).read_bytes())
        (staging / MANIFEST).write_bytes((source / MANIFEST).read_bytes())
        try:
            os.replace(staging, target)
        except OSError:  # another reader fetched it first
            shutil.rmtree(staging, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


class ReadIndex:
    """One version's indexes, opened from a local folder; searches are thread-safe."""

    def __init__(self, folder: Path, manifest: Manifest, vectors: Any, bm25: Any):
        self.folder, self.manifest = folder, manifest
        self._vectors, self._bm25 = vectors, bm25
        self._forms: dict[str, list[str]] | None = None

    @classmethod
    def open(cls, folder: Path, *, ids: Sequence[str] | None = None, model: str | None = None) -> ReadIndex:
        """The indexes in ``folder``; ``IndexUnusable`` when they are of another format, were
        built for other rows than ``ids`` (the snapshot's, in order) or hold another model's
        vectors than ``model``'s."""
        import faiss

        try:
            manifest = Manifest.read((folder / MANIFEST).read_bytes())
        except (FileNotFoundError, KeyError, TypeError, ValueError) as err:
            raise IndexUnusable(f"{folder}: no readable {MANIFEST} ({err})") from err
        if manifest.format != FORMAT:
            raise IndexUnusable(f"{folder}: format {manifest.format}, this reader reads {FORMAT}")
        if ids is not None and (len(ids) != manifest.rows or ids_digest(ids) != manifest.ids_digest):
            raise IndexUnusable(f"{folder}: built for other rows than the snapshot's")
        if model is not None and manifest.models and manifest.models != (model,):
            raise IndexUnusable(f"{folder}: vectors of {', '.join(manifest.models)}, queries of {model}")
        vectors = faiss.read_index(str(folder / VECTORS), faiss.IO_FLAG_MMAP_IFC)
        # One query at a time needs no OpenMP team, and a team's threads spin after each
        # search on the cores the next query's embedding needs (its p50 went 4.7 → 7.3 ms).
        faiss.omp_set_num_threads(1)
        return cls(folder, manifest, vectors, _Scores.load(folder / BM25))

    @property
    def rows(self) -> int:
        return self.manifest.rows

    def nearest(self, vector: np.ndarray, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` rows nearest to ``vector`` by cosine, best first: (rows, cosine
        distances); only rows ``mask`` holds, when given (FAISS skips the others as it
        searches, so the ``k`` are of those rows)."""
        import faiss

        k = min(k, self.rows)
        if k <= 0 or (mask is not None and not mask.any()):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        query = np.ascontiguousarray(vector, dtype=np.float32).reshape(1, -1)
        selector = None if mask is None else faiss.IDSelectorBitmap(
            np.packbits(np.asarray(mask, dtype=bool), bitorder="little"))
        if self.manifest.exact:
            params = faiss.SearchParameters(sel=selector) if selector is not None else None
        else:
            # A filter leaves fewer neighbours on the graph's paths: look wider.
            depth = max(HNSW_SEARCH_DEPTH, k) if selector is None else max(4 * HNSW_SEARCH_DEPTH, 4 * k)
            params = faiss.SearchParametersHNSW(efSearch=depth, sel=selector) if selector is not None \
                else faiss.SearchParametersHNSW(efSearch=depth)
        similarity, rows = self._vectors.search(query, k, params=params)
        found = rows[0] >= 0
        return rows[0][found].astype(np.int64), (1.0 - similarity[0][found]).astype(np.float32)

    def matching(self, text: str, k: int, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best rows by BM25 for ``text``'s terms, best first: (rows, scores); only
        rows holding one of them (none when ``text`` has no term the index knows), and only
        rows ``mask`` holds, when given."""
        terms = [t for t in analyze(text) if t in self._bm25.vocab]
        if not terms or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        scores = self._bm25.scores(terms)
        held = np.flatnonzero((scores > 0) & mask) if mask is not None else np.flatnonzero(scores > 0)
        if len(held) > k:
            held = held[np.argpartition(-scores[held], k - 1)[:k]]
        order = held[np.lexsort((held, -scores[held]))]
        return order.astype(np.int64), scores[order].astype(np.float32)

    @property
    def forms(self) -> dict[str, list[str]]:
        """The trigger words' inflected forms (``trigger_forms``), read when first asked."""
        if self._forms is None:
            path = self.folder / FORMS
            self._forms = json.loads(path.read_text()) if path.exists() else {}
        return self._forms

    def vectors(self, rows: Sequence[int]) -> np.ndarray:
        """The stored vectors of ``rows``, in that order."""
        if not len(rows):
            return np.zeros((0, self.manifest.dimension), dtype=np.float32)
        return np.asarray(self._vectors.reconstruct_batch(np.asarray(rows, dtype=np.int64)), dtype=np.float32)


class _Scores:
    """bm25s's saved index, read with numpy: per term, the BM25 score it gives each row
    that holds it (a column of the CSC matrix bm25s writes; memory-mapped), so a query's
    scores are the sum of its terms' columns, which is bm25s's own retrieval. Read here and
    not through ``bm25s.BM25.load``: importing bm25s brings scipy.sparse, 0.4 s of every
    cold start, for the same few lines of numpy."""

    def __init__(self, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, vocab: dict[str, int], rows: int):
        self.data, self.indices, self.indptr, self.vocab, self.rows = data, indices, indptr, vocab, rows

    @classmethod
    def load(cls, folder: Path) -> _Scores:
        def array(name: str) -> np.ndarray:
            return np.load(folder / name, mmap_mode="r", allow_pickle=False)

        params = json.loads((folder / "params.index.json").read_text())
        vocab = json.loads((folder / "vocab.index.json").read_text())
        return cls(array("data.csc.index.npy"), array("indices.csc.index.npy"), array("indptr.csc.index.npy"),
                   vocab, int(params["num_docs"]))

    def scores(self, terms: Sequence[str]) -> np.ndarray:
        """Each row's BM25 score for ``terms`` (known terms; one repeated counts again, as in bm25s)."""
        out = np.zeros(self.rows, dtype=np.float32)
        for term in terms:
            start, end = int(self.indptr[self.vocab[term]]), int(self.indptr[self.vocab[term] + 1])
            out[self.indices[start:end]] += self.data[start:end]
        return out
