"""A calibration curve for the LoCoMo observation recall: hand-labelled observation–fact
pairs by cosine band, so a recall measured with the short-fact match rule can be
corrected for what the rule misses (``ObservationCurve``)."""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evals.scorers import FactMatcher


# Calibrated on CALIBRATION_PAIRS below (all-MiniLM-L6-v2): 43 paraphrase and 38
# near-miss pairs written by hand in the style of extracted facts, 11 of them taken from
# the offline extractor's output on the gold set. By embedding alone:
#
#   threshold  paraphrases matched  near-misses matched, guards on  (guards off)
#     0.70          37/43                   8/38                        14/38
#     0.75          35/43                   5/38                        11/38
#     0.78          30/43                   3/38                         8/38
#     0.80          30/43                   2/38                         7/38
#     0.85          25/43                   1/38                         6/38
#
# The rule used (>= 0.80, or >= 0.65 with two thirds of the reference's content words,
# guards on) matches 35/43 paraphrases for 2/38 false matches: the 0.75 row's recall at
# the 0.80 row's precision. The false matches are a reversed choice ("chose grpc-go over
# connect-go" vs the reverse) and a swapped owner; the missed paraphrases use other words
# ("Jon got laid off from the bank") — what the LLM judge is for.
# ``calibration_table`` recomputes every row (tests/test_extraction_eval.py checks the rule's).


# --- LoCoMo observations: a calibration curve ---------------------------------------------
#
# The rule above was calibrated on pairs of short facts. A LoCoMo observation is a longer,
# abstractive summary of a turn ("Jon is writing down all his plans and goals to stay
# organized and motivated") that a literal fact states only in part ("Jon is writing all
# his plans down": cosine 0.74), so the rule's recall there is a floor. 200 pairs of an
# observation and the offline extractor's most similar fact (rules-v8) were labelled by
# hand (``evals/calibration/locomo_observation_pairs.jsonl``; the labelling rule is in that
# folder's README): 100 drawn 20 per cosine band, 60 more at random from 0.65–0.80 and 40
# from ≥ 0.80. The share labelled "same" per band is the chance that an observation whose
# best fact falls in that band was recalled; below the lowest band it counts as 0.
# Averaged over a run's observations it is the *calibrated recall*, with a 95 % interval
# from the bands' sample sizes. It assumes the curve carries over to an extractor whose
# facts read alike.
OBSERVATION_PAIRS = Path(__file__).resolve().parent / "calibration" / "locomo_observation_pairs.jsonl"
OBSERVATION_BANDS = (0.60, 0.65, 0.70, 0.75, 0.80)


def load_observation_pairs(path: str | Path = OBSERVATION_PAIRS) -> list[dict[str, Any]]:
    """The labelled (observation, candidate, same) pairs; a bad line names the file and line."""
    path = Path(path)
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not (isinstance(row.get("observation"), str) and isinstance(row.get("candidate"), str)
                    and isinstance(row.get("same"), bool)):
                raise ValueError("needs observation and candidate strings and a boolean same")
        except (ValueError, AttributeError) as exc:
            raise ValueError(f"{path}:{number}: {exc}") from None
        rows.append(row)
    return rows


@dataclass(frozen=True)
class ObservationCurve:
    """Per cosine band (lower edges ``bands``), how many labelled pairs fell in it and how
    many of those say the same thing."""

    bands: tuple[float, ...]
    labelled: tuple[int, ...]
    same: tuple[int, ...]

    @classmethod
    def fit(cls, matcher: FactMatcher, pairs: Sequence[dict[str, Any]] | None = None,
            bands: Sequence[float] = OBSERVATION_BANDS) -> ObservationCurve:
        """The curve from ``pairs`` (default: the labelled file), their cosines recomputed by ``matcher``."""
        pairs = load_observation_pairs() if pairs is None else pairs
        sims = (matcher.vectors([p["observation"] for p in pairs])
                * matcher.vectors([p["candidate"] for p in pairs])).sum(axis=1) if pairs else np.zeros(0)
        labelled, same = [0] * len(bands), [0] * len(bands)
        for sim, pair in zip(sims, pairs):
            if (b := band_of(bands, float(sim))) is not None:
                labelled[b] += 1
                same[b] += pair["same"]
        return cls(tuple(bands), tuple(labelled), tuple(same))

    def _band_rate(self, b: int | None) -> float:
        return self.same[b] / self.labelled[b] if b is not None and self.labelled[b] else 0.0

    def rate(self, similarity: float) -> float:
        """The chance that a best fact at ``similarity`` states its observation."""
        return self._band_rate(band_of(self.bands, similarity))

    def recall(self, best: Sequence[float]) -> tuple[float, float, float]:
        """(estimate, low, high): the calibrated recall of observations whose best facts
        have cosines ``best``, with a 95 % normal interval from the band rates' binomial error
        (a band's rate smoothed by one pseudo-count each way, so a 20/20 band still counts)."""
        if not len(best):
            return 0.0, 0.0, 0.0
        counts = [0] * len(self.bands)
        for sim in best:
            if (b := band_of(self.bands, float(sim))) is not None:
                counts[b] += 1
        n = len(best)
        estimate = sum(c * self._band_rate(b) for b, c in enumerate(counts)) / n
        variance = 0.0
        for c, m, s in zip(counts, self.labelled, self.same):
            if c and m:
                p = (s + 1) / (m + 2)
                variance += (c / n) ** 2 * p * (1 - p) / m
        half = 1.96 * variance ** 0.5
        return estimate, max(0.0, estimate - half), min(1.0, estimate + half)


def band_of(bands: Sequence[float], similarity: float) -> int | None:
    """The index of the band (ascending lower edges) a similarity falls in; None below the first."""
    b = bisect_right(bands, similarity) - 1
    return b if b >= 0 else None
