"""LoCoMo conversations as an eval set: the questions, the turns that answer them, the clock.

A LoCoMo file (Maharana et al., 2024) is one long conversation between two speakers:
``session_N`` turn lists (each turn has a ``dia_id`` such as ``D3:7``), their
``session_N_date_time``, and ``qa`` — questions with an ``answer``, the ``evidence``
``dia_id``s that support it, and a ``category``. The same file is what
``memory ingest`` reads, and every item keeps the ``dia_id``s it came from, so a
retrieved item can be checked against a question's evidence.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memory_assets.lib.ingest.transcripts import parse_locomo_time, safe_session_id

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
# Category 5 questions have no answer in the conversation: nothing can be recalled for them.
ADVERSARIAL = 5

_REPO = Path(__file__).resolve().parents[1]


def default_dir() -> Path:
    """Where the LoCoMo conversations are: ``MEMORY_LOCOMO_DIR``, else the first
    ``shared/datasets/locomo`` folder beside the repository or the working directory or
    any folder above them (a clone anywhere under the workspace finds the shared one);
    else the path beside the repository, which the callers report as missing."""
    if os.environ.get("MEMORY_LOCOMO_DIR"):
        return Path(os.environ["MEMORY_LOCOMO_DIR"])
    for base in (_REPO, Path.cwd().resolve()):
        for folder in (base, *base.parents):
            found = folder / "shared" / "datasets" / "locomo"
            if found.is_dir():
                return found
    return _REPO.parent / "shared" / "datasets" / "locomo"


_SESSION = re.compile(r"^session_(\d+)$")
# Tolerates the dataset's typos: "D8:6; D9:17" (two ids in one string), "D:11:26".
_DIA_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


class LocomoError(ValueError):
    """A file that is not a LoCoMo conversation; the message names the file."""


@dataclass(frozen=True)
class Question:
    """One ``qa`` entry of a conversation."""

    conversation: str
    index: int
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]

    @property
    def category_name(self) -> str:
        return CATEGORIES.get(self.category, str(self.category))


@dataclass(frozen=True)
class Conversation:
    """A LoCoMo file: its questions, its turns by ``dia_id`` and when it ended."""

    path: Path
    sample_id: str
    sha256: str
    last_session_at: datetime
    questions: tuple[Question, ...]
    turns: dict[str, str] = field(repr=False)

    @property
    def asked(self) -> list[Question]:
        """The questions an eval asks: every one except the adversarial ones."""
        return [q for q in self.questions if q.category != ADVERSARIAL]

    @property
    def now(self) -> datetime:
        """The clock for questions: a day after the last session (UTC)."""
        return self.last_session_at + timedelta(days=1)


def parse_evidence(values: Iterable[Any]) -> tuple[str, ...]:
    """``dia_id``s from an ``evidence`` list, with malformed strings split and repaired.

    >>> parse_evidence(["D8:6; D9:17", "D:11:26", "D", "D8:6"])
    ('D8:6', 'D9:17', 'D11:26')
    """
    found: dict[str, None] = {}
    for value in values or ():
        for session, turn in _DIA_ID.findall(str(value)):
            found[f"D{int(session)}:{int(turn)}"] = None
    return tuple(found)


def load_conversation(path: str | Path) -> Conversation:
    """Read one LoCoMo file (top-level keys, or nested under ``conversation``)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        doc = json.loads(raw)
    except (OSError, json.JSONDecodeError) as exc:
        raise LocomoError(f"{path}: cannot read a LoCoMo conversation ({exc})") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("qa"), list):
        raise LocomoError(f"{path}: not a LoCoMo conversation (expected a JSON object with a 'qa' list)")
    conv = doc.get("conversation", doc)
    # The same session naming as the transcript parser, so ids line up with ingested sessions.
    sample_id = safe_session_id(str(doc.get("sample_id") or path.stem))

    turns: dict[str, str] = {}
    dates: list[datetime] = []
    for key, value in conv.items():
        if not _SESSION.match(key) or not value:
            continue
        try:
            dates.append(parse_locomo_time(conv[f"{key}_date_time"]))
        except (KeyError, ValueError) as exc:
            raise LocomoError(f"{path}: {key}_date_time: {exc}") from exc
        for turn in value:
            if isinstance(turn, dict) and turn.get("dia_id"):
                text = str(turn.get("text", ""))
                if turn.get("blip_caption"):
                    text = f"{text} [shared image: {turn['blip_caption']}]"
                turns[str(turn["dia_id"])] = f"{turn.get('speaker', '?')}: {text}"
    if not dates:
        raise LocomoError(f"{path}: no sessions with turns")

    questions = []
    for index, qa in enumerate(doc["qa"]):
        if not isinstance(qa, dict) or "question" not in qa:
            raise LocomoError(f"{path}: qa[{index}] has no 'question'")
        try:
            category = int(qa.get("category", 0))
        except (TypeError, ValueError) as exc:
            raise LocomoError(f"{path}: qa[{index}] category {qa.get('category')!r} is not a number") from exc
        evidence = qa.get("evidence") or []
        questions.append(Question(
            conversation=sample_id, index=index, question=str(qa["question"]),
            answer=str(qa.get("answer", qa.get("adversarial_answer", ""))), category=category,
            evidence=parse_evidence(evidence if isinstance(evidence, list) else [evidence]),
        ))
    return Conversation(path=path, sample_id=sample_id, sha256=hashlib.sha256(raw).hexdigest(),
                        last_session_at=max(dates), questions=tuple(questions), turns=turns)


def expand_datasets(patterns: Sequence[str]) -> list[Path]:
    """Files named by paths or glob patterns (a directory means its ``*.json``), in order."""
    files: dict[Path, None] = {}
    for pattern in patterns:
        path = Path(pattern).expanduser()
        if path.is_dir():
            matches = sorted(path.glob("*.json"))
        elif any(c in pattern for c in "*?["):
            matches = sorted(Path(p) for p in glob.glob(str(path)))
        else:
            matches = [path]
        if not matches:
            raise LocomoError(f"{pattern}: no LoCoMo files match")
        for match in matches:
            if not match.exists():
                raise LocomoError(f"{match}: no such file")
            files[match] = None
    return list(files)
