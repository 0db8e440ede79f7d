"""Retrieval eval on LoCoMo: does the injected block hold the turns that answer a question?

For each conversation: ingest it into its own data root and run the real pipeline
(cached, see ``build_root``), then ask every non-adversarial question through the
retrieval core (``retrieval.agent.retrieve``, what ``MemoryClient.inject`` runs) with the clock
set a day after the last session. Every injected
item names the turns it came from (``source_turn_ids``, LoCoMo ``dia_id``s):

* **recall@k** — the share of questions where one of the first k injected items came
  from one of the question's evidence turns (an injection shorter than k misses the
  ranks it does not fill);
* **MRR** — the mean of 1 / rank of the first such item, 0 when none is injected;
* **ceiling** — the share of questions with at least one active item from an evidence
  turn at all: what extraction left for retrieval to find.

``--ablate`` re-asks with one retrieval stage off at a time; ``--baselines`` ranks the
same ingested raw turns (resources) with BM25 (LanceDB full-text search) and MiniLM
cosine, the numbers LoCoMo's README publishes, which checks the scorer itself.

    memory eval retrieval --dataset ../shared/datasets/locomo/*.json --ablate --baselines
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evals import stderr_progress
from evals.locomo import Conversation, LocomoError, Question, expand_datasets, load_conversation
from retrieval.agent.options import RetrievalOptions
from retrieval.config import MemoryConfig, load_config
from retrieval.embeddings import Embedder
from retrieval.paths import DataRoot
from evals.eval_roots import EvalError, build_root, default_cache_dir, default_extractor

REPORTED_KS = (1, 5, 10)
# Candidates each raw-turn baseline list holds before fusion (as the items search does).
BASELINE_CANDIDATES = 50

ABLATIONS: dict[str, RetrievalOptions] = {
    "full": RetrievalOptions(),
    "no rewrite": RetrievalOptions(rewrite=False),
    "no tiers": RetrievalOptions(tiers=False),
    "no graph": RetrievalOptions(graph=False),
    "graph only": RetrievalOptions(fusion="graph"),
    "vector only": RetrievalOptions(fusion="vector"),
    "fts only": RetrievalOptions(fusion="fts"),
    "no scoring": RetrievalOptions(scoring=False),
}


# --- the scorer -------------------------------------------------------------------------

def first_evidence_rank(ranked_turn_ids: Sequence[Iterable[str]], evidence: Iterable[str]) -> int | None:
    """1-based rank of the first ranked entry that came from an evidence turn, else None.

    Args:
        ranked_turn_ids: per ranked entry (item or raw turn), the turn ids it came from.
        evidence: the question's evidence turn ids.
    """
    wanted = set(evidence)
    for rank, turn_ids in enumerate(ranked_turn_ids, start=1):
        if wanted.intersection(turn_ids):
            return rank
    return None


def recall_and_mrr(ranks: Sequence[int | None], ks: Sequence[int]) -> tuple[dict[str, float], float]:
    """(recall@k for each k, keyed ``"k"``; mean reciprocal rank) over per-question ranks.

    A rank of None (nothing from the evidence was ranked) is a miss at every k and adds 0
    to the MRR. An empty question list scores 0.
    """
    n = len(ranks)
    if not n:
        return {str(k): 0.0 for k in ks}, 0.0
    recall = {str(k): sum(1 for r in ranks if r is not None and r <= k) / n for k in ks}
    mrr = sum(1.0 / r for r in ranks if r is not None) / n
    return recall, mrr


def reported_ks(k: int) -> list[int]:
    return sorted({x for x in REPORTED_KS if x <= k} | {k})


# --- asking -----------------------------------------------------------------------------

@dataclass
class Asked:
    """One question asked through ``inject``, and what came back."""

    question: Question
    rank: int | None
    items: list[dict[str, Any]]
    tokens: int
    latency_ms: float
    tier: str
    evidence_in_store: bool
    evidence_extracted: bool

    def as_dict(self, conv: Conversation | None = None) -> dict[str, Any]:
        q = self.question
        row: dict[str, Any] = {
            "conversation": q.conversation, "qa_index": q.index, "question": q.question,
            "answer": q.answer, "category": q.category_name, "evidence": list(q.evidence),
            "rank": self.rank, "evidence_in_store": self.evidence_in_store,
            "evidence_extracted": self.evidence_extracted, "tier": self.tier,
            "tokens": self.tokens, "latency_ms": round(self.latency_ms, 2), "items": self.items,
        }
        if conv is not None:
            row["evidence_text"] = {e: conv.turns.get(e, "") for e in q.evidence}
        return row


def stored_turn_ids(root: Path) -> tuple[set[str], set[str]]:
    """(turn ids some active item came from, turn ids any published item came from).

    The difference is what the lifecycle took away (purged, archived, superseded).
    """
    import polars as pl

    from retrieval.store import ItemStore

    items = ItemStore(DataRoot.resolve(root)).items()
    if items.is_empty():
        return set(), set()
    active = items.filter(pl.col("status") == "active")
    return ({t for ids in active["source_turn_ids"].to_list() for t in (ids or [])},
            {t for ids in items["source_turn_ids"].to_list() for t in (ids or [])})


def item_statuses(root: Path) -> dict[str, int]:
    """How many published items are in each status (active, superseded, purged, …)."""
    from retrieval.store import ItemStore

    items = ItemStore(DataRoot.resolve(root)).items()
    return {} if items.is_empty() else dict(items["status"].value_counts().iter_rows())


def ask_conversation(conv: Conversation, root: Path, *, config: MemoryConfig, options: RetrievalOptions,
                     k: int) -> list[Asked]:
    """Every non-adversarial question of ``conv``, injected with at most ``k`` items:
    the retrieval core as the client runs it (``retrieve`` then ``block``), without the
    client, so an eval writes no ``injected`` event."""
    from retrieval.agent.retrieve import block, retrieve
    from retrieval.agent.stores import Stores
    from retrieval.agent.view import View

    stores = Stores(DataRoot.resolve(root), config)
    view = View.of(config)  # what the agent of the conversation sees

    def inject(text: str):
        return block(retrieve(text, stores, config, options, conv.now, view=view, max_items=k), config, conv.now)

    in_store, extracted = stored_turn_ids(root)
    inject("warm-up: load the model and open the table")  # not timed
    asked = []
    for q in conv.asked:
        started = time.perf_counter()
        injection = inject(q.question)
        latency = (time.perf_counter() - started) * 1000
        ranked = [list(h.source_turn_ids) for h in injection.items]
        asked.append(Asked(
            question=q, rank=first_evidence_rank(ranked, q.evidence),
            items=[{"content": h.content, "source_turn_ids": list(h.source_turn_ids),
                    "score": round(float(h.score), 6)} for h in injection.items],
            tokens=int(injection.tokens), latency_ms=latency, tier=str(injection.tier),
            evidence_in_store=bool(in_store.intersection(q.evidence)),
            evidence_extracted=bool(extracted.intersection(q.evidence)),
        ))
    return asked


def summarize(asked: Sequence[Asked], k: int) -> dict[str, Any]:
    """The headline numbers over a set of asked questions."""
    ks = reported_ks(k)
    recall, mrr = recall_and_mrr([a.rank for a in asked], ks)
    latencies = np.array([a.latency_ms for a in asked]) if asked else np.zeros(1)
    by_category: dict[str, Any] = {}
    for name in sorted({a.question.category_name for a in asked}):
        group = [a for a in asked if a.question.category_name == name]
        cat_recall, cat_mrr = recall_and_mrr([a.rank for a in group], ks)
        by_category[name] = {"questions": len(group), "recall_at_k": _round(cat_recall), "mrr": round(cat_mrr, 4)}
    by_conversation: dict[str, Any] = {}
    for name in dict.fromkeys(a.question.conversation for a in asked):
        group = [a for a in asked if a.question.conversation == name]
        conv_recall, conv_mrr = recall_and_mrr([a.rank for a in group], ks)
        by_conversation[name] = {"questions": len(group), "recall_at_k": _round(conv_recall), "mrr": round(conv_mrr, 4)}
    tiers: dict[str, int] = {}
    for a in asked:
        tiers[a.tier] = tiers.get(a.tier, 0) + 1
    return {
        "questions": len(asked),
        "recall_at_k": _round(recall),
        "mrr": round(mrr, 4),
        "evidence_in_store": _share([a.evidence_in_store for a in asked]),
        "evidence_extracted": _share([a.evidence_extracted for a in asked]),
        "injected_tokens_mean": round(float(np.mean([a.tokens for a in asked])) if asked else 0.0, 1),
        "injected_items_mean": round(float(np.mean([len(a.items) for a in asked])) if asked else 0.0, 2),
        "latency_ms": {"p50": round(float(np.percentile(latencies, 50)), 1),
                       "p95": round(float(np.percentile(latencies, 95)), 1),
                       "mean": round(float(latencies.mean()), 1)},
        "tiers": tiers,
        "by_category": by_category,
        "by_conversation": by_conversation,
    }


def _share(flags: Sequence[bool]) -> float:
    return round(sum(flags) / len(flags), 4) if flags else 0.0


def _round(values: dict[str, float]) -> dict[str, float]:
    return {key: round(value, 4) for key, value in values.items()}


def _add_counts(counts: Iterable[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for count in counts:
        for key, value in count.items():
            total[key] = total.get(key, 0) + value
    return dict(sorted(total.items(), key=lambda kv: -kv[1]))


# --- raw-turn baselines -----------------------------------------------------------------

def raw_turns(root: Path) -> list[tuple[str, str]]:
    """(turn id, "speaker: content") of every ingested resource under ``root``.

    The speaker's name stays in the text: LoCoMo questions name the person ("When did
    Jon lose his job?"), and without it MiniLM recall@10 halves on conv-30.
    """
    import polars as pl

    parts = sorted(DataRoot.resolve(root).resources.glob("*/part-*.parquet"))
    if not parts:
        return []
    frame = pl.concat([pl.read_parquet(p, columns=["external_id", "speaker", "content"]) for p in parts])
    return [(str(t), f"{s}: {c}" if s else str(c)) for t, s, c in frame.iter_rows() if t]


def baseline_ranks(turns: list[tuple[str, str]], questions: Sequence[Question],
                   embedder: Embedder) -> dict[str, list[int | None]]:
    """Per question, the rank of the first evidence turn under BM25, MiniLM cosine and both fused.

    BM25 is LanceDB's full-text search (the same engine and query cleaning the items
    search uses) over a temporary table of the raw turns; dense is exact cosine over
    MiniLM embeddings of the turns. The two are fused twice: by reciprocal rank
    (k=60, as LoCoMo's README reports) and by ``retrieval.agent.search.fuse``, whatever the
    items search fuses with today.
    """
    import lancedb

    from retrieval.agent.search import fts_query, fuse, fuse_rrf

    ids = [t for t, _ in turns]
    matrix = embedder.embed([c for _, c in turns])
    query_vectors = embedder.embed([q.question for q in questions])
    ranks: dict[str, list[int | None]] = {"bm25": [], "dense": [], "bm25+dense rrf": [], "bm25+dense fuse": []}
    with tempfile.TemporaryDirectory(prefix="raw-turns-") as tmp:
        table = lancedb.connect(tmp).create_table("turns", data=[{"id": t, "content": c} for t, c in turns])
        with warnings.catch_warnings():
            # The same (deprecated) call publish.py makes, so turns are tokenized like items.
            warnings.simplefilter("ignore")
            table.create_fts_index("content", with_position=False)
        for q, vector in zip(questions, query_vectors):
            text = fts_query(q.question)
            bm25 = table.search(text, query_type="fts").limit(BASELINE_CANDIDATES).to_list() if text else []
            similarity = matrix @ vector
            dense = [{"id": ids[i], "_distance": 1.0 - float(similarity[i])}
                     for i in np.argsort(-similarity)[:BASELINE_CANDIDATES]]
            lists = {"vector": dense, "fts": bm25}
            for name, rows in (("bm25", bm25), ("dense", dense),
                               ("bm25+dense rrf", [row for row, _ in fuse_rrf(lists)]),
                               ("bm25+dense fuse", [row for row, _ in fuse(lists)])):
                ranks[name].append(first_evidence_rank([[r["id"]] for r in rows], q.evidence))
    return ranks


# --- the whole eval ---------------------------------------------------------------------

def run_eval(datasets: Sequence[str | Path], *, config: MemoryConfig, k: int = 10, extractor: str | None = None,
             cache_dir: Path | None = None, rebuild: bool = False, ablate: bool = False,
             baselines: bool = False, options: RetrievalOptions | None = None,
             progress: Callable[[str], None] | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run the eval; returns (the report, one row per question of the main configuration).

    Args:
        datasets: LoCoMo files, directories or glob patterns.
        config: the memory config the data roots are built and asked with.
        k: items injected per question (``max_items``); recall is reported at 1, 5, 10, k.
        extractor: ``offline`` or ``llm`` (default: ``llm`` when ``OPENAI_API_KEY`` is set).
        cache_dir: where built data roots are kept (default ``$TMPDIR/agent-memory-retrieval-eval``).
        rebuild: rebuild every data root even when a cached one matches.
        ablate: also run each configuration in ``ABLATIONS``.
        baselines: also rank the raw turns with BM25, MiniLM and both fused.
        options: the main configuration (default: every stage on).
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    extractor = extractor or default_extractor()
    cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
    options = options or RetrievalOptions()
    conversations = [load_conversation(p) for p in expand_datasets([str(d) for d in datasets])]
    roots = [build_root(c, config=config, extractor=extractor, cache_dir=cache_dir, rebuild=rebuild, progress=progress)
             for c in conversations]

    def ask_all(opts: RetrievalOptions) -> list[Asked]:
        asked: list[Asked] = []
        for conv, root in zip(conversations, roots):
            asked.extend(ask_conversation(conv, root, config=config, options=opts, k=k))
        return asked

    if progress:
        progress("asking")
    main_run = ask_all(options)
    report: dict[str, Any] = {
        **summarize(main_run, k),
        "k": k,
        "extractor": extractor,
        "options": dataclasses.asdict(options),
        "conversations": [c.sample_id for c in conversations],
        "datasets": [str(c.path) for c in conversations],
        "skipped_adversarial": sum(len(c.questions) - len(c.asked) for c in conversations),
        "questions_without_evidence": sum(1 for c in conversations for q in c.asked if not q.evidence),
        "cache_dir": str(cache_dir),
        "item_status": _add_counts(item_statuses(root) for root in roots),
    }
    if ablate:
        report["ablations"] = {}
        for name, opts in ABLATIONS.items():
            if progress:
                progress(f"ablation: {name}")
            run = main_run if opts == options else ask_all(opts)
            summary = summarize(run, k)
            report["ablations"][name] = {"options": dataclasses.asdict(opts), **{
                key: summary[key] for key in ("questions", "recall_at_k", "mrr", "injected_tokens_mean",
                                              "injected_items_mean", "latency_ms", "by_category")}}
    if baselines:
        if progress:
            progress("baselines over raw turns")
        ks = sorted(set(reported_ks(k)) | {25})
        embedder = Embedder(config)
        ranks: dict[str, list[int | None]] = {}
        for conv, root in zip(conversations, roots):
            for name, values in baseline_ranks(raw_turns(root), conv.asked, embedder).items():
                ranks.setdefault(name, []).extend(values)
        report["baselines"] = {}
        for name, values in ranks.items():
            recall, mrr = recall_and_mrr(values, ks)
            report["baselines"][name] = {"questions": len(values), "recall_at_k": _round(recall), "mrr": round(mrr, 4)}
    by_conv = {c.sample_id: c for c in conversations}
    details = [a.as_dict(by_conv[a.question.conversation]) for a in main_run]
    return report, details


# --- the command line -------------------------------------------------------------------

def format_table(report: dict[str, Any]) -> str:
    ks = list(report["recall_at_k"])
    head = f"{'':<26}" + "".join(f"{'R@' + x:>7}" for x in ks) + f"{'MRR':>7}{'tokens':>8}{'items':>7}{'p50 ms':>8}{'p95 ms':>8}"

    def line(name: str, row: dict[str, Any]) -> str:
        cells = "".join(f"{row['recall_at_k'].get(x, float('nan')):>7.3f}" for x in ks) + f"{row['mrr']:>7.3f}"
        if "injected_tokens_mean" in row:
            cells += (f"{row['injected_tokens_mean']:>8.0f}{row['injected_items_mean']:>7.1f}"
                      f"{row['latency_ms']['p50']:>8.0f}{row['latency_ms']['p95']:>8.0f}")
        return f"{name:<26}{cells}"

    out = [
        f"LoCoMo retrieval: {report['questions']} questions in {len(report['conversations'])} conversations "
        f"(adversarial skipped: {report['skipped_adversarial']}); k={report['k']}; extractor {report['extractor']}",
    ]
    out.append(head)
    if report["options"] not in [row["options"] for row in report.get("ablations", {}).values()]:
        out.append(line("full" if report["options"] == dataclasses.asdict(RetrievalOptions()) else "main", report))
    for name, row in report.get("ablations", {}).items():
        out.append(line(name, row))
    for name, row in report.get("baselines", {}).items():
        out.append(line(f"raw turns: {name}", row))
    if "baselines" in report:
        out.append("  (raw-turn baselines also at R@25: " + ", ".join(
            f"{n} {r['recall_at_k']['25']:.3f}" for n, r in report["baselines"].items()) + ")")
    out.append(f"evidence turn has an active item (recall ceiling): {report['evidence_in_store']:.3f}; "
               f"had any item before the lifecycle: {report['evidence_extracted']:.3f}")
    out.append(f"items by status: {report['item_status']}; tiers answering: {report['tiers']}")
    out.append("")
    out.append(f"{'category':<26}{'n':>5}" + "".join(f"{'R@' + x:>7}" for x in ks) + f"{'MRR':>7}")
    for name, row in report["by_category"].items():
        out.append(f"{name:<26}{row['questions']:>5}" + "".join(f"{row['recall_at_k'][x]:>7.3f}" for x in ks)
                   + f"{row['mrr']:>7.3f}")
    return "\n".join(out)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memory eval retrieval", description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", nargs="+", required=True, metavar="PATH",
                        help="LoCoMo conversation files, directories or glob patterns")
    parser.add_argument("--k", type=int, default=10, help="items injected per question (default 10)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--ablate", action="store_true", help="also run with each retrieval stage off")
    parser.add_argument("--baselines", action="store_true", help="also rank the raw turns with BM25 and MiniLM")
    parser.add_argument("--extractor", choices=("offline", "llm"), default=None,
                        help="extractor for building memory (default: llm if OPENAI_API_KEY is set, else offline)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help=f"where built data roots are kept (default {default_cache_dir()})")
    parser.add_argument("--no-cache", action="store_true", help="rebuild every conversation's memory")
    parser.add_argument("--details", type=Path, default=None, metavar="FILE",
                        help="write one JSON line per question (evidence text, rank, injected items)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    progress = stderr_progress("retrieval eval")

    try:
        report, details = run_eval(args.dataset, config=load_config(), k=args.k, extractor=args.extractor,
                                   cache_dir=args.cache_dir, rebuild=args.no_cache, ablate=args.ablate, baselines=args.baselines,
                                   progress=None if args.json else progress)
    except (LocomoError, EvalError, ValueError) as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    if args.details:
        args.details.parent.mkdir(parents=True, exist_ok=True)
        args.details.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in details))
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else format_table(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
