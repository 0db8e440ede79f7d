"""The extractor used when no LLM is configured: rules over sentences, no model, no network.

Per informative clause a user says, it proposes one literal fact in the third person:
"I went to a support group yesterday" said by Caroline becomes "Caroline went to a
support group yesterday." Questions, greetings, thanks, filler and one-off requests to
the assistant yield nothing. An assistant's statement becomes a fact only when the
user's next turn confirms it; tool output and [UNTRUSTED DATA] yield untrusted facts,
never instructions, claims about the user or claims the user denies. Within a session
the user's last word stands: a value changed later replaces the earlier one. The word
lists and cue patterns live in ``rules.py`` and ``cues.py``; this module is the procedure, over
``clauses`` (splitting and labelling), ``people`` (pronouns and the speaker's voice) and
``exchange`` (how the turns of a session bear on each other).
"""

from __future__ import annotations

import dataclasses
import re

from memory_assets.lib.extraction import cues as C
from memory_assets.lib.extraction import rules as R
from memory_assets.lib.extraction.base import Budget, ExtractionResult, Segment, plain_spacing, segments
from memory_assets.lib.extraction.categories import TECHNICAL_CATEGORY, technical_session
from memory_assets.lib.extraction.change_statements import change_statement, lead_change, states_change
from memory_assets.lib.extraction.clauses import (Categorizer, clauses, content_words, drop_tail_question, entities_of,
                                                  finish, has_verb, is_chatter, is_question, is_specific, kind_of, opens_on_name,
                                                  sentences, speaker_name, split_caption, split_label, strength_of,
                                                  strip_filler, supersedes_of)
from memory_assets.lib.extraction.exchange import (addressee_of, answer_details, appositive, confirms, denial_of,
                                                   informative, is_denied, lower_lead, recent_memo, settle_reversals,
                                                   token_set, we_as_i)
from memory_assets.lib.extraction.fields import assistant_directive, extended_directive
from memory_assets.lib.extraction.kinds import Procedure, procedure_in
from memory_assets.lib.extraction.people import (Mention, Voice, antecedent_in, as_said, it_named, note_people,
                                                 resolve_people, resolve_pronoun, rewrite_first_person)
from memory_assets.lib.extraction.gate import steers_agent
from retrieval.config import MemoryConfig
from retrieval.schema import Candidate, Turn
from retrieval.dates import DATE
from retrieval.text import sentiment


# --- The extractor ----------------------------------------------------------------

class OfflineExtractor:
    """Rule-based extraction: deterministic, offline, fast. ``config``: the memory config
    (category keywords pick each fact's category, ``tiers`` its tier)."""

    name = "offline"
    version = "rules-v22"  # v22: how answers should look ("keep answers in bullet points") is a standing rule, a sentence opening on a proper name is about that person, a reason ("since I'm vegetarian, …") or a fact up for judgement ("is it weird that I…") is a fact, one word a preposition points at is a change's value, a one-clause "?" with a change is a statement, "from next month" is when; v21: a state told "now that" it holds, a "who" clause about a person, a name's "'s on" as "is on", "went vegan" and "as of last week" as changes, "since going freelance", "first week at Bosch", "back to five days a week" are facts; v20: "we're up to N" stays the group's; v19: a change verb a sentence opens with is the speaker's, an unnamed thing changed by a change phrase is a fact; v18: "my" in a clause that names the speaker is "their"; v17: a pronoun inside another word ("us-east-1") is left as it is; v16: runs of spaces read as one, sentences read in pieces of ≤ 1,000 characters

    def __init__(self, config: MemoryConfig):
        self.config = config
        self._categorizer = Categorizer(config)
        self._technical_session = False

    def extract(self, turns: list[Turn]) -> ExtractionResult:
        """Candidate facts from one session's turns, in order; ``OverBudget`` past the time budget."""
        turns, self._budget = plain_spacing(turns), Budget(self.config.pipeline.extraction_seconds)
        self._technical_session = technical_session(turns)
        by_turn: dict[int, list[Segment]] = {}
        for seg in segments(turns, self.config.injection.header):
            by_turn.setdefault(seg.turn.turn, []).append(seg)
        ordered = [t for t in turns if t.role != "system"]
        names = tuple(dict.fromkeys(speaker_name(t) for t in turns if t.role == "user"))
        user_names = tuple(n for n in names if n != "User")
        # Two people talking (LoCoMo) rather than a user instructing an assistant, whose
        # turns an agent may not even send: there "never give up" is advice, not a rule.
        agent = any(t.role == "assistant" for t in turns) or len(names) < 2
        # Who "we" was, per speaker: (turn index, who), remembered for a few turns; and
        # the people the session has named, for "she", "his", "him".
        companions: dict[str, tuple[int, str]] = {}
        mentions: list[Mention] = []
        out: list[Candidate] = []
        seen: set[str] = set()
        absorbed: dict[int, str] = {}  # a reply's details already folded into the fact it confirmed
        for index, turn in enumerate(ordered):
            found: list[Candidate] = []
            for seg in by_turn.get(turn.turn, []):
                if not seg.trusted:
                    later = [s.text for t in ordered[index + 1:] if t.role == "user"
                             for s in by_turn.get(t.turn, []) if s.trusted]
                    found += self._untrusted(seg, user_names, later)
                elif turn.role == "assistant":
                    reply = next((t for t in ordered[index + 1:] if t.role != "tool"), None)
                    if reply is not None and reply.role == "user" and confirms(reply):
                        untrusted = {w for t in ordered[:index] for s in by_turn.get(t.turn, []) if not s.trusted
                                     for w in token_set(s.text)}
                        confirmed = self._confirmed(seg, reply, untrusted)
                        # "Want a reminder?" "Yes, Sundays at 4pm.": the details belong to the yes.
                        if confirmed and (details := answer_details(reply, names)):
                            said = rewrite_first_person(details, Voice(speaker_name(reply), "the assistant"))
                            last = confirmed[-1]
                            confirmed[-1] = dataclasses.replace(
                                last, content=finish(f"{last.content.rstrip('.')}, {lower_lead(said)}"),
                                directive=last.directive and extended_directive(last.directive, lower_lead(said)))
                            absorbed[reply.turn] = finish(said).lower()
                        found += confirmed
                elif turn.role == "user":
                    name = speaker_name(turn)
                    if m := R.COMPANION.search(seg.text):
                        companions[name] = (index, m.group(1).lower())
                    companion = recent_memo(companions.get(name), index)
                    voice = Voice(name, "the assistant" if agent else addressee_of(ordered, index), companion)
                    found += [c for c in self._stated(seg, voice, names, agent, index, mentions)
                              if c.content.lower() != absorbed.get(turn.turn)]
                    if (procedure := procedure_in(seg.text)) is not None:
                        found.append(self._procedure(procedure, seg, voice))
            for cand in found:
                if cand.content.lower() not in seen:
                    seen.add(cand.content.lower())
                    out.append(cand)
        # "Hmm, actually no." opening a turn: everything in it changes what came before.
        reversing = {t.turn for t in ordered if t.role == "user" and C.TURN_REVERSAL.match(t.content)}
        speakers = {t.turn: speaker_name(t) for t in ordered}
        # What others claimed: the assistant's sentences, tool output, pasted data.
        claims = [(seg.turn.turn, sentence) for seg in segments(turns, self.config.injection.header)
                  if not seg.trusted or seg.turn.role == "assistant" for sentence in sentences(seg.text)]
        settled = settle_reversals(out, names, reversing, speakers)
        return ExtractionResult(candidates=[denial_of(c, claims, names, self.config) for c in settled])

    # A user's own words.
    def _stated(self, seg: Segment, voice: Voice, names: tuple[str, ...], agent: bool, index: int,
                mentions: list[Mention]) -> list[Candidate]:
        """A user turn's facts. ``mentions`` holds the people named so far in the session
        and gains the ones this turn names."""
        text, caption = split_caption(seg.text)
        found: list[Candidate] = []
        all_names = tuple(dict.fromkeys(names + ((voice.addressee,) if voice.addressee else ())))
        antecedent: str | None = None
        previous: Candidate | None = None  # the fact the last sentence ended on
        told: str | None = None  # the sentence before, for an opening "It's my…" (``it_named``)
        for sentence in sentences(text):
            self._budget.check()
            sentence, told = it_named(sentence, told, all_names), sentence
            # "I finally bought a kiln! A used Skutt KM-818, 600 dollars from a retiring
            # teacher.": a verbless sentence right after a fact describes that fact.
            if previous is not None and (tail := appositive(sentence, all_names)):
                merged = dataclasses.replace(
                    previous, content=finish(f"{previous.content.rstrip('.')}, {tail}"),
                    directive=previous.directive and extended_directive(previous.directive, tail))
                found[found.index(previous)] = merged
                previous = None
                continue
            previous = None
            # "Since switching to OUTsurance, how do I…": a change told on the way to a question is a fact of its own.
            said, rest = lead_change(sentence)
            if said:
                found.append(self._candidate(as_said(said, voice, seg.turn), said, sentence, seg.turn, voice, "fact", False))
            before = len(found)
            for raw in clauses(rest):
                cand = self._clause(raw, sentence, seg.turn, voice, all_names, agent, antecedent, (index, mentions))
                if cand is not None:
                    found.append(cand)
                    previous = cand
                # "My wife Priti has the folder, I need to ask her": the next clause's "her".
                note_people(raw, None, index, mentions)
            if len(found) == before and (kept := self._change_statement(rest, seg.turn, voice, all_names)):
                found.append(kept)
                previous = kept
            antecedent = antecedent_in(sentence, all_names)
            note_people(sentence, antecedent, index, mentions)
        if caption and C.REFERS_TO_IMAGE.search(text):
            what = C.CAPTION_LEAD.sub("", caption.strip().rstrip("."))
            if len(content_words(what)) >= 2:
                found.append(self._candidate(finish(f"{voice.name} shared a photo of {what}"), what, what,
                                             seg.turn, voice, "fact", False))
        return found

    def _change_statement(self, sentence: str, turn: Turn, voice: Voice, names: tuple[str, ...]) -> Candidate | None:
        """A first-person sentence that says a value changed, when no clause rule read it (``change_statements``)."""
        text = change_statement(sentence, names)
        if text is None or not informative(content := as_said(text, voice, turn), text, voice, names, kind := kind_of(text), True):
            return None
        return self._candidate(content, text, sentence, turn, voice, kind, bool(C.ASKS_TO_KEEP.search(text)))

    def _clause(self, raw: str, sentence: str, turn: Turn, voice: Voice, names: tuple[str, ...],
                agent: bool, antecedent: str | None, people: tuple[int, list[Mention]]) -> Candidate | None:
        """One clause's fact, or None. ``antecedent`` is a name that opened the sentence
        before (what an opening "he", "she" or "it" means); ``people`` the turn's index
        and the people named so far, for pronouns elsewhere."""
        raw = R.CHATTER_TAIL.sub("", raw.strip())
        if R.CHATTER_OPENERS.match(raw):
            return None
        label, body = split_label(raw)
        remember = bool(C.ASKS_TO_KEEP.search(raw))
        clause = strip_filler(drop_tail_question(body), names)
        clause = R.ANNOUNCEMENT.sub("", C.KEEP_PREFIX.sub("", clause)).strip()
        cue = f"{label}: {clause}" if label else clause  # "Change of plan: …" is a correction cue
        clause = re.sub(r"^no[,.!]+\s+(?=\w)", "", clause, flags=re.IGNORECASE)
        # "Since the reorg I'm based at…": a time phrase before the speaker's own clause,
        # not a subordinate clause; read as "I'm based at… since the reorg".
        if m := R.LEADING_TIME_PHRASE.match(clause):
            clause = f"{clause[m.end():].rstrip(' .!')} {m.group(0).strip()[:1].lower()}{m.group(0).strip()[1:]}"
        # "From now on, window seats for me": a standing choice said without a verb.
        if agent and (m := R.STANDING_FOR_ME.match(clause)):
            clause = cue = f"I prefer {m.group('what').strip()} {m.group('when').strip().rstrip(',').lower()}"
        if (not clause or is_question(clause) or is_chatter(clause)
                or R.SUBORDINATE_START.match(clause) and "," not in clause
                or R.PREPOSITION_START.match(clause) and not R.SUBJECT_PRONOUN.search(clause)):
            return None
        if agent and (C.PASTE_INTRO.search(clause) or C.LET_ME.match(clause)):
            return None  # "here's what I set in the env:" hands material over; "let me ask" is a next step
        if agent:
            request = self._request(clause, cue, sentence, turn, voice, remember)
            if request is not None:
                return request or None
        if R.SECOND_PERSON_SUBJECT.match(clause) and not agent and voice.addressee:
            # "You've put a lot of work into this" to Jon: what Gina said about Jon.
            told = R.DANGLING_END.sub("", R.EVALUATIVE_TAIL.sub("", clause).strip())
            return self._reported(told, clause, sentence, turn, voice, names)
        if R.SECOND_PERSON_SUBJECT.match(clause) or R.SOCIAL_IMPERATIVE.match(clause) or R.GENERIC_WE.search(clause) \
                or C.LETS.match(clause):
            return None
        clause = R.DANGLING_END.sub("", R.EVALUATIVE_TAIL.sub("", clause).strip())
        resolved = resolve_pronoun(clause, antecedent, True) if antecedent else clause
        resolved, used = resolve_people(resolved, people[1], people[0])
        named_first = bool(antecedent) and resolved.startswith(antecedent)  # it opens on the sentence's name
        text = resolved
        if (intro := C.SELF_INTRO.match(text)) and intro.group(1) == voice.name:
            text = "I'm " + text[intro.end():]
        for pattern, lead, unless in R.PRO_DROP:
            if pattern.match(text) and not (unless and unless.search(text)):
                text = pattern.sub(lead, text[:1].lower() + text[1:], count=1)
                break
        # "She just got into ceramics" about "my sister Maya" is a fact; "he never gives up"
        # about a name that merely opened the last sentence is too often a character or a verdict.
        about_someone = not named_first and resolved != clause \
            and re.match(r"(?:he|she)\b", clause, re.IGNORECASE)
        if not (R.FIRST_PERSON.search(text) or about_someone
                or agent and (is_specific(text) or self._domain_fact(text, names) or opens_on_name(text, names))):
            return None if agent else self._reported(text, clause, sentence, turn, voice, names)
        singular = R.SINGULAR_FIRST_PERSON.search(text)
        if not singular and R.FIRST_PERSON.search(text) and R.GENERIC_WE_CLAIM.search(R.SUBORDINATE_TAIL.sub("", text)) \
                and not R.WE_DID.search(text) and not opens_on_name(text, names):  # ("Okafor, our landlord, lives…")
            return None
        if not singular and (R.MAXIM.match(text) or R.OPINION_OPENER.match(text)):
            return None
        if R.DEICTIC_SUBJECT.match(text) and len(content_words(text, names)) < 3:
            return None
        if agent and R.UNRESOLVED_PERSON.match(text) and not (C.REVERSAL.search(text) or kind_of(cue) == "correction"):
            # "They need CSV after all": who needs it is in another turn, and a vague fact is
            # worse than none; a change ("…April 15 now, not the 17th") stays, to replace the old value.
            return None
        # A verbless answer ("Max 200, not 500.", "Sundays at 4pm.") leans on the question
        # it answers; only one with enough of its own ("Dr. Alvarez at Cedar Animal Clinic")
        # stands alone.
        if not has_verb(text) and not (agent and is_specific(text) and len(content_words(text, names)) >= 4):
            return None
        if agent and C.PRONOUN_OBJECT.search(text) and not is_specific(text) and len(content_words(text, names)) < 3:
            return None  # "I'll rotate it": what "it" is lives in another sentence
        # "I need a hotel too", "I want a training plan": what the user asks the assistant
        # for in this chat, unless it carries a specific (a date, a number, a name).
        if agent and C.BARE_WANT.match(text) and not is_specific(text) and len(content_words(text, names)) <= 3:
            return None
        if agent and not (voice.companion and not re.search(r"\b(?:dog|cat|puppy|kitten)s?$", voice.companion)):
            text = we_as_i(text)  # to an assistant, "we use uv" says what the user does: "Raj uses uv"
        content = as_said(text, voice, turn)
        if re.search(r"\b(\w+) is \1\b", content):
            return None  # "I'm Kenji" said by Kenji
        kind = kind_of(cue)
        if not informative(content, clause, voice, names, kind, states_change(sentence)):
            return None
        extra = tuple(dict.fromkeys(((antecedent,) if named_first else ()) + used))
        return self._candidate(content, clause, sentence, turn, voice, kind, remember, extra=extra)

    def _reported(self, text: str, clause: str, sentence: str, turn: Turn, voice: Voice,
                  names: tuple[str, ...]) -> Candidate | None:
        """Between two people, a statement with no "I" in it is still what the speaker
        said: "Fitting into the new team's style of play was a challenge during
        pre-season" (John) becomes "John said: Fitting into the new team's style of play
        was a challenge during pre-season." Kept as reported speech (implied strength),
        only with a verb and three content words of its own, and never for a maxim
        ("Family is everything") or advice with no subject ("Push through and it'll be
        worth it"). An assistant's user gets no such
        fact: there a sentence without "I" is about the task. What one says of the other
        ("You're the perfect mentor" to Jon) is reported the same way, about them."""
        if not has_verb(text) or len(content_words(text, names)) < 3 or R.MAXIM.match(text) \
                or R.OPINION_OPENER.match(text) or R.BARE_IMPERATIVE.match(text):
            return None
        said = as_said(text, voice, turn)
        if not said:
            return None
        # A colon keeps the statement's own capitals: "Gina said: Rome wasn't built in a day."
        content = f"{voice.name} said: {said}"
        return dataclasses.replace(self._candidate(content, clause, sentence, turn, voice, "fact", False,
                                                   strength="implied"), reported_by=voice.name)

    def _request(self, clause: str, cue: str, sentence: str, turn: Turn, voice: Voice,
                 remember: bool) -> Candidate | None | bool:
        """What a user asks of an assistant: a standing rule or a reminder is kept, a
        one-off task is not. Returns a candidate, False to drop, None if not a request."""
        n = voice.name
        # A standing rule: "always…"/"never…", a convention ("use anyhow with .context()",
        # not "use the blue one for this one"), or an instruction under a condition ("if it
        # rains, just move the run to the next day" → "…to move the run to the next day if
        # it rains": the condition makes it standing).
        rule = clause if C.RULE_START.match(clause) or C.CONVENTION.match(clause) and not C.ONE_OFF.search(clause) \
            else None
        conditional = C.CONDITIONAL_RULE.match(clause) if rule is None else None
        if conditional and (C.TASK_REQUEST.match(conditional["rest"]) or C.CONVENTION.match(conditional["rest"])):
            rule = f"{conditional['rest'].strip().rstrip(' .!')} {conditional['cond'][:1].lower()}{conditional['cond'][1:]}"
        if rule is not None:
            body = C.RULE_LEAD.sub("", rule)
            body = re.sub(r"^(?:don't|do not)\b", "not to", body, flags=re.IGNORECASE)
            if not body.lower().startswith("not to"):
                body = "to " + body[:1].lower() + body[1:]
            kind = kind_of(cue)
            if C.NEGATIVE_RULE.match(body):
                kind = "negative"
            elif kind not in ("procedure", "correction", "preference"):
                kind = "procedure"
            # "No, never." / "Yes, always.": an answer, with the rule itself in the question.
            if not content_words(re.sub(r"^(?:not to|to)\s+(?:always|never)?", "", body, flags=re.IGNORECASE), (n,)):
                return False
            # Structure first: the rule's imperative is made from the request itself, and
            # the sentence is rendered from the same words.
            request = rewrite_first_person(body, voice)
            content = finish(f"{n} wants the assistant {request}")
            return self._candidate(content, clause, sentence, turn, voice, kind, remember,
                                   directive=assistant_directive(n, request))
        if C.REMIND_ME.match(clause):
            body = C.REMIND_ME.sub("", clause)
            if DATE.match(body) or C.WEEKDAY.match(body):
                body = "on " + body  # "remind me October 1" → "a reminder on October 1"
            if not content_words(body, (n,)) and not is_specific(body):
                return False  # "remind me" alone: the reminder is in the question it answers
            content = finish(f"{n} wants a reminder {rewrite_first_person(body, voice)}")
            return self._candidate(content, clause, sentence, turn, voice, "commitment", True)
        if C.LETS.match(clause):
            body = C.LETS.sub("", clause)
            content = finish(f"{n} wants to {rewrite_first_person(body, voice)}")
            if len(content_words(content, (n,))) < 2 or not (C.CHOICE.match(body) or C.STANDING.search(body)):
                return False  # "let's check if pushes work first": the chat's next step, not a decision
            return self._candidate(content, clause, sentence, turn, voice, "decision", remember)
        if C.TASK_REQUEST.match(clause) or R.SECOND_PERSON_SUBJECT.match(clause):
            return False
        return None

    def _procedure(self, procedure: Procedure, seg: Segment, voice: Voice) -> Candidate:
        """A turn's ordered steps as one ``procedure`` fact that keeps them, with the
        turn's prerequisites and warnings (``kinds.procedure_in``)."""
        content = procedure.content(voice.name, int(self.config.gate.max_chars))
        cand = self._candidate(content, content, seg.text, seg.turn, voice, "procedure",
                               bool(C.ASKS_TO_KEEP.search(seg.text)), directive=procedure.directive())
        return dataclasses.replace(cand, steps=list(procedure.steps), prerequisites=list(procedure.prerequisites),
                                   warnings=list(procedure.warnings))

    def _domain_fact(self, text: str, names: tuple[str, ...]) -> bool:
        """In a chat with an assistant, "the deploy failed again" is a fact without an I."""
        hits = [c for c, _ in self._categorizer.hits(text) if c != C.OTHER_DEFAULT_CATEGORY]
        return bool(hits) and len(content_words(text, names)) >= 2 and not R.DEICTIC_SUBJECT.match(text)

    def _candidate(self, content: str, clause: str, sentence: str, turn: Turn, voice: Voice, kind: str,
                   remember: bool, *, strength: str | None = None, provenance: str = "user_stated",
                   trust: str = "trusted", turns: list[int] | None = None, extra: tuple[str, ...] = (),
                   directive: str | None = None) -> Candidate:
        if trust == "untrusted":
            default = C.UNTRUSTED_DEFAULT_CATEGORY
        elif directive is not None:  # a standing rule for the assistant: how work is done, unless a choice
            default = C.STANDING_DECISION_CATEGORY if kind == "decision" else C.RULE_DEFAULT_CATEGORY
        elif self._technical_session:
            # In a session about code and systems, a fact nothing else places is about the work.
            default = TECHNICAL_CATEGORY
        elif R.FIRST_PERSON.search(clause) or voice.name in content:
            default = C.LIFE_DEFAULT_CATEGORY
        else:
            default = C.OTHER_DEFAULT_CATEGORY
        category, keywords = self._categorizer.best(clause, default, C.NOT_FOR_LIFE_FACTS if trust == "trusted" else ())
        if directive is not None and trust == "trusted" and kind != "decision":
            # A standing instruction is how the work is done in a session about code and
            # systems, whatever it names; elsewhere how the person wants things done for
            # them, unless its own words say it is about the work ("run make lint").
            if self._technical_session:
                category = C.RULE_DEFAULT_CATEGORY
            elif category not in (C.RULE_DEFAULT_CATEGORY, C.PERSONAL_RULE_CATEGORY):
                category = C.PERSONAL_RULE_CATEGORY
        if kind == "preference" and category in (C.LIFE_DEFAULT_CATEGORY, C.OTHER_DEFAULT_CATEGORY):
            category = "preferences" if "preferences" in self.config.categories else category
        named = tuple(n for n in (voice.name, voice.addressee) if n)
        tags = list(dict.fromkeys(keywords + content_words(clause, named)[:4]))[:6]
        speaker = (voice.name,) if voice.name not in ("User", "the assistant") and trust == "trusted" else ()
        return Candidate(
            content=content,
            category=category,
            kind=kind,
            tier=self.config.tier_for(kind, category),
            strength=strength or strength_of(sentence),
            sentiment=sentiment(sentence),
            tags=[t.lower() for t in tags],
            entities=entities_of(clause, speaker + extra, turn.content_at),
            source_turns=turns or [turn.turn],
            source_trust=trust,
            provenance="user_corrected" if kind == "correction" and provenance == "user_stated" else provenance,
            remember=remember,
            action_required=bool(C.ACTION.search(clause)),
            supersedes=supersedes_of(clause) if kind == "correction" or kind == "decision" and C.REPLACES.search(clause) else None,
            # Whom it is about: the speaker, when the fact is said of them by name.
            subject=voice.name if voice.name not in ("User", "the assistant") and content.startswith(voice.name) else None,
            directive=directive,
        )

    # An assistant statement the user confirmed.
    def _confirmed(self, seg: Segment, reply: Turn, untrusted: set[str] = frozenset()) -> list[Candidate]:
        """What the assistant said and the user's reply confirmed. ``untrusted`` holds the
        words of the session's tool output and pasted data so far: an assistant sentence
        made of them restates untrusted content, and a "right" does not make it trusted."""
        user = speaker_name(reply)
        voice = Voice("the assistant", user)
        sources = sorted({seg.turn.turn, reply.turn})

        def confirmed(content: str, clause: str, sentence: str, kind: str, directive: str | None = None) -> Candidate:
            return self._candidate(content, clause, sentence, seg.turn, Voice(user, None), kind, False,
                                   strength="implied", provenance="observed", turns=sources, directive=directive)

        said = sentences(seg.text)
        if said and said[-1].rstrip().endswith("?"):
            # "Yes" answers the question the assistant ended on, not what came before it.
            question = C.ASSISTANT_HEDGE.sub("", split_label(said[-1].strip())[1], count=1).strip()
            if offer := C.ASSISTANT_OFFER.match(question):
                body = rewrite_first_person(offer.group(1), voice)
                dated = DATE.search(body) or C.WEEKDAY.search(body) or C.TIME_ANCHOR.search(body)
                if len(content_words(body)) < 2 or not (C.STANDING.search(body) or dated):
                    return []  # "Shall I add tests?" "Yes.": a task for now, not a memory
                return [confirmed(finish(f"{user} wants the assistant to {body}"), question, said[-1], "decision",
                                  directive=assistant_directive(user, f"to {body}"))]
            for pattern, lead in C.ASSISTANT_QUESTIONS:
                if asked := pattern.match(question):
                    content = finish(rewrite_first_person(lead + asked.group(1), voice))
                    if len(content_words(content, (user,))) < 2:
                        return []
                    return [confirmed(content, question, said[-1], kind_of(content))]
            if is_question(question.rstrip("?")) or not re.search(r"\byou\b", question, re.IGNORECASE):
                return []
            said = [question]  # "So you prefer tabs over spaces?" is a statement awaiting a yes
        firm = C.STRONG_CONFIRM.match(reply.content.strip()) is not None
        picked: list[Candidate] = []
        for sentence in said:
            guess = C.ASSISTANT_HEDGE.sub("", split_label(sentence.strip())[1], count=1).strip().rstrip("?")
            if not firm and not C.ABOUT_YOU.match(guess):
                continue
            if (not guess or C.ASSISTANT_CHATTER.search(guess) or is_chatter(guess) or is_question(guess)
                    or C.ASSISTANT_SELF.search(guess)):
                continue  # chatter, a question, or the assistant talking about itself
            if not has_verb(guess) or len(content_words(guess)) < 2:
                continue
            words = token_set(guess)
            if untrusted and words and len(words & untrusted) >= 0.75 * len(words):
                continue  # a summary of tool output: the untrusted fact is kept from the source
            content = finish(rewrite_first_person(guess, voice))
            picked.append(confirmed(content, guess, sentence, kind_of(guess)))
        about_user = [c for c in picked if user in c.content]
        return (about_user or picked)[-2:]

    # Tool output and pasted documents: facts, never instructions.
    def _untrusted(self, seg: Segment, users: tuple[str, ...], later: list[str]) -> list[Candidate]:
        """The labelling policy for untrusted text: a fact worth keeping is kept, tagged
        untrusted; a line that steers the agent, a claim about the user (named, or "you")
        and a claim the user denies later in the session are not facts.

        Args:
            users: the session's user names; untrusted text naming them speaks for them.
            later: what the user says after this turn, where a denial would be.
        """
        found = []
        voice = Voice(speaker_name(seg.turn), None)
        about_user = re.compile(r"\b(?:" + "|".join(re.escape(u) for u in users) + r")\b") if users else None
        denials = [s for text in later for s in sentences(text) if C.DENIAL.search(s)]
        title = None  # a page's "# pdfkit-plus 1.4.0" names what "Requires Chromium 120" is about
        for line in seg.text.splitlines():
            if heading := C.DOC_TITLE.match(line):
                title = title or heading.group(1)
                continue
            if C.INJECTION.search(line) or steers_agent(line):
                continue  # the rest of the line is the same author steering the model
            line = C.LOG_PREFIX.sub("", line)
            if C.TOOL_NOISE.search(line) or C.DOC_METADATA.match(line) or C.CODE_LINE.search(line):
                continue
            line = C.SOURCE_PREFIX.sub("", line)
            for sentence in sentences(line):
                if is_denied(sentence, denials, users):
                    continue  # "…moved to MySQL 5.7, so configure the MySQL backend": all of it
                for clause in clauses(sentence):
                    clause = clause.strip()
                    # First person in a document is its author, not the user: skip rather than misattribute.
                    if (is_question(clause) or C.IMPERATIVE.match(clause) or R.FIRST_PERSON.search(clause)
                            or C.TOOL_NOISE.search(clause) or is_chatter(clause) or not is_specific(clause)
                            or C.ADDRESSES_READER.search(clause) or about_user and about_user.search(clause)
                            or is_denied(clause, denials, users)):
                        continue
                    if title and C.DESCRIBES.match(clause):
                        clause = f"{title} {clause[:1].lower()}{clause[1:]}"
                    content = finish(clause)
                    words = content.split()
                    if len(words) < 4 or sum(w[:1].isalpha() for w in words) < 0.6 * len(words):
                        continue
                    strength = "inferred" if strength_of(sentence) == "inferred" else "implied"
                    found.append(self._candidate(content, clause, sentence, seg.turn, voice, kind_of(clause), False,
                                                 strength=strength, provenance="extracted", trust="untrusted"))
        return found
