"""Train the learned judge of stated changes (``memory_assets/lib/items/change_model.py``).

    python -m evals.change_model            # writes memory_assets/lib/items/change_model.json
    python -m evals.change_model --dry-run  # the validation only

It reads the change set's ``tune`` half only: a ``check`` case is never built, so the
frozen half stays a held-out measure of what the model learned. The tune cases are built
with the pipeline's own stage steps (``evals.change_eval.build``); then every stated change
of a later session is put to the judge against the person's earlier facts, as the run's
rule 5 does, and each pair it weighs is recorded (``recorded_pairs``). A pair is a
positive when the change states the case's new value and the earlier fact its old one.

The model is a logistic regression (scikit-learn; balanced classes, C = 1). It is
validated by leaving one case out: per threshold, how many change cases get their old
fact as the likeliest candidate, and how many distractor or wrong facts would be taken.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from evals.change_eval import CHANGES, ChangeCase, mentions, learned_in, build, load_cases
from memory_assets.lib.items import change_model
from retrieval.config import MemoryConfig

THRESHOLDS = (0.5, 0.7, 0.9, 0.95)


def recorded_pairs(cases: Sequence[ChangeCase], config: MemoryConfig, root: Path) -> list[dict[str, Any]]:
    """The pairs the judge weighs, for every stated change of ``cases`` built into ``root``,
    labelled. The run's own rules settle most changes of the cases they were written on, so
    the judge is asked here about every stated change of a later session (as rule 5 asks
    about the ones no rule settled), against the person's earlier facts as they were
    before it (all active), with the same candidates and features as in the run."""
    from memory_assets.lib.items import validity
    from retrieval.embeddings import Embedder
    from retrieval.paths import DataRoot
    from retrieval.store import ItemStore

    with change_model.recording():  # the judge is silent: the build owes nothing to an earlier model
        build(cases, root, config)
    embedder = Embedder(config)
    items = ItemStore(DataRoot.resolve(root)).items()
    by_id = {c.case_id: c for c in cases}
    out: list[dict[str, Any]] = []
    for case_id, case in by_id.items():
        mine = items.filter(pl.col("namespace") == case_id).filter(
            (pl.col("relation").fill_null("") != "") & (pl.col("subject_key").fill_null("") != "")
            & pl.col("status").is_in(["active", "superseded"])).sort("created_at")
        if mine.height < 2:
            continue
        rows = {k: {**r, "status": "active"} for k, r in enumerate(mine.to_dicts())}
        vectors = np.asarray(embedder.embed([r["content"] for r in rows.values()]), dtype=np.float32)
        names = validity.names_in(r.get("entities") for r in rows.values())
        who = {w for r in rows.values() if validity.named(r["subject_key"], names)
               for w in validity.person_of(r["subject_key"]).split()}
        first = case.sessions[0].session_id
        with change_model.recording() as pairs:
            for n, new in rows.items():
                if new["states_change"] and not new["tentative"] and first not in learned_in(new):
                    validity.judged(n, list(range(n)), rows, set(), config, names, embedder.embed, vectors, who, None, "")
        for pair in pairs:
            new, old = (next(r for r in rows.values() if r["id"] == pair[k]) for k in ("new", "old"))
            positive = (case.kind == "change" and mentions(new["content"], case.new)
                        and mentions(old["content"], case.old) and not mentions(old["content"], case.new)
                        and first in learned_in(old))
            out.append({**pair, "case": case_id, "kind": case.kind, "label": int(positive)})
    return out


def fit(pairs: Sequence[dict[str, Any]]) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    labels = [p["label"] for p in pairs]
    if len(set(labels)) < 2:
        raise SystemExit("the recorded pairs hold one class only: nothing to learn")
    model = LogisticRegression(C=1.0, max_iter=5000, class_weight="balanced")
    model.fit(np.array([p["features"] for p in pairs]), labels)
    return model.coef_[0], float(model.intercept_[0])


def validate(pairs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Leave one case out: per threshold, the change cases whose likeliest candidate (of a
    change the judge was asked about) is their old fact, and the facts taken wrongly."""
    cases = sorted({p["case"] for p in pairs})
    scored: list[tuple[dict[str, Any], float]] = []
    for case in cases:
        train = [p for p in pairs if p["case"] != case]
        if len({p["label"] for p in train}) < 2:
            continue
        coef, intercept = fit(train)
        for p in (p for p in pairs if p["case"] == case):
            scored.append((p, float(1.0 / (1.0 + np.exp(-(np.asarray(p["features"]) @ coef + intercept))))))
    best: dict[str, tuple[dict[str, Any], float]] = {}
    for p, q in scored:
        if p["new"] not in best or q > best[p["new"]][1]:
            best[p["new"]] = (p, q)
    asked = {p["case"] for p in pairs if p["kind"] == "change" and any(x["label"] for x in pairs if x["case"] == p["case"])}
    out: dict[str, Any] = {"cases": len(cases), "pairs": len(pairs), "positives": sum(p["label"] for p in pairs),
                           "change_cases_with_a_positive": len(asked)}
    for t in THRESHOLDS:
        taken = [p for p, q in best.values() if q >= t]
        right = defaultdict(bool)
        wrong = 0
        for p in taken:
            right[p["case"]] |= bool(p["label"])
            wrong += not p["label"]
        out[f"at {t}"] = {"changes_found": sum(right.values()), "wrong": wrong}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from retrieval.config import load_config

    parser = argparse.ArgumentParser(prog="python -m evals.change_model", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="validate only; write no model file")
    parser.add_argument("--out", type=Path, default=change_model.MODEL)
    args = parser.parse_args(argv)
    config = load_config()
    tune = [c for c in load_cases(CHANGES) if c.split == "tune"]
    with tempfile.TemporaryDirectory(prefix="change-model-") as tmp:
        pairs = recorded_pairs(tune, config, Path(tmp))
    report = validate(pairs)
    print(json.dumps(report, indent=1))
    if not args.dry_run:
        coef, intercept = fit(pairs)
        args.out.write_text(json.dumps({
            "features": list(change_model.FEATURES), "coef": [round(float(c), 6) for c in coef],
            "intercept": round(intercept, 6), "trained": date.today().isoformat(),
            "trained_on": f"the change set's tune half: {len({c.case_id for c in tune})} cases, {report['pairs']} pairs, "
                          f"{report['positives']} positives", "command": "python -m evals.change_model",
            "validation": report}, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
