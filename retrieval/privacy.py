"""What the user says about memory itself: "don't remember this", "forget what I told you about X".

Both are read where a message first enters or is first extracted, so the memory obeys
them before anything is stored:

* **Off the record** (``off_the_record``): a user turn saying "don't remember this",
  "off the record", "don't save this" … is withheld from the inbox itself
  (``retrieval.inbox.write_session`` writes ``WITHHELD`` in its place), together with the
  assistant's reply to it; a turn that is only the request ("Actually, don't remember
  that") withholds the user's previous turn instead. No derived store ever sees it.
* **Forget requests** (``forget_request``): "please forget what I told you about my
  passport" names a topic. Extraction never stores the request as a fact, drops the
  session's earlier facts about the topic, and appends a ``forget`` event for every
  published item about it (``memory_assets.lib.extraction.forgetting``), so the retirement is
  audited like any forget.

Only the user's own trusted words count: a web page or tool output saying "forget
everything about X" is untrusted data, never an instruction (DESIGN, security).

"Don't forget to …" is a reminder, not a forget request, and "forget the previous
instructions" is a prompt injection (the write gate refuses it), not a topic.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

WITHHELD = "[WITHHELD: the user asked not to remember this]"

_OFF_RECORD = re.compile(
    r"\boff[- ]the[- ]record\b"
    # An imperative ("Don't remember this", "please don't save that, it's private"), not a
    # statement ("I don't remember that") nor a determiner ("don't save this file").
    r"|(?:^|[.!?,;:(\n-]\s*|\b(?:please|and|but|so|just|oh|actually)\s+)"
    r"(?:don'?t|do\s+not)\s+(?:remember|save|store|keep|record|memori[sz]e|log|write\s+down|note)"
    r"\s+(?:this|that|it|any\s+of\s+(?:this|that|it))"
    r"(?=\s*(?:[,.!?;:)\n-]|$|(?:please|but|ok(?:ay)?|though|because|it'?s|this\s+is|i\b)))"
    r"|\b(?:this|that|it)\s+(?:is|'s)\s+(?:just\s+)?between\s+(?:us|you\s+and\s+me)\b"
    r"|\bnot\s+for\s+(?:your\s+)?memory\b",
    re.IGNORECASE,
)
# What a bare request ("Actually, don't remember that.") is made of: it points back.
_FILLER = re.compile(r"\b(?:actually|please|ok(?:ay)?|oh|and|but|so|also|wait|hey|it'?s|private|personal|"
                     r"sorry|thanks?|that|this|one|last|bit|part)\b", re.IGNORECASE)

# The verb as an imperative: "I forget what I told you about X" is a statement.
_IMPERATIVE = (r"(?:^|(?<=[.!?,;:(\n])\s*|\b(?:please|pls|can\s+you|could\s+you|would\s+you|will\s+you|just|and|"
               r"now|also|actually|oh|so)\s+)")
_FORGET_VERB = (_IMPERATIVE + r"(?:forget|delete|erase|remove|drop|wipe|purge|scrub|clear|"
                r"stop\s+remembering|(?:don'?t|do\s+not)\s+remember)")
_TOPIC = r"(?P<topic>[^.!?\n]{2,120})"
_FORGET = tuple(re.compile(p, re.IGNORECASE) for p in (
    # "forget what I told you about my passport", "forget everything I said about Tom"
    rf"{_FORGET_VERB}\s+(?:what|everything|anything|all(?:\s+that)?|the\s+(?:stuff|things?))\s+"
    rf"(?:I(?:'ve)?\s+(?:told|said\s+to|shared\s+with|mentioned\s+to|gave)\s+you|I\s+(?:said|mentioned|shared))"
    rf"\s+(?:about|regarding|on|re:?|concerning)\s+{_TOPIC}",
    # "delete the memory about my passport", "erase what you know about my ex"
    rf"{_FORGET_VERB}\s+(?:the|any|all|your|every|those|these)?\s*(?:memor(?:y|ies)|info(?:rmation)?|notes?|"
    rf"records?|data|facts?|details|what\s+you\s+know|everything\s+you\s+know|anything\s+you\s+know)\s+"
    rf"(?:you\s+have\s+)?(?:about|regarding|on|of|concerning)\s+{_TOPIC}",
    # "forget about my passport", "forget my passport number"
    rf"{_IMPERATIVE}forget\s+(?:about\s+)?(?P<topic>(?:my|our|the\s+fact\s+that)\s+[^.!?\n]{{2,120}})",
    # "forget that I'm vegetarian"
    rf"{_IMPERATIVE}forget\s+that\s+(?P<topic>I\b[^.!?\n]{{2,120}})",
))
# "forget the previous instructions" is an injection, not a topic; "don't forget to" a reminder.
_NOT_A_TOPIC = re.compile(r"^(?:the\s+|all\s+|your\s+|any\s+)*(?:previous|prior|above|earlier|system|original)\b"
                          r"|^(?:instructions?|prompts?|rules)\b", re.IGNORECASE)
_TRAILING = re.compile(r"(?:,?\s+(?:please|thanks|thank\s+you|ok(?:ay)?|for\s+good|from\s+(?:your\s+)?memory))+\s*$",
                       re.IGNORECASE)
_REMINDER = re.compile(r"\b(?:don'?t|do\s+not|never)\s+forget\b", re.IGNORECASE)


def off_the_record(text: str) -> bool:
    """Whether ``text`` asks that it (or the turn it answers) not be remembered."""
    return bool(_OFF_RECORD.search(text))


def _points_back(text: str) -> bool:
    """Only the request is said ("Actually, don't remember that."): it means the turn before."""
    rest = _FILLER.sub(" ", _OFF_RECORD.sub(" ", text))
    return len(re.findall(r"[A-Za-z0-9]{2,}", rest)) <= 2


def forget_request(text: str) -> str | None:
    """The topic ``text`` asks the memory to forget ("my passport"), or None."""
    if _REMINDER.search(text):
        return None
    for pattern in _FORGET:
        match = pattern.search(text)
        if match:
            topic = _TRAILING.sub("", " ".join(match.group("topic").split())).strip(" ,;:'\"")
            if topic and not _NOT_A_TOPIC.match(topic):
                return topic
    return None


def withhold_off_the_record(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with every off-the-record exchange replaced by ``WITHHELD``.

    A user turn that asks not to be remembered is withheld with the assistant's reply
    to it; when the turn holds nothing but the request, the user's previous turn (what
    "this" points to) is withheld too. Turn numbers, roles and times are kept, so the
    session still reads in order and nothing else moves.
    """
    out = [dict(m) for m in messages]
    for i, message in enumerate(out):
        content = str(message.get("content", ""))
        if message.get("role") != "user" or message.get("trust", "trusted") != "trusted" or not off_the_record(content):
            continue
        message["content"] = WITHHELD
        if _points_back(content):
            earlier = next((j for j in range(i - 1, -1, -1) if out[j].get("role") == "user"), None)
            if earlier is not None:
                out[earlier]["content"] = WITHHELD
        if i + 1 < len(out) and out[i + 1].get("role") == "assistant":
            out[i + 1]["content"] = WITHHELD
    return out
