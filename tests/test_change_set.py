"""The change set's two halves and its block view (``evals/change_eval.py``)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from evals import change_eval
from evals.change_eval import CHANGES, ChangeSetError, load_cases, score_block


def test_the_check_half_is_frozen_and_holds_half_of_each_kind():
    cases = load_cases(CHANGES)  # raises when a frozen check case was edited
    for kind in ("change", "distractor"):
        mine = [c for c in cases if c.kind == kind]
        check = [c for c in mine if c.split == "check"]
        assert 0.4 <= len(check) / len(mine) <= 0.6, kind
    assert sum(c.kind == "change" for c in cases) >= 120
    assert sum(c.kind == "distractor" for c in cases) >= 40


def test_an_edited_check_case_is_refused(tmp_path: Path):
    folder = tmp_path / "changes"
    shutil.copytree(CHANGES, folder)
    frozen = change_eval.check_split(folder)
    victim = folder / f"{sorted(frozen)[0]}.json"
    raw = json.loads(victim.read_text())
    raw["question"] += " (reworded)"
    victim.write_text(json.dumps(raw))
    with pytest.raises(ChangeSetError, match="frozen check case was edited"):
        load_cases(folder)
    victim.unlink()
    with pytest.raises(ChangeSetError, match="check cases missing"):
        load_cases(folder)


@dataclass
class _Hit:
    id: str
    content: str
    session: str = "later"

    @property
    def row(self) -> dict:
        return {"session_id": self.session, "source_turn_ids": []}


@dataclass
class _Injection:
    items: list[_Hit]
    flags: dict[str, list[str]] = field(default_factory=dict)


def _case(kind: str) -> change_eval.ChangeCase:
    return next(c for c in load_cases(CHANGES) if c.kind == kind)


def test_the_block_view_wants_the_new_value_first_and_the_old_one_marked():
    case = _case("change")
    old, new, first = " ".join(case.old), " ".join(case.new), case.sessions[0].session_id
    other = _Hit("x", "Something unrelated.")
    assert score_block(case, _Injection([_Hit("n", f"Now {new}."), other])) == (True, None)
    assert score_block(case, _Injection([other]))[1] == "the block does not show the new value"
    ok, why = score_block(case, _Injection([_Hit("o", f"Uses {old}.", first), _Hit("n", f"Now {new}.")], {"o": ["[stale]"]}))
    assert not ok and why.startswith("the old value comes first")
    ok, why = score_block(case, _Injection([_Hit("n", f"Now {new}."), _Hit("o", f"Uses {old}.", first)]))
    assert not ok and why.startswith("the old value is shown unmarked")
    # A later line naming the old value tells of the change: it may stand anywhere.
    assert score_block(case, _Injection([_Hit("c", f"Cancelled {old}."), _Hit("n", f"Now {new}.")]))[0]
    marked = _Injection([_Hit("n", f"Now {new}."), _Hit("o", f"Uses {old}.", first)], {"o": ["[conflict]"]})
    assert score_block(case, marked) == (True, None)


def test_a_distractor_block_must_still_show_the_value_that_holds():
    case = _case("distractor")
    old = " ".join(case.old)
    assert score_block(case, _Injection([_Hit("o", f"Has {old}.")])) == (True, None)
    assert not score_block(case, _Injection([_Hit("x", "Something else.")]))[0]
