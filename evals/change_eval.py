"""The cross-session change set: does a value changed in a later session retire the old item?

Each case in ``evals/changes/`` (format in its README) is one user's sessions weeks apart:
a value stated in the first session and, in a later one, either changed ("I switched to
light mode") or only seemingly changed (a distractor: a plan, a question, another person,
a second value, a temporary exception). The eval builds one data root with the pipeline's
own stage steps, in process, session by session in time order, publishing the items
after each round of sessions (every case's first session, then every second one…), so a
later session meets the earlier one already published, as it would in production. Then,
per case, in the case's own namespace:

- **change**: every item stating the old value is ``superseded`` with ``invalid_at`` set,
  and an item stating the new value is active;
- **distractor**: every item stating the first value is still active, and nothing the
  later sessions said retired anything;
- **as_of**: searching the case's question as of a day between the sessions finds the
  old value and not the new one (change cases), and searching it now finds the new value;
- **block**: the block an agent gets for the case's question (one ``inject`` in the case's
  namespace, the day after its last session) shows the new value, and the old one only
  after it and marked (a change); shows the value that still holds (a distractor);
- **wrong retirements**: items retired that the later sessions did not replace (beside a
  change's old value, or anything at all in a distractor), counted on their own.

The set is split in two (``splits.json``): ``check`` cases are frozen (their file hashes
are recorded there, and a changed check file is an error) and are never tuned on; the
rest is ``tune``. Every figure is reported for the whole set and for each half: a gap
between the halves is overfitting.

``run_change_eval`` returns the figures; ``memory eval changes`` prints them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from memory_assets.lib.ingest.transcripts import parse_ts
from retrieval.config import MemoryConfig, load_config

CHANGES = Path(__file__).with_name("changes")
SPLITS = "splits.json"  # in the case folder: {"check": {case_id: sha256 of its file}}
KINDS = ("change", "distractor")
AREAS = ("preference", "tool", "schedule", "place", "number", "role")
SEARCH_K = 5


class ChangeSetError(ValueError):
    """A case file is malformed; the message names the file and the problem."""


@dataclass
class Session:
    session_id: str
    turns: list[dict[str, Any]]

    @property
    def ended_at(self) -> datetime:
        return max(parse_ts(t["ts"]) for t in self.turns)


@dataclass
class ChangeCase:
    case_id: str
    kind: str
    area: str
    user: str
    description: str
    sessions: list[Session]
    old: list[str]
    new: list[str]
    as_of: datetime
    question: str
    path: Path = field(default=Path("."), repr=False)
    split: str = "tune"


def load_case(path: Path) -> ChangeCase:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ChangeSetError(f"{path} line {exc.lineno}: not JSON ({exc.msg})") from None

    def need(key: str, kind: type) -> Any:
        if not isinstance(raw.get(key), kind):
            raise ChangeSetError(f"{path}: {key!r} must be a {kind.__name__}")
        return raw[key]

    kind = need("kind", str)
    if kind not in KINDS:
        raise ChangeSetError(f"{path}: kind {kind!r}; use one of {', '.join(KINDS)}")
    area = need("area", str)
    if area not in AREAS:
        raise ChangeSetError(f"{path}: area {area!r}; use one of {', '.join(AREAS)}")
    sessions = []
    for s in need("sessions", list):
        turns = s.get("turns") if isinstance(s, dict) else None
        if not isinstance(turns, list) or not turns or not isinstance(s.get("session_id"), str):
            raise ChangeSetError(f"{path}: each session needs a session_id and turns")
        for t in turns:
            missing = [k for k in ("turn", "role", "speaker", "content", "ts") if k not in t]
            if missing:
                raise ChangeSetError(f"{path}: session {s['session_id']} turn {t.get('turn')}: missing {', '.join(missing)}")
        sessions.append(Session(s["session_id"], turns))
    if len(sessions) < 2:
        raise ChangeSetError(f"{path}: a case needs at least two sessions")
    old, new = need("old", dict).get("contains"), need("new", dict).get("contains")
    if not old or not new:
        raise ChangeSetError(f"{path}: old.contains and new.contains must name the values")
    as_of = parse_ts(need("as_of", str))
    if not sessions[0].ended_at < as_of < min(s.ended_at for s in sessions[1:]):
        raise ChangeSetError(f"{path}: as_of {raw['as_of']} must fall between the first session and the later ones")
    return ChangeCase(need("case_id", str), kind, area, need("user", str), raw.get("description", ""), sessions,
                      [w.lower() for w in old], [w.lower() for w in new], as_of, need("question", str), path)


def file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check_split(folder: Path) -> dict[str, str]:
    """The frozen ``check`` cases of ``folder`` (case id → the sha256 of its file), ``{}``
    when the folder has no ``splits.json``."""
    path = Path(folder) / SPLITS
    if not path.exists():
        return {}
    try:
        return dict(json.loads(path.read_text(encoding="utf-8"))["check"])
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise ChangeSetError(f"{path}: not a split file ({exc})") from None


def load_cases(folder: Path = CHANGES) -> list[ChangeCase]:
    cases = [load_case(p) for p in sorted(Path(folder).glob("*.json")) if p.name != SPLITS]
    if not cases:
        raise ChangeSetError(f"{folder}: no case files (*.json)")
    frozen = check_split(folder)
    missing = sorted(set(frozen) - {c.case_id for c in cases})
    if missing:
        raise ChangeSetError(f"{folder}: check cases missing: {', '.join(missing)}")
    for case in cases:
        if case.case_id in frozen:
            if file_hash(case.path) != frozen[case.case_id]:
                raise ChangeSetError(f"{case.path}: a frozen check case was edited; restore it (check cases are "
                                     "never tuned on) or move it to tune in a reviewed change of splits.json")
            case.split = "check"
    seen: dict[str, Path] = {}
    for case in cases:
        for s in case.sessions:
            if s.session_id in seen:
                raise ChangeSetError(f"{case.path}: session id {s.session_id} also used in {seen[s.session_id]}")
            seen[s.session_id] = case.path
    return cases


# --- building the memory ---------------------------------------------------------------

def build(cases: Sequence[ChangeCase], root: Path, config: MemoryConfig, extractor: str = "offline") -> dict[str, int]:
    """Every case's sessions through the pipeline's stage steps into ``root``, round by
    round (each case's first session, then each second one…), publishing after each round."""
    from memory_assets.lib.extraction.session import choose_extractor, extract_session
    from memory_assets.lib.ingest.intake import ingest_paths, store_session
    from memory_assets.lib.items.staging import audit_staged, publish_staged, stage_items
    from retrieval.embeddings import Embedder
    from retrieval.paths import DataRoot

    inbox = root / "_cases"
    inbox.mkdir(parents=True, exist_ok=True)
    files = []
    for case in cases:
        for s in case.sessions:
            path = inbox / f"{s.session_id}.jsonl"
            path.write_text("".join(json.dumps({**t, "session_id": s.session_id, "namespace": case.case_id}) + "\n"
                                    for t in s.turns), encoding="utf-8")
            files.append(path)
    report = ingest_paths(files, root, config)
    paths = DataRoot.resolve(root)
    impl, model = choose_extractor(extractor, config), Embedder(config)
    rounds = max(len(c.sessions) for c in cases)
    clock = min(c.sessions[0].ended_at for c in cases)
    for r in range(rounds):
        batch = sorted((c.sessions[r] for c in cases if r < len(c.sessions)), key=lambda s: s.ended_at)
        for s in batch:
            store_session(paths, s.session_id, config, s.ended_at)
            extract_session(paths, s.session_id, impl, config, s.ended_at)
        clock = max(clock, *(s.ended_at for s in batch))
        stage_items(paths, model, config, clock)
        audit_staged(paths, config)
        publish_staged(paths, clock)
    return {"cases": len(cases), "sessions": len(report.sessions), "turns": report.messages, "rounds": rounds}


# --- scoring -----------------------------------------------------------------------------

def mentions(content: str, words: Sequence[str]) -> bool:
    low = content.lower()
    return all(w in low for w in words)


def learned_in(row: dict) -> set[str]:
    """The sessions an item was learned in."""
    return {t.split(":")[0] for t in row.get("source_turn_ids") or []} | {row.get("session_id")}


def score_block(case: ChangeCase, injection: Any) -> tuple[bool, str | None]:
    """Whether the block for the case's question is right, and why not. An old line is one
    learned in the first session that states the old value (a later line naming it, "cancelled
    PureGym", tells of the change)."""
    first = case.sessions[0].session_id
    lines = [(h.content, injection.flags.get(h.id, [])) for h in injection.items]
    learned_first = [first in learned_in(h.row or {}) for h in injection.items]
    if case.kind == "distractor":
        if any(mentions(c, case.old) for c, _ in lines):
            return True, None
        return False, "the block does not show the value that still holds"
    new_at = next((i for i, (c, _) in enumerate(lines) if mentions(c, case.new)), None)
    if new_at is None:
        return False, "the block does not show the new value"
    for i, (content, flags) in enumerate(lines):
        if learned_first[i] and mentions(content, case.old) and not mentions(content, case.new):
            if i < new_at:
                return False, f"the old value comes first: {content!r}"
            if not flags:
                return False, f"the old value is shown unmarked: {content!r}"
    return True, None


def score_case(case: ChangeCase, items: pl.DataFrame, client: Any) -> dict[str, Any]:
    """One case's verdict and, when it fails, why."""
    mine = items.filter(pl.col("namespace") == case.case_id)
    first = {case.sessions[0].session_id}
    later = {s.session_id for s in case.sessions[1:]}
    rows = mine.select("id", "content", "status", "invalid_at", "session_id", "superseded_by", "source_turn_ids").to_dicts()

    old = [r for r in rows if mentions(r["content"], case.old) and learned_in(r) & first and not mentions(r["content"], case.new)]
    new = [r for r in rows if mentions(r["content"], case.new) and learned_in(r) & later]
    retired_by_later = [r for r in rows if r["status"] == "superseded" and learned_in(r) & first]
    out: dict[str, Any] = {"case_id": case.case_id, "kind": case.kind, "area": case.area, "split": case.split,
                           "old_items": [(r["content"], r["status"]) for r in old],
                           "new_items": [(r["content"], r["status"]) for r in new]}
    reasons: list[str] = []
    if not old:
        reasons.append("no item states the old value (extraction)")
    if not new and case.kind == "change":
        # A distractor's later statement (a question, a plan) may rightly yield no item.
        reasons.append("no item states the later value (extraction)")
    if case.kind == "change":
        still = [r["content"] for r in old if r["status"] != "superseded" or r["invalid_at"] is None]
        if still:
            reasons.append(f"old item still active: {still[0]!r}")
        if new and not any(r["status"] == "active" for r in new):
            reasons.append("no item with the new value is active")
        before = [h.content for h in client.search(case.question, SEARCH_K, as_of=case.as_of)]
        now = [h.content for h in client.search(case.question, SEARCH_K)]
        out["as_of_hits"], out["now_hits"] = before, now
        out["as_of_ok"] = (any(mentions(c, case.old) for c in before)
                           and not any(mentions(c, case.new) and not mentions(c, case.old) for c in before))
        out["now_ok"] = any(mentions(c, case.new) for c in now) and not any(
            mentions(c, case.old) and not mentions(c, case.new) for c in now)
        if old and new and not out["as_of_ok"]:
            reasons.append("as_of the day between did not find the old value alone")
    else:
        if retired_by_later:
            reasons.append(f"retired {retired_by_later[0]['content']!r}")
    out["retired"] = [r["content"] for r in retired_by_later]
    if case.kind == "change":
        # Retired alongside the old value: facts the change did not replace ("take-home pay
        # is €3,400" beside "rent is €1,240 now"). Reported, not part of the verdict.
        olds = {r["id"] for r in old}
        out["collateral"] = [r["content"] for r in retired_by_later if r["id"] not in olds]
    out["wrong_retirements"] = out["retired"] if case.kind == "distractor" else out["collateral"]
    after = max(s.ended_at for s in case.sessions) + timedelta(days=1)
    injection = client.inject(case.question, now=after, record=False)
    out["block"] = [line for line in injection.text.splitlines() if line.startswith("~")]
    out["block_ok"], why = score_block(case, injection)
    if why:
        out["block_reason"] = why
    out["ok"] = not reasons
    out["reasons"] = reasons
    return out


def summarize(verdicts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The figures of a set of verdicts: the store view, the block view, as_of, distractors,
    and wrong retirements counted on their own."""
    changes = [v for v in verdicts if v["kind"] == "change"]
    distractors = [v for v in verdicts if v["kind"] == "distractor"]
    return {
        "changes": len(changes),
        "changes_correct": sum(v["ok"] for v in changes),
        "change_accuracy": round(sum(v["ok"] for v in changes) / max(len(changes), 1), 4),
        "block_correct": sum(bool(v["block_ok"]) for v in changes),
        "as_of_correct": sum(bool(v.get("as_of_ok")) for v in changes),
        "now_correct": sum(bool(v.get("now_ok")) for v in changes),
        "distractors": len(distractors),
        "distractors_retiring": sum(bool(v["retired"]) for v in distractors),
        "distractors_block_correct": sum(bool(v["block_ok"]) for v in distractors),
        "wrong_retirements": sum(len(v["wrong_retirements"]) for v in verdicts),
        "collateral_retired": sum(len(v.get("collateral", [])) for v in changes),
        "changes_with_collateral": sum(bool(v.get("collateral")) for v in changes),
        "extraction_misses": sum(any("(extraction)" in r for r in v["reasons"]) for v in verdicts),
    }


def run_change_eval(folder: Path = CHANGES, *, config: MemoryConfig, extractor: str = "offline",
                    root: Path | None = None) -> dict[str, Any]:
    """Build the change set's memory and score every case.

    Returns:
        ``changes`` / ``changes_correct`` (old retired with ``invalid_at``, new active),
        ``distractors`` / ``distractors_retiring`` (must be 0), ``as_of_correct``,
        ``extraction_misses`` (cases whose old or new value never became an item), and
        ``cases`` with each verdict.
    """
    from retrieval import MemoryClient
    from retrieval.paths import DataRoot
    from retrieval.store import ItemStore

    cases = load_cases(folder)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="change-eval-") as tmp:
        target = Path(root or tmp)
        built = build(cases, target, config, extractor)
        items = ItemStore(DataRoot.resolve(target)).items()
        verdicts = []
        for case in cases:
            client = MemoryClient(target, namespace=case.case_id)
            verdicts.append(score_case(case, items, client))
    return {
        **built,
        "extractor": extractor,
        **summarize(verdicts),
        "splits": {split: summarize([v for v in verdicts if v["split"] == split]) for split in ("tune", "check")},
        "seconds": round(time.perf_counter() - started, 1),
        "cases": verdicts,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="memory eval changes", description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, default=CHANGES, help="the case files (default: evals/changes)")
    parser.add_argument("--extractor", choices=["offline", "llm"], default="offline")
    parser.add_argument("--json", action="store_true", help="every case's verdict as JSON")
    args = parser.parse_args(argv)
    try:
        report = run_change_eval(args.folder, config=load_config(), extractor=args.extractor)
    except ChangeSetError as exc:
        print(f"ChangeSetError: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return 0
    for name, figures in (("all", report), *report["splits"].items()):
        print(f"{name}: changes right in the store {figures['changes_correct']}/{figures['changes']}, "
              f"in the block {figures['block_correct']}/{figures['changes']} "
              f"(as_of {figures['as_of_correct']}, now {figures['now_correct']}); "
              f"distractors held {figures['distractors'] - figures['distractors_retiring']}/{figures['distractors']}; "
              f"wrong retirements {figures['wrong_retirements']}; extraction misses {figures['extraction_misses']}")
    print(f"{report['seconds']} s")
    for v in report["cases"]:
        why = [*v["reasons"], *([v["block_reason"]] if v.get("block_reason") else [])]
        if why:
            print(f"  {v['case_id']} ({v['kind']}, {v['split']}): {'; '.join(why)}")
    return 0
