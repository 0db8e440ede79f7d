"""Bounded work in extraction (issue 30, item 1): what the rules read is bounded, a
session has a time budget, and one over it is quarantined without holding back the rest.

How the extractor's time grows on adversarial text is measured by ``memory bench
adversarial`` (a benchmark, not a timed test); here the shapes that made it grow are
checked: the pattern that backtracked exponentially, the runs of whitespace, the sentence
with no end.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone

import pytest

from memory_assets.lib.extraction import base, quarantine
from memory_assets.lib.extraction import rules as R
from memory_assets.lib.extraction.base import OverBudget, plain_spacing
from memory_assets.lib.extraction.clauses import SENTENCE_MAX_CHARS, sentences
from memory_assets.lib.extraction.offline import OfflineExtractor
from memory_assets.lib.extraction.session import extract_session
from memory_assets.lib.ingest.intake import ingest_paths, store_session
from retrieval.config import load_config
from retrieval.paths import DataRoot
from retrieval.schema import Turn

NOW = datetime(2026, 3, 1, 9, tzinfo=timezone.utc)


def _turn(text: str, session: str = "s-1") -> Turn:
    return Turn(session, 1, "user", text, NOW, "Ann")


def test_runs_of_spaces_and_breaks_read_as_one():
    turn = _turn("I moved \t\t to  Denver.\r\n\n\n   \nMy  cat is Miso.")
    assert plain_spacing([turn])[0].content == "I moved to Denver.\nMy cat is Miso."


def test_a_sentence_with_no_end_is_read_in_bounded_pieces_and_no_word_is_lost():
    words = [f"w{n}" for n in range(3000)]
    pieces = sentences("I think " + " ".join(words))
    assert len(pieces) > 1 and all(len(p) <= SENTENCE_MAX_CHARS for p in pieces)
    assert " ".join(pieces).split() == ["I", "think", *words]


def test_the_label_pattern_does_not_backtrack_on_whitespace():
    # Was exponential: 2,000 tabs did not finish in 2 s. Now a label still reads as one.
    assert R.LABEL.match("\t" * 2000 + "x") is None
    assert R.LABEL.match("Maya update: she started at the clinic").group(1) == "Maya update"


def test_a_session_over_its_time_budget_raises_over_budget():
    config = load_config().replace(pipeline={"extraction_seconds": 1e-9})
    with pytest.raises(OverBudget, match=r"time budget.*extraction_seconds"):
        OfflineExtractor(config).extract([_turn("I moved to Denver. " * 50)])


def _stored(tmp_path, sessions: dict[str, str]) -> DataRoot:
    lines = [json.dumps({"session_id": s, "turn": 1, "role": "user", "speaker": "Ann", "content": text,
                         "ts": NOW.isoformat()}) for s, text in sessions.items()]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    root = tmp_path / "data"
    config = load_config()
    ingest_paths([tmp_path / "in.jsonl"], root, config)
    paths = DataRoot.resolve(root)
    for session in sessions:
        store_session(paths, session, config, NOW)
    return paths


def test_a_session_over_budget_is_quarantined_not_retried_and_the_next_is_extracted(tmp_path, monkeypatch):
    paths = _stored(tmp_path, {"s-slow": "I moved to Denver last May. " + "a, " * 3000,
                               "s-fine": "I moved to Denver last May."})
    check = base.Budget.check

    def slow_one(self):  # the budget is spent on the session holding the long run only
        if getattr(self, "long", False):
            raise OverBudget(f"time budget: extraction ran past {self.seconds:g} s ([pipeline] extraction_seconds)")
        return check(self)

    original = OfflineExtractor.extract

    def extract(self, turns):
        base.Budget.long = any(len(t.content) > 5000 for t in turns)
        try:
            return original(self, turns)
        finally:
            base.Budget.long = False

    monkeypatch.setattr(base.Budget, "check", slow_one)
    monkeypatch.setattr(OfflineExtractor, "extract", extract)
    config = load_config()
    slow = extract_session(paths, "s-slow", OfflineExtractor(config), config, NOW)
    fine = extract_session(paths, "s-fine", OfflineExtractor(config), config, NOW)

    assert isinstance(slow.failed, OverBudget) and slow.gated.facts.height == 0
    [record] = quarantine.open_records(paths)
    assert record["session_id"] == "s-slow" and record["retry"] is False and "time budget" in record["reason"]
    assert (paths.resources / "s-slow").exists()  # its turns stay stored: nothing is lost
    assert fine.failed is None and any(re.search("Denver", c) for c in fine.gated.facts["content"].to_list())
