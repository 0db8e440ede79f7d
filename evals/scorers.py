"""Scoring extracted facts against labelled ones: same fact or not, leaks, junk, supersedes.

Two facts *match* when they say the same thing. Offline that means MiniLM cosine
similarity at or above ``THRESHOLD`` — or at least ``LEXICAL_FLOOR`` with two thirds of
the reference's content words in the candidate ("Ines will write it up for the
incident review on Thursday" says "Ines will write up the push outage for the incident
review on Thursday" at 0.77) — **and** two guards that embeddings are blind to:

* **values** — every number in the reference (gold) fact appears in the candidate
  ("oil change due at 11,799 miles" is not "…at 11,500 miles": cosine 0.96);
* **polarity** — both are negated or neither is ("Maya is not vegetarian" is not
  "Maya is vegetarian": cosine 0.96). A contrast (", not npm") is not a negation.

With an LLM judge (``OPENAI_API_KEY`` set; prompt ``prompts/judge_fact.md``) a pair
whose similarity lies between ``JUDGE_FLOOR`` and ``JUDGE_SURE``, or that fails a guard,
is decided by the judge instead; a judge failure falls back to the offline rule.

Matching gold facts to extracted facts is one-to-one: as many pairs as possible, then
the most similar ones (an assignment, not greedy).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from retrieval.credentials import find_credentials
from retrieval.text import MATCH_STOPWORDS, NUMBER, negated, tokens
from retrieval.llm import InvalidReply, LLMOutputFailed, complete_validated

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
THRESHOLD = 0.80
LEXICAL_FLOOR = 0.65
LEXICAL_COVERAGE = 2 / 3
# With a judge: below the floor no pair is worth asking about; at or above "sure" (and
# with both guards passing) the embedding alone decides.
JUDGE_FLOOR = 0.60
JUDGE_SURE = 0.92

# (reference, candidate, same fact?)
CALIBRATION_PAIRS: tuple[tuple[str, str, bool], ...] = (
    ("Priya decided to use Postgres for the billing service.", "Priya and others decided to use Postgres instead of MySQL for the billing service.", True),
    ("Luis is allergic to penicillin.", "Luis has a penicillin allergy.", True),
    ("Grace's CR-V is at 62,400 miles.", "Grace's Honda CR-V has 62,400 miles on it.", True),
    ("Marcus wants the assistant never to use panic in fleetd library code.", "Marcus wants the assistant to never use panic in library code.", True),
    ("Sofia prefers Tailwind utility classes over CSS modules for new atlas-web code.", "Sofia really prefers Tailwind utility classes over CSS modules.", True),
    ("Raj prefers polars over pandas for new code.", "Raj wants new code written with polars, not pandas.", True),
    ("Melanie is currently managing kids and work and finds it overwhelming.", "Melanie is swamped with the kids and work.", True),
    ("Caroline attended an LGBTQ support group recently.", "Caroline went to an LGBTQ support group yesterday.", True),
    ("Ben swims on Tuesdays.", "Ben swims every Tuesday and that stays.", True),
    ("Chloe always wants an aisle seat.", "Chloe wants an aisle seat always.", True),
    ("Kenji's team decided to migrate from Airflow to Dagster this year.", "Kenji and others have decided to migrate from Airflow to Dagster this year.", True),
    ("Tom is on the platform team.", "Tom works on the platform team and owns CI reliability.", True),
    ("Jonas got a burr grinder for his birthday.", "Jonas just got a burr grinder as a birthday present.", True),
    ("Eleanor does not want to be called Ellie.", "Eleanor wants the assistant not to call her Ellie.", True),
    ("Daniel's daughter Zoe is 7.", "Daniel's daughter Zoe is 7 and she's switching schools.", True),
    ("Omar decided not to roll back migration 0042.", "Omar and others decided not to roll back 0042 itself.", True),
    ("Mei gets paid on the 15th and the last day of the month.", "Mei is paid on the 15th and on the last day of each month.", True),
    ("Felix's dog Mochi is a 4-year-old Shiba Inu.", "Mochi is Felix's Shiba Inu, she's 4.", True),
    ("Lena wants the assistant never to touch the legacy/ directory.", "Lena wants the assistant to never touch the legacy directory.", True),
    ("Nadia replaces the furnace filter every 90 days.", "Nadia changes the furnace filter every 90 days.", True),
    ("The user has a wheat allergy.", "User has a wheat allergy, diagnosed as a kid.", True),
    ("Sam's manager is Keisha Brown.", "Sam's manager at Northwind is Keisha Brown, she seems great.", True),
    ("Aisha studies Japanese with Anki for 20 minutes every morning.", "Aisha studies with Anki for 20 minutes every morning.", True),
    ("Jorge only rides on dry days.", "Jorge rides only when it's dry.", True),
    ("Hannah chose clap's derive API.", "Hannah went with the derive API for argument parsing.", True),
    ("Wei's team only squash-merges pull requests.", "Wei and others only squash-merge.", True),
    ("Kwame sold his Corolla last week.", "Kwame sold the Corolla last week.", True),
    ("Tariq hates Virgin's customer service.", "Tariq hates Virgin's customer service, so he is switching to Zen.", True),
    ("Noor needs the v2 shipments endpoint in staging by April 10.", "Noor needs the v2 shipments endpoint in staging by April 10 for the Pacifica Freight pilot.", True),
    ("Rosa works nights, 7pm to 7am, three nights a week.", "Rosa works nights from 7pm to 7am three nights a week.", True),
    ("Sofia's monorepo uses pnpm, not npm.", "Sofia and others use pnpm in this monorepo.", True),
    ("Luis wants a reminder next Monday to call Dr. Lin's office.", "Luis wants a reminder to call Dr. Lin's office next Monday.", True),
    ("Rosa wants short, plain answers without emojis.", "Rosa wants the assistant to stop sending long answers with emojis.", True),
    ("Ana decided to cap the resolve() lru_cache at 1024 entries.", "Ana wants to cap the cache at 1024 entries.", True),
    ("Jon lost his job as a banker.", "Jon got laid off from the bank.", True),
    ("Aaron's WRX oil change is due at 11,799 miles.", "Aaron's WRX oil change is due at 11,500 miles.", False),
    ("Priya wants the assistant never to disable tests.", "Priya wants all tests disabled.", False),
    ("Maya is vegetarian.", "Maya is not vegetarian.", False),
    ("Grace's CR-V is at 62,400 miles.", "Grace's CR-V is at 64,700 miles.", False),
    ("Luis is allergic to penicillin.", "Luis takes lisinopril 10 mg every morning.", False),
    ("Marcus chose grpc-go over connect-go.", "Marcus chose connect-go over grpc-go.", False),
    ("Ben swims on Tuesdays.", "Ben runs on Mondays, Wednesdays and Saturdays.", False),
    ("Zoe starts second grade at Lincoln Elementary on March 2.", "Lincoln Elementary needs Zoe's vaccination record by February 27.", False),
    ("Chloe always wants an aisle seat.", "Chloe prefers TAP flights when the times work.", False),
    ("Sofia prefers Tailwind over CSS modules.", "Sofia's monorepo uses pnpm, not npm.", False),
    ("Priti loves ceramics.", "Priti hates surprise parties.", False),
    ("Kenji wants the assistant never to run backfills during business hours.", "Kenji wants the assistant never to deploy from an untagged commit.", False),
    ("Lena wants the assistant never to touch the legacy/ directory.", "Lena wants the assistant never to use -auto-approve in prod.", False),
    ("The staging deadline is Wednesday April 15.", "The staging deadline is Friday April 17.", False),
    ("Pacifica Freight needs the CSV export in the first release.", "The CSV export is dropped from the first release.", False),
    ("Jonas switched to a medium roast.", "Jonas likes dark roast.", False),
    ("Hannah is a freelancer.", "Hannah is a senior engineer at Mozilla.", False),
    ("Mochi is allergic to chicken.", "Luis is allergic to penicillin.", False),
    ("Caroline went to an LGBTQ support group.", "Caroline is planning to continue her education in counseling.", False),
    ("Mei decided to cancel Disney+.", "Mei will cancel Netflix after the April finale.", False),
    ("Nadia's water heater warranty runs until March 2027.", "Nadia's water heater is a Rheem installed in 2021.", False),
    ("Sam's 90-day review is on May 1.", "Sam needs to finish the SQL onboarding course by February 20.", False),
    ("Tariq's wife is Hana.", "Daniel's wife is Priti.", False),
    ("Eleanor takes eye drops at 8 in the evening.", "Eleanor has macular degeneration.", False),
    ("The refund endpoint must be idempotent.", "Refunds over 500 EUR need a second approver from finance.", False),
    ("Melanie painted a lake sunrise last year.", "Melanie is going swimming with the kids.", False),
    ("Ravi owns the consumer-group migration.", "Marcus agreed to own the consumer-group migration.", False),
    ("Camille's team writes commit messages in the imperative.", "Wei's team uses Conventional Commits.", False),
    ("Felix is traveling from April 12 to 19.", "Felix needs to book Happy Tails by March 20.", False),
    ("Dev works from home as a video editor.", "Dev is home every day except Thursdays.", False),
    ("Luis is still allergic to penicillin.", "Luis is no longer allergic to penicillin.", False),
    ("Grace only uses full synthetic 0W-20 oil.", "Grace's next oil change is due at 65,000 miles.", False),
    ("Caroline is single.", "Caroline is married.", False),
    ("Jon lost his job as a banker.", "Jon opened a dance studio.", False),
    ("Priya switched from black to ruff format.", "Priya prefers black for formatting.", False),
    # From the offline extractor on the gold set.
    ("The ledgerline billing service runs on Postgres 16.", "Billing is on Postgres 16, nothing moved.", True),
    ("AGPL-licensed dependencies are a no-go because legal won't approve them.", "AGPL is a no-go for Priya and others, legal won't approve it.", True),
    ("Priya decided to use WeasyPrint for invoice PDFs instead of pdfkit-plus.", "Priya wants to use WeasyPrint instead.", True),
    ("Biscuit is fed half a can twice a day.", "Feed Biscuit, Eleanor's cat, twice a day, half a can each time.", True),
    ("Ravi owns the Kafka consumer-group migration.", "Ravi owns the consumer-group migration and Marcus is reviewing it.", True),
    ("Marcus agreed to review the Kafka consumer-group migration.", "Ravi owns the consumer-group migration and Marcus is reviewing it.", True),
    ("Ines will write up the push outage for the incident review on Thursday.", "Ines will write it up for the incident review on Thursday.", True),
    ("Pacifica Freight's finance team imports the CSV export into Excel.", "They need CSV after all, their finance team imports it into Excel.", True),
    ("The APNs 403 alarm routes to #mobile-alerts.", "Actually, route it to #mobile-alerts instead of #orchard-oncall, oncall is drowning in pages already.", False),
    ("Lena will rotate the pasted AWS and database credentials.", "Lena will rotate them after lunch.", False),
    ("Marcus agreed to own the consumer-group migration.", "Ravi owns the consumer-group migration and Marcus is reviewing it.", False),
)


# --- the guards -------------------------------------------------------------------------

_NUMBER_WORDS = {
    "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6",
    "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
}
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
# A value, not part of a name: "MT-07", "TP6104", "p95" and "v2" are identifiers.
_NUMBER = re.compile(r"(?<![A-Za-z0-9.])(?<![A-Za-z]-)" + NUMBER.pattern + r"|\b(?:" + "|".join(_NUMBER_WORDS) + r")\b",
                     re.IGNORECASE)
def numbers(text: str) -> set[str]:
    """The values a text states: "11,799 miles", "ten", "1:58", "3.6.0" (leading zeros
    dropped); digits inside a name ("MT-07", "TP6104") are not values."""
    found = set()
    for token in _NUMBER.findall(_THOUSANDS.sub("", text)):
        token = _NUMBER_WORDS.get(token.lower(), token)
        found.add(str(int(token)) if token.isdigit() else token)
    return found


def compatible(reference: str, candidate: str) -> bool:
    """The guards: the reference's numbers all appear in the candidate, same polarity."""
    return numbers(reference) <= numbers(candidate) and negated(reference) == negated(candidate)


def content_words(text: str, ignore: Sequence[str] = ()) -> set[str]:
    """Lowercased content words cut to five letters ("reviewing" and "review" agree),
    and numbers; no stopwords and none of the ``ignore`` names."""
    skip = {w.lower() for w in ignore}
    out = set()
    for word in tokens(_THOUSANDS.sub("", text.replace("'s ", " "))):
        word = word.lower().rstrip(".-")
        if not word or word in MATCH_STOPWORDS or word in skip or (len(word) < 2 and not word.isdigit()):
            continue
        out.add(word[:5] if word.isalpha() else word)
    return out


def coverage(reference: str, candidate: str) -> float:
    """The share of the reference's content words the candidate also has."""
    words = content_words(reference)
    return len(words & content_words(candidate)) / len(words) if words else 0.0


# --- matching ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Match:
    """One reference fact paired with one candidate fact."""

    reference: int
    candidate: int
    similarity: float
    judged: bool = False


class FactMatcher:
    """Decides whether two facts say the same thing, and pairs up lists of facts.

    Args:
        embed: texts to unit vectors (``retrieval.embeddings.Embedder.embed``).
        threshold: the similarity at or above which (guards passing) two facts match.
        judge: an ``LLMJudge`` for borderline pairs; None for the offline rule alone.
    """

    def __init__(self, embed: Callable[[list[str]], np.ndarray], threshold: float = THRESHOLD,
                 judge: LLMJudge | None = None):
        self._embed = embed
        self.threshold = threshold
        self.judge = judge
        self._vectors: dict[str, np.ndarray] = {}

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for ``texts``; each distinct text is embedded once per matcher."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            for text, vector in zip(missing, self._embed(missing)):
                self._vectors[text] = np.asarray(vector, dtype=np.float32)
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        return np.stack([self._vectors[t] for t in texts])

    def similarity(self, references: Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        """Cosine similarity, one row per reference, one column per candidate."""
        if not references or not candidates:
            return np.zeros((len(references), len(candidates)), dtype=np.float32)
        return self.vectors(references) @ self.vectors(candidates).T

    def offline_same(self, reference: str, candidate: str, similarity: float) -> bool:
        """The offline rule: similar enough (or similar and sharing most of the
        reference's words), guards passing."""
        if similarity < min(self.threshold, LEXICAL_FLOOR) or not compatible(reference, candidate):
            return False
        return similarity >= self.threshold or coverage(reference, candidate) >= LEXICAL_COVERAGE

    @property
    def floor(self) -> float:
        """Below this similarity no pair is the same fact, whoever decides."""
        return min(self.threshold, LEXICAL_FLOOR, JUDGE_FLOOR if self.judge is not None else 1.0)

    def same(self, reference: str, candidate: str, similarity: float) -> tuple[bool, bool]:
        """(same fact?, was the judge asked?) for one pair at a known similarity."""
        offline = self.offline_same(reference, candidate, similarity)
        if self.judge is None or similarity < JUDGE_FLOOR or (offline and similarity >= JUDGE_SURE):
            return offline, False
        verdict = self.judge.same(reference, candidate)
        return (offline, False) if verdict is None else (verdict, True)

    def match(self, references: Sequence[str], candidates: Sequence[str]) -> list[Match]:
        """One-to-one pairing that pairs as many facts as possible, and among such
        pairings the most similar: every pair that says the same fact is a possible edge,
        and the assignment maximizes their count, then their summed similarity. Greedy
        "most similar pair first" is not enough: "Noor needs to version the Harbor API
        before v2" would take "Noor decided to version the Harbor API with URL versioning"
        (0.81) from the extracted fact that says it, leaving both of those unpaired."""
        sims = self.similarity(references, candidates)
        edges: dict[tuple[int, int], bool] = {}
        for r, c in zip(*np.nonzero(sims >= self.floor)):
            same, judged = self.same(references[r], candidates[c], float(sims[r, c]))
            if same:
                edges[(int(r), int(c))] = judged
        if not edges:
            return []
        # A pair is worth more than any sum of similarities, so the count comes first.
        weight = np.zeros(sims.shape, dtype=np.float64)
        for (r, c) in edges:
            weight[r, c] = len(edges) + 1 + float(sims[r, c])
        rows, cols = linear_sum_assignment(weight, maximize=True)
        out = [Match(int(r), int(c), float(sims[r, c]), edges[(int(r), int(c))])
               for r, c in zip(rows, cols) if (int(r), int(c)) in edges]
        return sorted(out, key=lambda m: m.reference)

    def best(self, reference: str, candidates: Sequence[str], similarities: np.ndarray | None = None) -> Match | None:
        """The most similar candidate that says the same thing as ``reference`` (many-to-one
        use); ``similarities``, the reference's row of ``similarity``, when already at hand."""
        if not candidates:
            return None
        sims = self.similarity([reference], candidates)[0] if similarities is None else similarities
        for c in np.argsort(-sims):
            if sims[c] < self.floor:
                break
            same, judged = self.same(reference, candidates[c], float(sims[c]))
            if same:
                return Match(0, int(c), float(sims[c]), judged)
        return None

    def supported(self, fact: str, evidence: Sequence[str]) -> bool:
        """Whether some piece of transcript evidence states ``fact`` (the offline rule
        with the fact as reference: its numbers must all be in the evidence)."""
        if not evidence:
            return False
        sims = self.similarity([fact], evidence)[0]
        return any(self.offline_same(fact, evidence[i], float(sims[i]))
                   for i in np.nonzero(sims >= min(self.threshold, LEXICAL_FLOOR))[0])


def calibration_table(matcher: FactMatcher, thresholds: Sequence[float] = (0.70, 0.75, 0.78, 0.80, 0.85),
                      ) -> list[dict[str, Any]]:
    """How ``CALIBRATION_PAIRS`` separate: per threshold by embedding alone (with and
    without the guards), and a last row, threshold ``"rule"``, for the full offline rule."""
    refs = [r for r, _, _ in CALIBRATION_PAIRS]
    cands = [c for _, c, _ in CALIBRATION_PAIRS]
    sims = (matcher.vectors(refs) * matcher.vectors(cands)).sum(axis=1)
    truth = [same for _, _, same in CALIBRATION_PAIRS]

    def tally(said: list[bool]) -> tuple[int, int]:
        return (sum(1 for ok, same in zip(said, truth) if ok and same),
                sum(1 for ok, same in zip(said, truth) if ok and not same))

    rows: list[dict[str, Any]] = []
    for t in thresholds:
        guarded = tally([bool(s >= t) and compatible(r, c) for s, r, c in zip(sims, refs, cands)])
        bare = tally([bool(s >= t) for s in sims])
        rows.append({"threshold": t, "paraphrases": guarded[0], "false_matches": guarded[1],
                     "paraphrases_no_guards": bare[0], "false_matches_no_guards": bare[1]})
    rule = tally([matcher.offline_same(r, c, float(s)) for s, r, c in zip(sims, refs, cands)])
    rows.append({"threshold": "rule", "paraphrases": rule[0], "false_matches": rule[1]})
    return rows


# --- leaks, supersedes, the headline numbers ---------------------------------------------

def _boundary(entry: str) -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z0-9])" + re.escape(entry) + r"(?![A-Za-z0-9])", re.IGNORECASE)


def is_fact_like(entry: str) -> bool:
    """A ``must_not`` entry of three or more words is a fact, matched by meaning too;
    a shorter one ("4471", "MySQL 5.7") is a string, matched literally."""
    return len(entry.split()) >= 3


def leak_reason(content: str, must_not: Sequence[str], matcher: FactMatcher | None) -> str | None:
    """Why ``content`` must not have reached the items, or None.

    A credential (``retrieval.credentials``) or a redaction marker; a ``must_not`` string
    inside it (case-insensitive, whole words); or, with a ``matcher``, a fact-like
    ``must_not`` entry it says (similarity at or above the threshold, guards passing).
    Pass no matcher for a fact already matched to a gold fact: "Ravi owns the migration
    and Marcus reviews it" is near "Marcus agreed to own the migration" (0.81) but says
    the gold "Ravi owns the migration".
    """
    if "[REDACTED:" in content:
        return "redacted credential marker"
    creds = find_credentials(content)
    if creds:
        return "credential: " + ", ".join(sorted({c.kind for c in creds}))
    for entry in must_not:
        if _boundary(entry).search(content):
            return f"must_not text {entry!r}"
    facts = [e for e in must_not if is_fact_like(e)]
    if matcher is None or not facts:
        return None
    sims = matcher.similarity(facts, [content])[:, 0]
    for i in np.argsort(-sims):
        if sims[i] >= matcher.threshold and compatible(facts[i], content):
            return f"must_not fact {facts[i]!r} (similarity {sims[i]:.2f})"
    return None


def supersedes_overlap(hint: str | None, gold: str, ignore: Sequence[str] = ()) -> bool:
    """Whether an extracted ``supersedes`` hint names some of what the gold one replaces
    (a shared content word or number; the speaker's own name does not count)."""
    if not hint or not hint.strip():
        return False
    return bool(content_words(hint, ignore) & content_words(gold, ignore))


def precision_recall_f1(matched: int, extracted: int, gold: int) -> tuple[float, float, float]:
    """Micro precision, recall and F1; an empty side scores 0, and nothing expected
    and nothing extracted scores 1."""
    if extracted == 0 and gold == 0:
        return 1.0, 1.0, 1.0
    precision = matched / extracted if extracted else 0.0
    recall = matched / gold if gold else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


# --- the LLM judge ----------------------------------------------------------------------

def _verdict(reply: str) -> bool:
    """``{"same": true|false}`` from the judge's reply."""
    try:
        data = json.loads(reply)
    except json.JSONDecodeError as exc:
        raise InvalidReply(f"not JSON: {exc.msg}") from None
    if not isinstance(data, dict) or not isinstance(data.get("same"), bool):
        raise InvalidReply('no boolean "same"')
    return data["same"]


@dataclass
class LLMJudge:
    """Asks a chat model whether two facts say the same thing (``prompts/judge_fact.md``).

    Args:
        config: the memory config; ``[llm]`` gives the model, timeout and temperature.
        client: an ``openai.OpenAI``; built from ``OPENAI_API_KEY``/``OPENAI_BASE_URL`` when omitted.
    """

    config: Any
    client: Any = None
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures: int = 0
    _cache: dict[tuple[str, str], bool | None] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        from retrieval.llm import chat_client, load_prompt

        self.prompt = load_prompt("judge_fact")
        if self.client is None:
            self.client = chat_client(self.config)

    @property
    def version(self) -> str:
        return self.prompt.version

    def same(self, reference: str, candidate: str) -> bool | None:
        """True or False from the model; None when it failed or answered off-schema."""
        key = (reference, candidate)
        if key in self._cache:
            return self._cache[key]
        messages = [{"role": "system", "content": self.prompt.text},
                    {"role": "user", "content": json.dumps({"reference": reference, "candidate": candidate})}]
        try:
            verdict, usage = complete_validated(
                self.client, messages, _verdict, str, model=self.config.llm.model,
                temperature=self.config.llm.temperature, json_mode=True)
        except LLMOutputFailed as failed:  # no verdict: the offline rule decides
            verdict, usage = None, failed.usage
        self.calls += usage.attempts
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        if verdict is None:
            self.failures += 1
        self._cache[key] = verdict
        return verdict
