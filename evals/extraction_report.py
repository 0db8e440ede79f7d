"""The extraction eval's report: per-session rows summed into the headline figures
(``summary``), and the text ``memory eval extraction`` prints (``format_report``)."""

from __future__ import annotations

from typing import Any

from evals.observation_curve import ObservationCurve
from evals.scorers import (
    FactMatcher,
    precision_recall_f1,
)
from retrieval.llm import Usage
from retrieval.config import MemoryConfig

# Examples kept in the report per kind of failure; the JSON lists every one per session.
EXAMPLES = 10


# --- the report -----------------------------------------------------------------------------

def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def _total(rows: list[dict[str, Any]], key: str) -> int:
    return sum(int(r.get(key) or 0) for r in rows)


def summary(dataset: str, extractor: Any, rows: list[dict[str, Any]], matcher: FactMatcher,
             config: MemoryConfig, seconds: float) -> dict[str, Any]:

    def total(key: str) -> int:
        return _total(rows, key)

    extracted, gold = total("extracted"), total("gold_facts")
    prompt_tokens, completion_tokens = total("prompt_tokens"), total("completion_tokens")
    sessions = len(rows)
    report: dict[str, Any] = {
        "dataset": dataset,
        "extractor": extractor.name,
        "extractor_version": extractor.version,
        "sessions": sessions,
        "extracted": extracted,
        "gold_facts": gold,
    }
    if dataset == "locomo":
        matched = total("matched_extracted")
        precision = matched / extracted if extracted else 0.0
        recall = total("recalled") / gold if gold else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        curve = ObservationCurve.fit(matcher)
        calibrated, low, high = curve.recall([s for r in rows for s in r["best_similarity"]])
        report.update({
            "precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4),
            "recall_calibrated": round(calibrated, 4),
            "recall_calibrated_ci95": [round(low, 4), round(high, 4)],
            "calibration_pairs": sum(curve.labelled),
            "recall_joined": _ratio(total("recalled_joined"), gold),
            "turn_coverage": _ratio(total("turn_covered"), gold),
            "category_accuracy": None, "kind_accuracy": None, "trust_accuracy": None, "supersedes_accuracy": None,
        })
    else:
        matched = total("matched")
        precision, recall, f1 = precision_recall_f1(matched, extracted - total("optional_matched"), gold)
        pairs = [p for r in rows for p in r["matches"]]
        report.update({
            "precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4),
            "category_accuracy": _ratio(sum(p["category"][2] for p in pairs), len(pairs)),
            "kind_accuracy": _ratio(sum(p["kind"][2] for p in pairs), len(pairs)),
            "trust_accuracy": _ratio(sum(p["trust"][2] for p in pairs), len(pairs)),
            "supersedes_accuracy": _ratio(total("supersedes_correct"), total("supersedes_gold")),
            "optional_matched": total("optional_matched"),
            "adversarial_sessions": sum(1 for r in rows if r["adversarial"]),
        })
    judge = matcher.judge
    report.update({
        "junk": total("junk"),
        "junk_rate": round(total("junk") / extracted, 4) if extracted else 0.0,
        "leaks": total("leaks"),
        "leak_examples": [{"session_id": r["session_id"], **e} for r in rows for e in r["leak_examples"]][:EXAMPLES],
        "rejected": total("rejected"),
        "failed_sessions": [r["session_id"] for r in rows if r["failed"]],
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "cost_usd_per_session": round(Usage(0, prompt_tokens, completion_tokens).cost_usd(config) / sessions, 6)
        if sessions else 0.0,
        "threshold": matcher.threshold,
        "judge": None if judge is None else {
            "model": str(config.llm.model), "prompt_version": judge.version, "calls": judge.calls,
            "failures": judge.failures, "prompt_tokens": judge.prompt_tokens,
            "completion_tokens": judge.completion_tokens,
            "cost_usd": round(Usage(0, judge.prompt_tokens, judge.completion_tokens).cost_usd(config), 6),
        },
        "seconds": round(seconds, 1),
        "per_session": rows,
    })
    return report


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def format_details(report: dict[str, Any]) -> list[str]:
    """Per session, what went wrong: extracted facts that matched nothing (``junk`` when
    the transcript does not support them either), labelled facts nobody extracted, and
    leaks. Sessions with nothing to show are left out."""
    lines: list[str] = []
    gold_word = "observation" if report["dataset"] == "locomo" else "gold"
    for row in report["per_session"]:
        junk = set(row.get("junk_facts") or [])
        missed = [m["observation"] if isinstance(m, dict) else m for m in row.get("missed") or []]
        if not (row.get("unmatched") or missed or row.get("leak_examples")):
            continue
        lines.append(f"  {row['session_id']}: {row['extracted']} extracted, {row['gold_facts']} {gold_word} facts")
        lines += [f"    leak       {e['content']!r} — {e['reason']}" for e in row.get("leak_examples") or []]
        lines += [f"    {'junk' if u in junk else 'unmatched':<10} {u}" for u in row.get("unmatched") or []]
        lines += [f"    missed     {m}" for m in missed]
    return lines


def format_report(report: dict[str, Any], details: bool = False) -> str:
    """The human-readable summary of one report; with ``details``, per session the
    unmatched, junk and missed facts and the leaks."""
    lines = [
        f"extraction eval — {report['dataset']} ({report['extractor']} extractor {report['extractor_version']}, "
        f"{report['sessions']} sessions, match threshold {report['threshold']:.2f}"
        + (", LLM judge" if report.get("judge") else "") + ")",
        f"  extracted facts      {report['extracted']}  (gate rejected {report['rejected']})",
        f"  {'observations' if report['dataset'] == 'locomo' else 'gold facts':<21}{report['gold_facts']}",
        f"  precision            {report['precision']:.3f}"
        + ("  (lower bound: observations are not exhaustive)" if report["dataset"] == "locomo" else ""),
        f"  recall               {report['recall']:.3f}",
        f"  f1                   {report['f1']:.3f}",
    ]
    if report["dataset"] == "locomo":
        lo, hi = report["recall_calibrated_ci95"]
        lines.append(f"  recall, calibrated   {report['recall_calibrated']:.3f}  (95 % {lo:.3f}–{hi:.3f}; by cosine band, "
                     f"from {report['calibration_pairs']} hand-labelled pairs)")
        lines.append(f"  recall, joined       {report['recall_joined']:.3f}  (the facts from the observation's turn, together)")
        lines.append(f"  turn coverage        {report['turn_coverage']:.3f}  (some fact from the observation's turn)")
    else:
        lines += [
            f"  category accuracy    {_pct(report['category_accuracy'])}",
            f"  kind accuracy        {_pct(report['kind_accuracy'])}",
            f"  trust accuracy       {_pct(report['trust_accuracy'])}",
            f"  supersedes accuracy  {_pct(report['supersedes_accuracy'])}",
        ]
    lines += [
        f"  junk_rate            {_pct(report['junk_rate'])}  ({report['junk']} of {report['extracted']})",
        f"  leaks                {report['leaks']}",
    ]
    for example in report["leak_examples"]:
        lines.append(f"    leak in {example['session_id']}: {example['content']!r} — {example['reason']}")
    if report["failed_sessions"]:
        lines.append(f"  failed sessions      {len(report['failed_sessions'])}: {', '.join(report['failed_sessions'][:10])}")
    lines.append(f"  tokens               {report['prompt_tokens']} prompt + {report['completion_tokens']} completion; "
                 f"${report['cost_usd_per_session']:.6f} per session")
    if report.get("judge"):
        j = report["judge"]
        lines.append(f"  judge                {j['calls']} calls ({j['failures']} failed), ${j['cost_usd']:.6f}")
    lines.append(f"  time                 {report['seconds']} s")
    if details:
        lines += ["", "  per session (unmatched: extracted, matches nothing labelled; junk: and the transcript does not "
                  "support it; missed: labelled, not extracted)"] + format_details(report)
    return "\n".join(lines)
