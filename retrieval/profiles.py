"""Entity profiles at retrieval time: a message that asks about an entity as a whole
("What do we know about Caroline?", "Tell me about the WRX", "Who is Priya?") is answered
from that entity's profile (``memory_assets/lib/summaries/entity_pages.py``) in tier 1.

Profiles are rows of the ``summaries`` table whose ``category`` is ``entity:<entity id>``;
the entity is found by name (or alias) in the published graph (``retrieval.agent.dual_search``),
within the reader's namespace.
"""

from __future__ import annotations

import re

PROFILE_PREFIX = "entity:"

_ABOUT = re.compile(
    r"(?:what (?:do|did|does) (?:you|we|i|they) (?:know|remember|have) (?:about|on)|"
    r"what(?:'s| is) (?:known|stored|remembered) about|"
    r"tell me (?:everything |all |more )?(?:you know )?about|"
    r"(?:remind me|fill me in) (?:about|on)|"
    r"what about|who(?:'s| is| was)|everything (?:you know )?about|"
    r"(?:give me |show me )?(?:a |the )?(?:profile|summary|overview) (?:of|for|on))"
    r"\s+(?P<name>[^?.!,;]{1,60}?)\s*(?:'s profile)?\s*(?:[?.!]|$)",
    re.IGNORECASE)


def asked_about(message: str) -> str | None:
    """The entity a message asks about as a whole, or None: "What do we know about
    Caroline?" → "Caroline"."""
    questions = [s for s in re.split(r"(?<=[.!?])\s+", message.strip()) if s]
    for sentence in reversed(questions):
        if m := _ABOUT.search(sentence):
            name = m.group("name").strip()
            name = re.sub(r"^(?:the|my|our|a|an)\s+", "", name, flags=re.IGNORECASE)
            return name or None
    return None


def profile_category(entity_id: str) -> str:
    return f"{PROFILE_PREFIX}{entity_id}"
