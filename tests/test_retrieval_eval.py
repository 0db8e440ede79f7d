"""The LoCoMo retrieval eval: its scorer, and a tiny conversation run through the real pipeline."""

from __future__ import annotations

import json

import pytest

from evals.locomo import load_conversation, parse_evidence
from evals.retrieval_eval import first_evidence_rank, main, recall_and_mrr
from retrieval.paths import DataRoot
from retrieval.store import ItemStore

CONVERSATION = {
    "speaker_a": "Melanie",
    "speaker_b": "Caroline",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Melanie", "dia_id": "D1:1", "text": "Hey Caroline! How was your weekend?"},
        {"speaker": "Caroline", "dia_id": "D1:2", "text": "Great! I went to a pottery class at the community center on Saturday."},
        {"speaker": "Melanie", "dia_id": "D1:3", "text": "Big news: I adopted a three-legged greyhound named Biscuit last week."},
        {"speaker": "Caroline", "dia_id": "D1:4", "text": "That's wonderful! I work as a nurse at Mercy Hospital, so I love hearing happy stories."},
    ],
    # A week later: the eval checks retrieval, not how long the lifecycle keeps an event.
    "session_2_date_time": "10:37 am on 15 May, 2023",
    "session_2": [
        {"speaker": "Melanie", "dia_id": "D2:1", "text": "I started training for the Boston marathon in April next year."},
        {"speaker": "Caroline", "dia_id": "D2:2", "text": "Amazing! I am learning to play the cello with a private teacher."},
        {"speaker": "Melanie", "dia_id": "D2:3", "text": "Biscuit loves running with me along the river every morning."},
        {"speaker": "Caroline", "dia_id": "D2:4", "text": "I moved to a small apartment in Portland near my sister."},
    ],
    "qa": [
        {"question": "What is the name of the greyhound Melanie adopted?", "answer": "Biscuit",
         "evidence": ["D1:3"], "category": 4},
        {"question": "Where does Caroline work?", "answer": "Mercy Hospital", "evidence": ["D1:4"], "category": 4},
        # The dataset writes some evidence as one string with two ids.
        {"question": "What does Melanie do with Biscuit?", "answer": "adopted him, runs with him",
         "evidence": ["D1:3; D2:3"], "category": 1},
        {"question": "What instrument does Melanie play?", "adversarial_answer": "cello",
         "evidence": ["D2:2"], "category": 5},
    ],
}


@pytest.fixture
def conversation_file(tmp_path):
    path = tmp_path / "conv-tiny.json"
    path.write_text(json.dumps(CONVERSATION))
    return path


@pytest.mark.parametrize(("ranked", "evidence", "expected"), [
    ([["D1:1"], ["D1:3", "D2:9"], ["D1:3"]], ["D1:3"], 2),
    ([["D1:3"]], ["D9:9", "D1:3"], 1),
    ([["D1:1"], []], ["D1:3"], None),
    ([], ["D1:3"], None),
    ([["D1:1"]], [], None),
])
def test_first_evidence_rank_is_the_first_item_from_an_evidence_turn(ranked, evidence, expected):
    assert first_evidence_rank(ranked, evidence) == expected


def test_recall_counts_a_question_at_k_when_its_first_hit_is_within_k_and_mrr_averages_reciprocal_ranks():
    recall, mrr = recall_and_mrr([1, 3, 7, None], [1, 5, 10])
    assert recall == {"1": 0.25, "5": 0.5, "10": 0.75}
    assert mrr == pytest.approx((1 + 1 / 3 + 1 / 7 + 0) / 4)
    assert recall_and_mrr([], [1, 5]) == ({"1": 0.0, "5": 0.0}, 0.0)


def test_malformed_evidence_strings_are_split_and_repaired():
    assert parse_evidence(["D8:6; D9:17", "D:11:26", "D", "D8:6"]) == ("D8:6", "D9:17", "D11:26")


def test_loading_a_conversation_skips_adversarial_questions_and_sets_the_clock_after_the_last_session(conversation_file):
    conv = load_conversation(conversation_file)
    assert [q.category for q in conv.asked] == [4, 4, 1]
    assert conv.asked[2].evidence == ("D1:3", "D2:3")
    assert conv.now.isoformat() == "2023-05-16T10:37:00+00:00"
    assert conv.turns["D1:3"].startswith("Melanie: Big news")


def test_eval_runs_end_to_end_and_recalls_a_distinctive_fact(conversation_file, tmp_path, capsys):
    cache = tmp_path / "cache"
    details = tmp_path / "details.jsonl"
    argv = ["--dataset", str(conversation_file), "--json", "--extractor", "offline",
            "--cache-dir", str(cache), "--baselines", "--details", str(details)]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)

    assert report["questions"] == 3  # the category-5 question is not asked
    assert report["skipped_adversarial"] == 1
    assert set(report["by_category"]) == {"single-hop", "multi-hop"}
    assert set(report["recall_at_k"]) == {"1", "5", "10"}
    recall = [report["recall_at_k"][k] for k in ("1", "5", "10")]
    assert all(0.0 <= r <= 1.0 for r in recall) and recall == sorted(recall)
    assert 0.0 <= report["mrr"] <= 1.0
    assert 0.0 <= report["evidence_in_store"] <= report["evidence_extracted"] <= 1.0
    assert report["item_status"].get("active", 0) > 0
    assert report["injected_items_mean"] <= 10 and report["injected_tokens_mean"] > 0
    assert set(report["latency_ms"]) >= {"p50", "p95"} and report["latency_ms"]["p50"] > 0
    assert report["options"]["fusion"] == "hybrid" and report["k"] == 10 and report["extractor"] == "offline"
    assert set(report["baselines"]) == {"bm25", "dense", "bm25+dense rrf", "bm25+dense fuse"}

    rows = [json.loads(line) for line in details.read_text().splitlines()]
    assert "What instrument does Melanie play?" not in {r["question"] for r in rows}
    biscuit = next(r for r in rows if "greyhound" in r["question"])
    assert biscuit["rank"] is not None and biscuit["rank"] <= 10
    assert any("D1:3" in item["source_turn_ids"] for item in biscuit["items"])

    # A second run reuses the built data root instead of running the pipeline again.
    built = sorted(p.name for p in cache.iterdir())
    assert len(built) == 1 and not built[0].startswith(".")
    # Built as the product builds it: the nightly job wrote the summaries tier 1 answers from.
    assert ItemStore(DataRoot.resolve(cache / built[0])).summaries_table() is not None
    assert all(item["source_turn_ids"] for row in rows for item in row["items"])
    stamp = (cache / built[0] / "eval_build.json").stat().st_mtime_ns
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["recall_at_k"] == report["recall_at_k"]
    assert (cache / built[0] / "eval_build.json").stat().st_mtime_ns == stamp


def test_a_missing_dataset_is_an_error_naming_the_path(tmp_path, capsys):
    assert main(["--dataset", str(tmp_path / "nope.json"), "--cache-dir", str(tmp_path)]) == 2
    assert "nope.json" in capsys.readouterr().err
