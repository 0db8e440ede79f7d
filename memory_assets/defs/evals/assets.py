"""How good extraction and retrieval are, run by run: metrics with their history."""

from datetime import datetime, timezone

import dagster as dg
from dagster_duckdb import DuckDBResource

from memory_assets.defs.extraction.assets import EXTRACTION_CODE_VERSION
from memory_assets.defs.runtime import MemoryRoot
from evals import history as eval_history
from retrieval.llm import load_prompt

# An F1 more than this below the best recorded run of the same extractor fails the gate.
F1_MARGIN = 0.02


class ExtractionEvalRun(dg.Config):
    extractor: str = ""      # offline | llm; empty: llm when OPENAI_API_KEY is set
    dataset: str = "gold"    # gold | locomo | a path


def _history(pattern: str) -> str:
    """A table expression over every run's Parquet file (a glob of our own data root)."""
    return "read_parquet('" + pattern.replace("'", "''") + "', union_by_name = true)"


def _trend(duckdb: DuckDBResource, pattern: str, metric: str, extractor: str, source: str | None = None) -> list[tuple]:
    """``metric`` run by run for one extractor (and, for extraction, one scored dataset)."""
    where, params = ("extractor = ?", [extractor]) if source is None \
        else ("extractor = ? and source = ?", [extractor, source])
    with duckdb.get_connection() as conn:
        return conn.execute(
            f'select run_at, "{metric}" from {_history(pattern)} where {where} order by run_at', params
        ).fetchall()


@dg.asset(
    group_name="evals",
    kinds={"python", "duckdb", "parquet"},
    code_version=f"extraction-eval-{EXTRACTION_CODE_VERSION}",
    pool="duckdb",
    automation_condition=dg.AutomationCondition.code_version_changed(),
)
def extraction_eval(context: dg.AssetExecutionContext, config: ExtractionEvalRun, memory: MemoryRoot,
                    duckdb: DuckDBResource) -> dg.MaterializeResult:
    """How accurately sessions become facts: precision, recall and F1 against the
    hand-labelled gold set (or LoCoMo's observations), category/kind/trust accuracy,
    junk rate, and leaks (credentials or must-not content that reached items — must be
    0). Each run is kept with its prompt version, extractor, model and git revision; the
    regression gate compares it with the best run before it.
    """
    from evals.extraction_eval import run_extraction_eval

    extractor = config.extractor or ("llm" if memory.config.llm_enabled else "offline")
    now = datetime.now(timezone.utc)
    report = run_extraction_eval(config.dataset, extractor, config=memory.config)
    # ``dataset`` is the kind (gold | locomo); ``source`` what was scored, so a run is only
    # ever compared with runs over the same sessions.
    row = {**report, "extractor": extractor, "source": config.dataset,
           "prompt_version": load_prompt("extract_facts").version,
           "code_version": EXTRACTION_CODE_VERSION, "model": report.get("model") or memory.config.llm.model
           if extractor == "llm" else "rules", "git_revision": eval_history.git_revision()}
    eval_history.append(memory.paths, "extraction", row, now)
    trend = _trend(duckdb, eval_history.glob(memory.paths, "extraction"), "f1", extractor, config.dataset)
    keys = ("precision", "recall", "f1", "junk_rate", "leaks", "category_accuracy", "kind_accuracy",
            "trust_accuracy", "supersedes_accuracy", "recall_calibrated")
    return dg.MaterializeResult(metadata={
        **{k: report[k] for k in keys if isinstance(report.get(k), (int, float))},
        "extractor": extractor,
        "dataset": config.dataset,
        "git_revision": row["git_revision"],
        "runs_recorded": len(trend),
        "f1_trend": dg.MetadataValue.md("\n".join(f"- {at:%Y-%m-%d %H:%M} F1 {f1:.3f}" for at, f1 in trend[-10:])),
    })


@dg.asset_check(asset="extraction_eval", blocking=True,
                description=f"Fails when the latest run leaked anything, or its F1 fell more than {F1_MARGIN} "
                            "below the best recorded run of the same extractor (the regression gate).")
def extraction_regression_gate(memory: MemoryRoot, duckdb: DuckDBResource) -> dg.AssetCheckResult:
    pattern = eval_history.glob(memory.paths, "extraction")
    with duckdb.get_connection() as conn:
        latest = conn.execute(
            f"select extractor, source, f1, leaks, run_at from {_history(pattern)} order by run_at desc limit 1"
        ).fetchone()
        if latest is None:
            return dg.AssetCheckResult(passed=False, description="no extraction eval recorded yet")
        extractor, source, f1, leaks, at = latest
        # The best earlier run of the same extractor over the same sessions: a LoCoMo run's
        # F1 says nothing about the gold set's.
        best = conn.execute(
            f"select max(f1) from {_history(pattern)} where extractor = ? and source = ? and run_at < ?",
            [extractor, source, at]).fetchone()[0]
    regressed = best is not None and f1 < best - F1_MARGIN
    return dg.AssetCheckResult(
        passed=not regressed and leaks == 0,
        severity=dg.AssetCheckSeverity.ERROR,
        description=("leaks" if leaks else "F1 regressed" if regressed else "no regression, no leak"),
        metadata={"extractor": extractor, "dataset": str(source), "f1": f1,
                  "best_before": best if best is not None else -1.0, "leaks": leaks, "margin": F1_MARGIN},
    )


class RetrievalEvalRun(dg.Config):
    k: int = 10
    extractor: str = ""


@dg.asset(
    group_name="evals",
    kinds={"python", "duckdb", "lancedb", "parquet"},
    code_version=f"retrieval-eval-{EXTRACTION_CODE_VERSION}-{load_prompt('query_rewrite').version}",
    pool="duckdb",
    automation_condition=dg.AutomationCondition.code_version_changed(),
)
def retrieval_eval(context: dg.AssetExecutionContext, config: RetrievalEvalRun, memory: MemoryRoot,
                   duckdb: DuckDBResource) -> dg.MaterializeResult:
    """How often the memory an agent gets injected holds the answer: LoCoMo's questions
    asked through ``MemoryClient``, recall@1/5/10 against the evidence turns, MRR,
    injected tokens and latency — kept run by run beside the extraction eval.
    """
    from evals.locomo import default_dir as default_locomo_dir
    from evals.retrieval_eval import run_eval

    extractor = config.extractor or ("llm" if memory.config.llm_enabled else "offline")
    locomo_dir = default_locomo_dir()
    files = sorted(locomo_dir.glob("*.json"))
    if not files:
        raise dg.Failure(f"no LoCoMo conversations under {locomo_dir} (set MEMORY_LOCOMO_DIR)")
    report, _ = run_eval(files, config=memory.config, k=config.k, extractor=extractor)
    now = datetime.now(timezone.utc)
    row = {**report, "extractor": extractor, "git_revision": eval_history.git_revision(),
           **{f"recall_at_{k}": v for k, v in report["recall_at_k"].items()}}
    eval_history.append(memory.paths, "retrieval", row, now)
    trend = _trend(duckdb, eval_history.glob(memory.paths, "retrieval"), f"recall_at_{config.k}", extractor)
    return dg.MaterializeResult(metadata={
        "questions": report["questions"],
        **{f"recall@{k}": v for k, v in report["recall_at_k"].items()},
        "mrr": report["mrr"],
        "injected_tokens_mean": report["injected_tokens_mean"],
        "latency_p50_ms": report["latency_ms"]["p50"],
        "recall_trend": dg.MetadataValue.md("\n".join(f"- {at:%Y-%m-%d %H:%M} {r:.3f}" for at, r in trend[-10:])),
    })
