"""A learned judge of what a stated change is about (issue 29): for a change that no rule
of ``validity`` settled, how likely each of the person's earlier facts is the one it
replaces, from the fields the pipeline already has.

The rules compare one signal at a time against its own bar (the relation, the slot's
meaning, the kind of value), so a change worded in a way no rule was written for falls
between them: "Rafael raised her allowance, she gets $15 a week now" shares the word
"allowance" with "Sofia gets $10 a week allowance", reads apart by slot and names no
value of the same kind. A logistic model weighs the signals together:

- ``same_relation``, ``general`` (the change's relation names no slot: "is", "has"),
  ``same_subject``, ``old_named`` / ``new_named`` (a person the user's facts name);
- ``fact`` (cosine of the two facts), ``slot`` (of their slots), ``kind`` (the most alike
  value phrases, ``value_kinds``), ``first`` (the earlier fact is the most alike of the
  candidates by the whole fact);
- ``shared`` (content words both say, names and stop words aside, up to 3), ``numbers``
  (both hold numbers and they differ), ``ending`` (the cue ends something: "quit"),
  ``one_value`` (the relation holds one value at a time).

Its weights are a small file beside this module (``change_model.json``), written by
``python -m evals.change_model`` from the change set's ``tune`` half alone (the frozen
``check`` half is never read by it), validated there by leaving one case out. At
``[graph] change_model_retire`` or more the earlier fact is retired (rule "learned"); at
``change_model_conflict`` or more both are served marked ``[conflict]``, newest first.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from memory_assets.lib.items import value_kinds
from retrieval.text import STOPWORDS

MODEL = Path(__file__).with_name("change_model.json")
FEATURES = ("same_relation", "general", "same_subject", "old_named", "new_named", "fact", "slot", "kind",
            "first", "shared", "numbers", "ending", "one_value")


def features(old: dict, new: dict, *, fact: float, slot: float, kind: float, first: bool, same_relation: bool,
             general: bool, same_subject: bool, old_named: bool, new_named: bool, ending: bool, one_value: bool,
             names: Collection[str]) -> np.ndarray:
    """The pair's feature vector, in ``FEATURES`` order."""
    people = {n.lower() for n in names}

    def said(row: dict) -> set[str]:
        return {w.lower() for w in row.get("words") or ()} - people - STOPWORDS
    shared = {w for w in said(old) & said(new) if len(w) > 2 and not w.isdigit()}
    a, b = set(old.get("numbers") or ()), set(new.get("numbers") or ())
    return np.array([same_relation, general, same_subject, old_named, new_named, fact, slot, kind, first,
                     min(len(shared), 3), bool(a) and bool(b) and a != b, ending, one_value], dtype=np.float64)


def judge(new: dict, older: Sequence[dict], facts: np.ndarray, embed, people: Collection[str],
          flags: Callable[[dict], dict[str, Any]]) -> np.ndarray | None:
    """The probability that each of ``older`` (the most alike first; ``facts`` their cosines
    to ``new``) is the fact the change ``new`` replaces, or None without a model. ``flags``
    gives a pair's structural features (``features``' keywords but the similarities)."""
    if not older:
        return None
    texts = [new.get("slot") or new["content"], *(o.get("slot") or o["content"] for o in older)]
    slots = np.asarray(embed(texts), dtype=np.float32)
    slot = slots[1:] @ slots[0]
    kinds = value_kinds.most_alike(new, older, people, embed)
    table = []
    for k, old in enumerate(older):
        table.append(features(old, new, fact=float(facts[k]), slot=float(slot[k]), kind=float(kinds[k]),
                              first=k == 0, **flags(old)))
        record(new, old, table[-1])
    return probability(np.vstack(table))


@lru_cache(maxsize=4)
def _weights(path: str) -> tuple[np.ndarray, float] | None:
    file = Path(path)
    if not file.exists():
        return None
    data = json.loads(file.read_text(encoding="utf-8"))
    if tuple(data["features"]) != FEATURES:
        raise ValueError(f"{file}: trained on features {data['features']}, this code reads {list(FEATURES)}: "
                         "retrain it (python -m evals.change_model)")
    return np.asarray(data["coef"], dtype=np.float64), float(data["intercept"])


def probability(rows: np.ndarray, path: Path | None = None) -> np.ndarray | None:
    """How likely each feature row's earlier fact is the one the change replaces; None
    without a model file, and while ``recording`` (the rules alone decide then)."""
    weights = None if _RECORDED is not None else _weights(str(path or MODEL))
    if weights is None or not len(rows):
        return None
    coef, intercept = weights
    return 1.0 / (1.0 + np.exp(-(np.asarray(rows, dtype=np.float64) @ coef + intercept)))


# --- recording the pairs the model is trained on ------------------------------------------

_RECORDED: list[dict[str, Any]] | None = None


@contextmanager
def recording() -> Iterator[list[dict[str, Any]]]:
    """Within this block, every pair the model is asked about is kept ({new, old, features}):
    the training command labels them, so it learns from exactly what the run compares."""
    global _RECORDED
    previous, _RECORDED = _RECORDED, []
    try:
        yield _RECORDED
    finally:
        _RECORDED = previous


def record(new: dict, old: dict, row: np.ndarray) -> None:
    if _RECORDED is not None:
        _RECORDED.append({"new": new["id"], "old": old["id"], "features": [float(x) for x in row]})
