"""Secrets in the words people use, and in disguise: the second layer of
``retrieval.credentials``.

- *Everyday phrasings* (``PHRASE_RULES``): "pw: X", "my pass is X", "My Gmail password's
  X", "Mein Passwort ist X", "admin / X", a token named by its service without a colon
  ("Datadog API key <32 hex>"), a secret within a few words after a secret-sounding word
  when its Shannon entropy is high (detect-secrets' entropy plugins).
- *Numbers checked, not guessed*: an IBAN (python-stdnum's checksum), a phone number
  (libphonenumber's matcher, which skips dates and times), a Discord bot token (its first
  part decodes to a user id).
- *Disguises* (``unveil``, ``encoded``): text is scanned as NFKC with zero-width
  characters removed (full-width ``ｇｈｐ＿…`` reads as ``ghp_…``), and a base64 or
  percent-encoded run is decoded and scanned again; a span found is mapped back to the
  characters as written, so the disguise is redacted whole.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from urllib.parse import unquote_to_bytes

from retrieval.secret_values import VALUE, is_path, looks_like_password, password, random_real, secret

# Characters that render as nothing: zero-width space, joiners, word joiner, BOM, soft hyphen.
ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff\u00ad\u180e")

# "pw", "pass", "password's", and the word in the languages users write in.
_WORD = (r"(?:pw|pwd|pass|passwd|password|passwort|kennwort|mot\s+de\s+passe|contrase(?:ñ|n)a|senha"
         r"|wachtwoord|l(?:ö|o)senord|salasana|has(?:ł|l)o|parola|пароль)")
_SAYS = (r"(?P<sep>\s*(?:=|:)\s*|\s+(?:is|was|ist|war|est|es|é|er|on|är|jest|è)(?:\s+now|\s+still|\s+jetzt)?:?\s+"
         r"|(?:'|’)s\s+)")
# An account and its password written as a pair: "admin / hunter2", "root/toor".
_ACCOUNTS = r"(?:admin|administrator|root|user|username|login|guest|sa|postgres|pi|ubuntu|ec2-user)"


def _pair(match: re.Match[str]) -> bool:
    """The value of ``admin / X`` is a password: not a word-pair ("user / group")."""
    value = secret(match)
    return len(value) >= 4 and (looks_like_password(value) or value.lower() == match.group("account").lower())


def _everyday_password(match: re.Match[str]) -> bool:
    """As ``password``, and "password's X" reads like "password is X"."""
    return password(match)


def _discord(match: re.Match[str]) -> bool:
    """A bot token's first part is its user id in base64: it decodes to 17–20 digits."""
    head = match.group("secret").split(".", 1)[0]
    try:
        decoded = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return decoded.isdigit() and 17 <= len(decoded) <= 20 and random_real(match)


def _iban(match: re.Match[str]) -> bool:
    from stdnum import iban

    return iban.is_valid(match.group(0))


def _entropy(match: re.Match[str]) -> bool:
    """A long token after a secret word, with the entropy of a machine-made secret: letters
    and digits, not bare hex (a git SHA or a hash is named by the rules that want a name
    before it), not a path."""
    value = secret(match)
    return (random_real(match) and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
            and not re.fullmatch(r"[0-9a-fA-F]+", value) and not is_path(value)
            and _shannon(value) >= 3.7)


@lru_cache(maxsize=1)
def _entropy_plugin():
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

    return Base64HighEntropyString(limit=4.5)


def _shannon(value: str) -> float:
    return float(_entropy_plugin().calculate_shannon_entropy(value))


# (kind, pattern, accept, anchors): each runs only on a text holding one of its anchors.
PHRASE_RULES: tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], bool], tuple[str, ...]], ...] = (
    ("password", re.compile(r"(?<![\w/.$-])" + _WORD + _SAYS + VALUE, re.IGNORECASE), _everyday_password,
     ("pw", "pass", "wort", "mot de", "contrase", "senha", "wachtwoord", "senord", "salasana", "hasło",
      "haslo", "parola", "пароль")),
    ("password", re.compile(r"(?<![\w/.-])(?P<account>" + _ACCOUNTS + r")[ \t]*/[ \t]*(?P<secret>[^\s/'\",;]{4,64})"
                            r"(?![^\s,;.])", re.IGNORECASE), _pair,
     tuple(f"{a}{s}/" for a in ("admin", "root", "user", "login", "guest", "sa", "postgres", "pi", "ubuntu")
           for s in ("", " "))),
    # A lower-case (or mixed-case) AWS key id: the upper-case one is a shaped key already.
    ("aws_access_key_id", re.compile(r"(?<![A-Za-z0-9])(?i:akia|asia)[A-Za-z0-9]{16}(?![A-Za-z0-9])"),
     lambda m: any(c.isdigit() for c in m.group(0)), ("akia", "asia")),
    # Keyword and entropy: a long token within three words after a secret-sounding word.
    ("generic_secret", re.compile(
        r"(?i:\b(?:api[ _-]?key|key|token|secret|credential|credentials|password|passphrase)s?\b)"
        r"(?:\W{1,3}\w{1,12}){0,3}?\W{1,3}(?P<secret>[A-Za-z0-9_+/=-]{20,})(?![A-Za-z0-9_+/=-])"),
     _entropy, ("key", "token", "secret", "credential", "password", "passphrase")),
)

# A Discord bot token named by nothing: its first part is base64 of digits, so it starts
# with M, N or O (``_discord`` decodes it).
_DISCORD = re.compile(r"(?<![A-Za-z0-9_-])(?P<secret>[MNO][A-Za-z0-9_-]{22,27}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,40})"
                      r"(?![A-Za-z0-9_-])")


def discord_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _DISCORD.finditer(text) if _discord(m)]


# Finders with no literal anchor, run on every text (a regex each, no Python per character).
FINDERS: tuple[tuple[str, Callable[[str], list[tuple[int, int]]]], ...] = (("discord_token", discord_spans),)

# Bank accounts: an IBAN, validated by its checksum (python-stdnum).
BANK_RULE = ("bank_account", re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?:[ ]?[A-Z0-9]{4}){2,7}(?:[ ]?[A-Z0-9]{1,4})?"
                                        r"(?![A-Za-z0-9])"), _iban)
BANK_PRECHECK = r"[A-Z]{2}\d{2}[ ]?[A-Z0-9]{4}"


def phone_spans(text: str, region: str = "US") -> list[tuple[int, int]]:
    """Phone numbers libphonenumber finds in ``text`` (valid for ``region``, or any with a
    ``+`` country code); dates, times and other number runs are not taken for one."""
    import phonenumbers

    return [(m.start, m.end) for m in phonenumbers.PhoneNumberMatcher(text, region,
                                                                       leniency=phonenumbers.Leniency.VALID)]


def unveil(text: str) -> tuple[str, list[int]] | None:
    """``text`` as NFKC with zero-width characters removed, and where each of its
    characters came from (one more entry for the end); None when that changes nothing."""
    if text.isascii():
        return None
    out: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        if ch in ZERO_WIDTH:
            continue
        folded = unicodedata.normalize("NFKC", ch) if not ch.isascii() else ch
        out.append(folded)
        origin.extend([i] * len(folded))
    clean = "".join(out)
    if clean == text:
        return None
    origin.append(len(text))
    return clean, origin


# A run that may be base64 (standard or URL-safe) or percent-encoding.
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{24,}={0,2}(?![A-Za-z0-9+/=_-])")
# A URL-safe run holding a percent escape: runs are found whole (each starts where the
# last ended, so the scan is linear), then kept when one holds an escape.
_URL_RUN = re.compile(r"[A-Za-z0-9._~%-]+")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def encoded(text: str, found: Callable[[str], bool]) -> list[tuple[int, int]]:
    """Spans of ``text`` that decode (base64, percent-encoding) to a text ``found`` says
    holds a secret: the encoded run is hidden whole."""
    spans = []
    for match in _BASE64.finditer(text):
        run = match.group(0)
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                decoded = decode(run + "=" * (-len(run.rstrip("=")) % 4)).decode("utf-8")
            except (binascii.Error, UnicodeDecodeError, ValueError):
                continue
            if decoded.isprintable() and found(decoded):
                spans.append(match.span())
                break
    if "%" in text:
        for match in _URL_RUN.finditer(text):
            if not _ESCAPE.search(match.group(0)):
                continue
            try:
                decoded = unquote_to_bytes(match.group(0)).decode("utf-8")
            except UnicodeDecodeError:
                continue
            if found(decoded):
                spans.append(match.span())
    return spans
