"""The one home of credential patterns: find them, redact them.

Security is a feature: credentials never reach a derived store. The write gate
refuses any fact that contains one, and a rejection keeps only a redacted preview
(``REJECTION_SCHEMA`` in ``retrieval.schema``). The agent side uses the same patterns, so this module imports nothing from
the pipeline (no dagster, no ``memory_assets``).

Two families of rule:
- *shaped* keys whose prefix is the signal (``sk-``, ``AKIA``, ``ghp_``, PEM blocks):
  flagged wherever they appear;
- *context* secrets whose value only means something after a name
  (``password: …``, ``api_key=…``, ``Authorization: Bearer …``, ``user:pass@host``):
  only the value is redacted, so ``postgres://app:[REDACTED:connection_string]@db:5432``
  still says where the database lives.

Bare hashes, git SHAs and UUIDs are not credentials on their own; they are flagged
only in an assignment to a secret-sounding name (``token=<sha>``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any
from dataclasses import dataclass


@dataclass(frozen=True)
class CredentialMatch:
    """One credential in a text: its kind and the ``text[start:end]`` span to hide."""

    kind: str
    start: int
    end: int


# A value that names a secret without being one: env-var references, templates,
# masks, and text this module already redacted (so redaction is idempotent).
_PLACEHOLDER = re.compile(
    r"""^(?:
        \[REDACTED
      | \$\{?\w+\}?$
      | <[^>]*>$
      | \{\{?[^}]*\}\}?$
      | %\(?\w*\)?s$
      | (?:\*+|•+|x{3,}|\.{3,}|…)$
      | (?:os\.environ|os\.getenv|getenv|process\.env|env\(|settings\.|config\.)
      | your[_-]
      | (?:none|null|nil|empty|n/a|unset|redacted|hidden|required)$
    )""",
    re.IGNORECASE | re.VERBOSE,
)

# A context value: quoted (any characters) or bare, not ending in sentence punctuation.
_VALUE = r"""(?P<secret>"[^"\n]{1,200}"|'[^'\n]{1,200}'|[^\s'"]*[^\s'".,;:)\]}>])"""


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _is_real(value: str) -> bool:
    return not _PLACEHOLDER.match(_unquote(value))


def _looks_random(value: str) -> bool:
    """Machine-made, not a word: a digit, or mixed case (``token=authenticationrequired`` is prose)."""
    return any(c.isdigit() for c in value) or (
        any(c.isupper() for c in value) and any(c.islower() for c in value)
    )


def _looks_like_password(value: str) -> bool:
    """Not an English word: a digit, a symbol, or a capital after the first letter."""
    return (
        any(c.isdigit() for c in value)
        or any(not c.isalnum() for c in value)
        or any(c.isupper() for c in value[1:])
    )


def _span(match: re.Match[str]) -> tuple[int, int]:
    """The part to hide: the value for a context rule, the whole match otherwise."""
    if "secret" in match.re.groupindex:
        return match.span("secret")
    return match.span()


def _secret(match: re.Match[str]) -> str:
    start, end = _span(match)
    return match.string[start:end]


def _any(match: re.Match[str]) -> bool:
    return True


def _random_real(match: re.Match[str]) -> bool:
    value = _secret(match)
    return _is_real(value) and _looks_random(value)


def _real(match: re.Match[str]) -> bool:
    return _is_real(_secret(match))


def _env_value(match: re.Match[str]) -> bool:
    """A .env value: anything but a placeholder, a reference or a bare type/flag word."""
    value = _unquote(_secret(match))
    return _is_real(value) and value.lower() not in ("true", "false", "0", "1", "yes", "no", "str", "string", "int")


def _password(match: re.Match[str]) -> bool:
    """``password=x`` is always a value; ``password: x`` and ``password is x`` must look like one.

    "The password is correct" and "Password: reset it in settings" are prose;
    "password: swordfish" alone on its line, or any quoted value, is a password.
    """
    value = _secret(match)
    plain = _unquote(value)
    if not _is_real(value) or len(plain) < 3 or plain.startswith(("/", "~")):
        return False
    separator = match.group("sep").strip().lower()
    if value != plain:
        return True
    if separator in ("=", ":=", "=>"):
        return True
    if separator == ":":
        ends_line = re.match(r"[ \t]*(?:[,;]|\.?[ \t]*(?:\n|$))", match.string[match.end():])
        return _looks_like_password(plain) or ends_line is not None
    return len(plain) >= 4 and _looks_like_password(plain)


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    accept: Callable[[re.Match[str]], bool] = _any


_PASSWORD_WORD = r"(?:(?<![/.])(?:password|passwd|passphrase|passcode)|(?<![A-Za-z0-9/.$])pwd)"

# Order is priority: when two rules claim the same span, the earlier (more specific)
# kind names it. Overlapping spans are merged so no part of a secret survives.
_RULES: tuple[_Rule, ...] = (
    # PEM blocks; a block cut off before its END line is still hidden to the end.
    _Rule("private_key", re.compile(
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)")),
    _Rule("anthropic_key", re.compile(r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}")),
    # sk-… and sk-proj-…; the digit/mixed-case test keeps "sk-some-long-slug" out.
    _Rule("openai_key", re.compile(
        r"(?<![A-Za-z0-9_-])sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
        _random_real),
    _Rule("stripe_key", re.compile(r"(?<![A-Za-z0-9_])(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}")),
    _Rule("github_token", re.compile(
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})")),
    # xoxo- is a sign-off, not a token: only a, b, p, r, s, and a digit somewhere.
    _Rule("slack_token", re.compile(r"(?<![A-Za-z0-9])xox[abprs]-[A-Za-z0-9-]{10,}"), _random_real),
    _Rule("slack_webhook", re.compile(
        r"https://hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+")),
    _Rule("google_api_key", re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])")),
    _Rule("aws_access_key_id", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])")),
    _Rule("aws_secret_access_key", re.compile(
        r"(?i:aws_secret_access_key|aws_secret_key|secret_access_key)[\"']?\s*(?:[:=]|\bis\b)\s*[\"']?"
        r"(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"), _real),
    # A signed JWT: header and payload are base64url JSON, so the header starts eyJ.
    _Rule("jwt", re.compile(
        r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}")),
    # scheme://user:password@host for any scheme (postgres, mysql, mongodb+srv, redis,
    # amqp, https, …); the user name and host stay readable.
    _Rule("connection_string", re.compile(
        r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/@'\"\[\]]*:(?P<secret>[^\s@/'\"]+)@[\w.\[\]-]"),
        _real),
    _Rule("bearer_token", re.compile(
        r"(?i:authorization)[\"']?\s*[:=]\s*[\"']?(?i:bearer|token)\s+(?P<secret>[A-Za-z0-9._~+/-]{8,}=*)"),
        _real),
    # A bare "Bearer x" needs a long, machine-made x: "the bearer of bad news" is prose.
    _Rule("bearer_token", re.compile(
        r"(?<![A-Za-z])(?i:bearer)\s+(?P<secret>[A-Za-z0-9._~+/-]{20,}=*)"), _random_real),
    _Rule("basic_auth", re.compile(
        r"(?i:authorization)[\"']?\s*[:=]\s*[\"']?(?i:basic)\s+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})"),
        _real),
    # "password: x", "password=x", "my password is x", "the password for the wifi is x".
    _Rule("password", re.compile(
        _PASSWORD_WORD + r"[\"']?"
        r"(?:\s+(?:for|to|of|on)(?:\s+[\w.@-]+){1,3}?)?"
        r"(?P<sep>\s*(?:=>|:=|=|:)\s*"
        r"|\s+(?:(?:was\s+|got\s+|is\s+)?(?:changed|set|reset|updated)\s+to|is|was)(?:\s+now|\s+still)?:?\s+)"
        + _VALUE, re.IGNORECASE), _password),
    # "the garage door code is 4471", "bank card PIN is 8830", "alarm code: 1234": a short
    # numeric secret is still a secret.
    _Rule("pin", re.compile(
        r"(?i:\b(?:pin|passcode|pass\s+code|door\s+code|gate\s+code|alarm\s+code|lock\s+code|entry\s+code"
        r"|access\s+code|safe\s+code|security\s+code|cvv|cvc)(?:\s+number)?)"
        r"\s*(?:is|was|=|:)?\s*(?:now\s+)?(?P<secret>\d{3,8})(?!\d)")),
    # Provider tokens by their documented prefixes.
    _Rule("gitlab_token", re.compile(
        r"(?<![A-Za-z0-9_-])gl(?:pat|dt|rt|ptt|cbt|imt|soat|ffct|oas|agent)-[A-Za-z0-9_-]{20,}")),
    _Rule("sendgrid_key", re.compile(r"(?<![A-Za-z0-9_-])SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,64}")),
    _Rule("twilio_key", re.compile(r"(?<![A-Za-z0-9])SK[0-9a-f]{32}(?![0-9A-Za-z])")),
    _Rule("npm_token", re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])")),
    _Rule("pypi_token", re.compile(r"(?<![A-Za-z0-9_-])pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{30,}")),
    _Rule("huggingface_token", re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9])"), _random_real),
    _Rule("mailgun_key", re.compile(r"(?<![A-Za-z0-9_-])key-[0-9a-z]{32}(?![0-9A-Za-z])"), _random_real),
    _Rule("datadog_key", re.compile(
        r"(?i:\b(?:dd|datadog)[_ -]?(?:api|app(?:lication)?)?[_ -]?key)[\"']?\s*(?:[:=]|\bis\b)\s*[\"']?"
        r"(?P<secret>[0-9a-f]{32}(?:[0-9a-f]{8})?)(?![0-9a-fA-F])")),
    # A bot token is three base64url parts; said next to "discord" or "bot" ("Authorization: Bot …").
    _Rule("discord_token", re.compile(
        r"(?i:discord|\bbot\b)[^\n]{0,60}?(?<![A-Za-z0-9_-])"
        r"(?P<secret>[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40})(?![A-Za-z0-9_-])"),
        _random_real),
    _Rule("discord_webhook", re.compile(
        r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{20,}")),
    _Rule("telegram_token", re.compile(r"(?<![0-9])\d{8,10}:AA[A-Za-z0-9_-]{32,34}(?![A-Za-z0-9_-])")),
    _Rule("shopify_token", re.compile(r"(?<![A-Za-z0-9_])shp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}(?![A-Za-z0-9])")),
    _Rule("digitalocean_token", re.compile(r"(?<![A-Za-z0-9_])do[por]_v1_[a-f0-9]{64}(?![a-f0-9])")),
    _Rule("linear_key", re.compile(r"(?<![A-Za-z0-9_])lin_(?:api|oauth)_[A-Za-z0-9]{32,}")),
    _Rule("doppler_token", re.compile(r"(?<![A-Za-z0-9_])dp\.(?:st|ct|sa|scim|audit|pt)\.[A-Za-z0-9_.-]{40,}")),
    _Rule("postman_key", re.compile(r"(?<![A-Za-z0-9_])PMAK-[a-f0-9]{24}-[a-f0-9]{34}")),
    # Azure: a storage connection string's AccountKey / SharedAccessKey, and a SAS URL's sig.
    _Rule("azure_key", re.compile(
        r"(?i:AccountKey|SharedAccessKey|SharedAccessSignature)\s*=\s*(?P<secret>[A-Za-z0-9+/]{20,}={0,2})")),
    _Rule("azure_sas", re.compile(r"[?&](?i:sig)=(?P<secret>[A-Za-z0-9%+/=]{20,})")),
    # GCP service-account JSON: its private key is a PEM block (above); its key id is a secret too.
    _Rule("gcp_service_account", re.compile(r'"private_key_id"\s*:\s*"(?P<secret>[0-9a-f]{40})"')),
    # An AWS secret said in prose ("the secret is wJalr…"): 40 base64 characters, mixed
    # case, within a few words after a secret-sounding word.
    _Rule("aws_secret_access_key", re.compile(
        r"(?i:\b(?:aws|secret|secret\s+key|access\s+key))\b(?:\W{1,3}\w{1,12}){0,3}?\W{1,3}"
        r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"), _random_real),
    # api_key=…, GITHUB_TOKEN: …, client_secret = "…" with a long machine-made value.
    _Rule("generic_secret", re.compile(
        r"(?<![A-Za-z0-9])(?:api[_-]?key|apikey|(?:access|auth|refresh|id|session|bearer)[_-]?token"
        r"|token|secret|secret[_-]?key|client[_-]?secret|access[_-]?key|private[_-]?key|signing[_-]?key)"
        r"[\"']?\s*(?:=>|:=|=|:)\s*[\"']?(?P<secret>[A-Za-z0-9_./+=~-]{16,})", re.IGNORECASE),
        _random_real),
    # .env lines: NAME=value under a secret-sounding NAME (DB_PASS, MAILGUN_KEY, API_TOKEN,
    # JWT_SECRET, SENTRY_DSN, DATABASE_URL …): the value is hidden however short or plain.
    _Rule("env_secret", re.compile(
        r"(?:^|(?<=[\s;\"'`]))"
        r"(?![A-Za-z0-9_]*PUBLIC)"
        r"[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*"
        r"(?:_(?:PASS|PASSWORD|PASSWD|PWD|PASSPHRASE|SECRET|TOKEN|KEY|APIKEY|DSN|CREDENTIALS?|AUTH)"
        r"|(?:PASSWORD|SECRET|TOKEN|APIKEY)|DATABASE_URL|_URL_WITH_PASSWORD)(?:_[A-Za-z0-9]+)*"
        r"\s*=\s*(?P<secret>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|[^\s#'\"]{2,})", re.IGNORECASE), _env_value),
)

CREDENTIAL_KINDS: tuple[str, ...] = tuple(dict.fromkeys(rule.kind for rule in _RULES))


# Literal text every match of a rule of that kind contains, lower-cased: an ASCII text
# whose lower-cased form holds none of them cannot match any rule (non-ASCII text always
# counts: case-insensitive patterns match the long s and the Kelvin sign), so bulk scans
# (``find_credentials`` itself, the quality checks' bulk scan) run the patterns only on the rest.
# tests/test_credentials.py checks every positive example against its kind's anchors.
ANCHORS: dict[str, tuple[str, ...]] = {
    "private_key": ("-----begin",),
    "anthropic_key": ("sk-ant-",),
    "openai_key": ("sk-",),
    "stripe_key": ("_live_", "_test_"),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "slack_token": ("xox",),
    "slack_webhook": ("hooks.slack.com/services/",),
    "google_api_key": ("aiza",),
    "aws_access_key_id": ("akia", "asia"),
    "aws_secret_access_key": ("secret_access_key", "aws_secret_key", "aws", "secret", "access"),
    "jwt": ("eyj",),
    "connection_string": ("://",),
    "bearer_token": ("authorization", "bearer"),
    "basic_auth": ("authorization",),
    "password": ("password", "passwd", "passphrase", "passcode", "pwd"),
    "pin": ("pin", "passcode", "pass", "code", "cvv", "cvc"),
    "generic_secret": ("key", "token", "secret"),
    "gitlab_token": ("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glimt-", "glsoat-", "glffct-", "gloas-",
                     "glagent-"),
    "sendgrid_key": ("sg.",),
    "twilio_key": ("sk",),
    "npm_token": ("npm_",),
    "pypi_token": ("pypi-ageichlwas5vcmc",),
    "huggingface_token": ("hf_",),
    "mailgun_key": ("key-",),
    "datadog_key": ("dd", "datadog"),
    "discord_token": ("discord", "bot"),
    "discord_webhook": ("/api/webhooks/",),
    "telegram_token": (":aa",),
    "shopify_token": ("shpat_", "shpss_", "shpca_", "shppa_"),
    "digitalocean_token": ("dop_v1_", "doo_v1_", "dor_v1_"),
    "linear_key": ("lin_api_", "lin_oauth_"),
    "doppler_token": ("dp.",),
    "postman_key": ("pmak-",),
    "azure_key": ("accountkey", "sharedaccesskey", "sharedaccesssignature"),
    "azure_sas": ("sig=",),
    "gcp_service_account": ("private_key_id",),
    "env_secret": ("pass", "pwd", "secret", "token", "key", "dsn", "credential", "auth", "database_url",
                   "_url_with_password"),
}
ALL_ANCHORS: tuple[str, ...] = tuple(sorted({a for anchors in ANCHORS.values() for a in anchors}))


def might_hold_credential(text: str) -> bool:
    """False only when ``text`` cannot hold a credential or personal data (ASCII, none of
    ``ALL_ANCHORS``, and nothing ``PII_PRECHECK`` finds)."""
    if not text.isascii():
        return True
    low = text.lower()
    return any(anchor in low for anchor in ALL_ANCHORS) or bool(_PII_PRECHECK.search(text))


PII_KINDS: tuple[str, ...] = ("payment_card", "national_id", "email", "phone")
DEFAULT_PII: tuple[str, ...] = ("payment_card", "national_id")

# Card networks by their leading digits (Visa 4, Mastercard 51–55 and 2221–2720, Amex
# 34/37, Discover 6011/65/644–649, JCB 35, Diners 30/36/38, UnionPay 62): with the Luhn
# check, a 16-digit order number is taken for a card about once in a hundred, not once in ten.
_CARD_PREFIX = re.compile(r"^(?:4|5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)|3[47]|6(?:011|5|4[4-9]|2)|35|3[068])")


def _luhn(number: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(number)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def _card(match: re.Match[str]) -> bool:
    number = re.sub(r"[ -]", "", match.group(0))
    return 13 <= len(number) <= 19 and bool(_CARD_PREFIX.match(number)) and _luhn(number)


def _phone(match: re.Match[str]) -> bool:
    return 10 <= sum(c.isdigit() for c in match.group(0)) <= 15


# Personal data, redacted as configured (``[privacy] redact``; ``pii_from_config``).
_PII_RULES: tuple[_Rule, ...] = (
    # 13–19 digits, in groups split by single spaces or dashes: Luhn-checked, known network.
    _Rule("payment_card", re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])"), _card),
    # US SSN (not area 000, 666 or 9xx, group 00, serial 0000) and UK National Insurance numbers.
    _Rule("national_id", re.compile(
        r"(?<![\d-])(?!000|666|9\d\d)\d{3}([- ])(?!00)\d{2}\1(?!0000)\d{4}(?![\d-])"
        r"|\b(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b")),
    _Rule("email", re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")),
    _Rule("phone", re.compile(r"(?<![\w+])\+?\(?\d[\d ().-]{8,18}\d(?![\d-])"), _phone),
)
# What a text must hold for a PII rule to match: six digits in a row (with single
# separators), or an "@"; the bulk scans use it beside ``ALL_ANCHORS``.
PII_PRECHECK = r"\d\d[ -]?\d\d[ -]?\d\d|@"
_PII_PRECHECK = re.compile(PII_PRECHECK)


def pii_from_config(config: Any) -> tuple[str, ...]:
    """The PII kinds ``[privacy] redact`` names (credentials are always redacted)."""
    kinds = tuple(config.privacy.get("redact", DEFAULT_PII))
    unknown = [k for k in kinds if k not in PII_KINDS]
    if unknown:
        raise ValueError(f"[privacy] redact: unknown kind(s) {', '.join(map(repr, unknown))}; "
                         f"known: {', '.join(PII_KINDS)}")
    return kinds


def find_credentials(text: str, *, pii: Iterable[str] = DEFAULT_PII) -> list[CredentialMatch]:
    """Every credential in ``text``, in order, with overlapping spans merged.

    Args:
        text: any text: a transcript turn, a candidate fact, a log line.
        pii: the personal-data kinds to find too (``PII_KINDS``; default cards and national ids).
    """
    if not might_hold_credential(text):
        return []  # no rule's anchor in it: the patterns cannot match
    wanted = set(pii)
    rules = _RULES + tuple(r for r in _PII_RULES if r.kind in wanted)
    claims: list[tuple[int, int, int, str]] = []
    for priority, rule in enumerate(rules):
        for match in rule.pattern.finditer(text):
            if rule.accept(match):
                start, end = _span(match)
                claims.append((start, -end, priority, rule.kind))
    found: list[CredentialMatch] = []
    for start, neg_end, _, kind in sorted(claims):
        end = -neg_end
        if found and start < found[-1].end:
            if end > found[-1].end:
                found[-1] = CredentialMatch(found[-1].kind, found[-1].start, end)
            continue
        found.append(CredentialMatch(kind, start, end))
    return found


def redact(text: str, *, pii: Iterable[str] = DEFAULT_PII) -> str:
    """``text`` with each credential replaced by ``[REDACTED:<kind>]``."""
    out: list[str] = []
    pos = 0
    for match in find_credentials(text, pii=pii):
        out.append(text[pos:match.start])
        out.append(f"[REDACTED:{match.kind}]")
        pos = match.end
    out.append(text[pos:])
    return "".join(out)


def has_credential(text: str, *, pii: Iterable[str] = DEFAULT_PII) -> bool:
    """Whether ``text`` holds any credential."""
    return bool(find_credentials(text, pii=pii))
