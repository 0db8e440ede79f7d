"""The one home of credential and personal-data patterns: find them, redact them.

Security is a feature: credentials never reach a derived store. The write gate
refuses any fact that contains one, and a rejection keeps only a redacted preview
(``REJECTION_SCHEMA`` in ``retrieval.schema``). The agent side uses the same patterns, so this module imports nothing from
the pipeline (no dagster, no ``memory_assets``).

Three families of rule:
- *shaped* keys whose prefix is the signal (``sk-``, ``AKIA``, ``ghp_``, ``glpat-``, PEM
  blocks): flagged wherever they appear;
- *context* secrets whose value only means something after a name
  (``password: …``, ``api_key=…``, ``DB_PASS=…``, ``Authorization: Bearer …``,
  ``user:pass@host``): only the value is redacted, so
  ``postgres://app:[REDACTED:connection_string]@db:5432`` still says where the database lives;
- *personal data* (``PII_KINDS``): payment card numbers, national id numbers, bank
  accounts (IBAN), e-mail addresses and phone numbers, as ``[privacy] redact`` names them;
- *everyday words and disguises* (``retrieval.secret_phrases``): "pw: X", "Mein Passwort
  ist X", "admin / X", a key within a few words of its name when its entropy is high; and
  text scanned as NFKC without zero-width characters, base64 and percent-encoded runs
  decoded and scanned again.

Bare hashes, git SHAs and UUIDs are not credentials on their own; they are flagged
only in an assignment to a secret-sounding name (``token=<sha>``). Neither are code
identifiers: ``api_key = get_api_key()`` assigns a call, not a secret.

Most text holds nothing: a rule runs only on a text holding one of its kind's
``ANCHORS`` (personal-data rules: one its ``PII_PRECHECKS`` finds), so plain prose costs
a pass of substring tests and no regex.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any
from dataclasses import dataclass

from retrieval.secret_phrases import BANK_PRECHECK, BANK_RULE, FINDERS, PHRASE_RULES, encoded, phone_spans, unveil
from retrieval.secret_values import (
    VALUE as _VALUE,
    accept_any as _any,
    aws_secret as _aws_secret,
    connection_password as _connection_password,
    env_value as _env_value,
    high_entropy as _high_entropy,
    password as _password,
    random_real as _random_real,
    real as _real,
    span as _span,
)


@dataclass(frozen=True)
class CredentialMatch:
    """One credential in a text: its kind and the ``text[start:end]`` span to hide."""

    kind: str
    start: int
    end: int


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    accept: Callable[[re.Match[str]], bool] = _any


_PASSWORD_WORD = r"(?:(?<![/.])(?:password|passwd|passphrase|passcode)|(?<![A-Za-z0-9/.$])pwd)"
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"

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
    # OAuth client secrets (GOCSPX-, since 2021) and access tokens (ya29.).
    _Rule("google_oauth", re.compile(
        r"(?<![A-Za-z0-9_-])(?:GOCSPX-[A-Za-z0-9_-]{28}|ya29\.[A-Za-z0-9_-]{30,})"), _random_real),
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
        _connection_password),
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
    # API key SIDs are SK + 32 hex; an auth token is bare 32 hex, so it needs the name.
    # (An AC… account SID is an id, not a secret.)
    _Rule("twilio_key", re.compile(r"(?<![A-Za-z0-9])SK[0-9a-f]{32}(?![0-9A-Za-z])")),
    _Rule("twilio_key", re.compile(
        r"(?i:\btwilio\b)[^\n]{0,40}?(?i:\b(?:auth[ _-]?token|token|secret|key)\b)[\"']?[ \t]*(?:[:=]|\bis\b)?[ \t]*"
        r"[\"']?(?P<secret>[0-9a-f]{32})(?![0-9A-Za-z])"), _random_real),
    _Rule("npm_token", re.compile(r"(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])")),
    _Rule("pypi_token", re.compile(r"(?<![A-Za-z0-9_-])pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{30,}")),
    _Rule("huggingface_token", re.compile(r"(?<![A-Za-z0-9_])hf_[A-Za-z0-9]{30,}(?![A-Za-z0-9])"), _random_real),
    _Rule("mailgun_key", re.compile(r"(?<![A-Za-z0-9_-])key-[0-9a-z]{32}(?![0-9A-Za-z])"), _random_real),
    _Rule("datadog_key", re.compile(
        r"(?i:\b(?:dd|datadog)[_ -]?(?:api|app(?:lication)?)?[_ -]?key)[\"']?\s*(?:[:=]|\bis\b)?\s*[\"']?"
        r"(?P<secret>[0-9a-f]{32}(?:[0-9a-f]{8})?)(?![0-9a-fA-F])")),
    # A bot token is three base64url parts; said next to "discord" or "bot" ("Authorization: Bot …").
    _Rule("discord_token", re.compile(
        r"(?i:discord|\bbot[ :=])[^\n]{0,60}?(?<![A-Za-z0-9_-])"
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
    # Atlassian API tokens (ATATT…, about 190 characters).
    _Rule("atlassian_token", re.compile(r"(?<![A-Za-z0-9_-])ATATT[A-Za-z0-9_=-]{50,}"), _random_real),
    # Heroku: HRKU- keys; a legacy key is a UUID, a secret only next to a Heroku name.
    _Rule("heroku_key", re.compile(r"(?<![A-Za-z0-9_-])HRKU-[A-Za-z0-9_-]{20,}"), _random_real),
    _Rule("heroku_key", re.compile(
        r"(?i:\bheroku\b)[^\n]{0,30}?(?i:\b(?:api[ _-]?key|key|token)\b)[\"']?[ \t]*(?:[:=]|\bis\b)?[ \t]*[\"']?"
        r"(?P<secret>" + _UUID + r")(?![0-9A-Za-z-])")),
    # Square: production access tokens (EAAA + 60), legacy sq0atp- tokens, sq0csp- OAuth secrets.
    _Rule("square_token", re.compile(
        r"(?<![A-Za-z0-9_-])(?:EAAA[A-Za-z0-9_-]{60}|sq0atp-[A-Za-z0-9_-]{22}|sq0csp-[A-Za-z0-9_-]{43})"
        r"(?![A-Za-z0-9_-])"), _random_real),
    # HashiCorp Vault service, batch and recovery tokens (Vault 1.10+).
    _Rule("vault_token", re.compile(r"(?<![A-Za-z0-9_.-])hv[sbr]\.[A-Za-z0-9_-]{24,}"), _random_real),
    _Rule("databricks_token", re.compile(r"(?<![A-Za-z0-9_])dapi[0-9a-f]{32}(?:-\d)?(?![0-9A-Za-z])"),
          _random_real),
    # Grafana service-account (glsa_) and Grafana Cloud (glc_) tokens.
    _Rule("grafana_token", re.compile(
        r"(?<![A-Za-z0-9_])(?:glsa_[A-Za-z0-9]{32}_[0-9a-f]{8}|glc_[A-Za-z0-9+/]{32,}={0,2})"), _random_real),
    # Sentry organization (sntrys_) and user (sntryu_) auth tokens.
    _Rule("sentry_token", re.compile(
        r"(?<![A-Za-z0-9_])(?:sntrys_[A-Za-z0-9+/=_-]{40,}|sntryu_[0-9a-f]{64})"), _random_real),
    # Azure: a storage connection string's AccountKey / SharedAccessKey, and a SAS URL's sig.
    _Rule("azure_key", re.compile(
        r"(?i:AccountKey|SharedAccessKey|SharedAccessSignature)\s*=\s*(?P<secret>[A-Za-z0-9+/]{20,}={0,2})")),
    _Rule("azure_sas", re.compile(r"[?&](?i:sig)=(?P<secret>[A-Za-z0-9%+/=]{20,})")),
    # Entra ID (Azure AD) client secrets: three characters, a digit, "Q~", then 31–34.
    _Rule("azure_client_secret", re.compile(
        r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])")),
    # GCP service-account JSON: its private key is a PEM block (above); its key id is a secret too.
    _Rule("gcp_service_account", re.compile(r'"private_key_id"\s*:\s*"(?P<secret>[0-9a-f]{40})"')),
    # An AWS secret said in prose ("the secret wJalr…", "aws key is …"): 40 base64
    # characters within a few words after a secret-sounding word.
    _Rule("aws_secret_access_key", re.compile(
        r"(?i:\b(?:aws|secret|key|keys|creds|credentials?))\b(?:\W{1,3}\w{1,12}){0,3}?\W{1,3}"
        r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"), _aws_secret),
    # api_key=…, GITHUB_TOKEN: …, "the client secret is …" with a long machine-made value.
    _Rule("generic_secret", re.compile(
        r"(?<![A-Za-z0-9])(?:api[_ -]?key|apikey|(?:access|auth|refresh|id|session|bearer)[_ -]?token"
        r"|token|secret|secret[_ -]?key|client[_ -]?secret|access[_ -]?key|private[_ -]?key|signing[_ -]?key)"
        r"[\"']?(?:\s*(?:=>|:=|=|:)\s*|\s+(?:is|was)\s+(?:now\s+)?)[\"']?(?P<secret>[A-Za-z0-9_./+=~-]{16,})",
        re.IGNORECASE), _high_entropy),
    # .env lines and config: NAME=value, NAME: value, "name": "value" under a
    # secret-sounding NAME (DB_PASS, MAILGUN_KEY, API_TOKEN, JWT_SECRET, SENTRY_DSN,
    # DATABASE_URL …); the value is hidden however short or plain (``_env_value``).
    _Rule("env_secret", re.compile(
        r"(?<![\w$/-])(?=[A-Za-z0-9_]*?(?:pass|pwd|secret|token|key|dsn|credential|creds|database_url))"
        r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)[\"']?(?P<sep>[ \t]*(?:=(?![=>~])|:(?![:/=]))[ \t]*)"
        r"(?:(?P<open>[\"'])|)(?P<secret>(?(open)(?:(?!(?P=open))[^\n]){1,200}"
        r"|[^\s'\"#`](?:(?!;\w+=)[^\s'\"`])*[^\s'\",;:)\]}`]))"
        r"(?(open)(?P=open))",
        re.IGNORECASE), _env_value),
)

_RULES += tuple(_Rule(kind, pattern, accept) for kind, pattern, accept, _ in PHRASE_RULES)
# A base64 or percent-encoded run that decodes to a secret (``secret_phrases.encoded``).
ENCODED = "encoded_secret"
# What a text must hold to have such a run (Python's ``re`` and polars' Rust regex alike).
ENCODED_PRECHECK = r"[A-Za-z0-9+/_-]{24}|%[0-9A-Fa-f]{2}"
CREDENTIAL_KINDS: tuple[str, ...] = (*dict.fromkeys(rule.kind for rule in _RULES), ENCODED)


# Literal text every match of a rule of that kind contains, lower-cased: a rule runs only
# on an ASCII text whose lower-cased form holds one of its kind's anchors (non-ASCII text
# always runs every rule: case-insensitive patterns match the long s and the Kelvin
# sign). Bulk scans (the quality checks' credential scan) skip a text holding none of
# ``ALL_ANCHORS`` and nothing ``PII_PRECHECK`` finds.
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
    "google_oauth": ("gocspx-", "ya29."),
    "aws_access_key_id": ("akia", "asia"),
    "aws_secret_access_key": ("aws", "secret", "key", "creds", "credential"),
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
    # Twilio key SIDs are "SK" + hex: no longer literal, so "sk" (as gitleaks does).
    "twilio_key": ("sk", "twilio"),
    "npm_token": ("npm_",),
    "pypi_token": ("pypi-ageichlwas5vcmc",),
    "huggingface_token": ("hf_",),
    "mailgun_key": ("key-",),
    "datadog_key": ("key",),
    "discord_token": ("discord", "bot ", "bot:", "bot="),
    "discord_webhook": ("/api/webhooks/",),
    "telegram_token": (":aa",),
    "shopify_token": ("shpat_", "shpss_", "shpca_", "shppa_"),
    "digitalocean_token": ("dop_v1_", "doo_v1_", "dor_v1_"),
    "linear_key": ("lin_api_", "lin_oauth_"),
    "doppler_token": ("dp.",),
    "postman_key": ("pmak-",),
    "atlassian_token": ("atatt",),
    "heroku_key": ("hrku-", "heroku"),
    "square_token": ("eaaa", "sq0atp-", "sq0csp-"),
    "vault_token": ("hvs.", "hvb.", "hvr."),
    "databricks_token": ("dapi",),
    "grafana_token": ("glsa_", "glc_"),
    "sentry_token": ("sntrys_", "sntryu_"),
    "azure_key": ("accountkey", "sharedaccesskey", "sharedaccesssignature"),
    "azure_sas": ("sig=",),
    "azure_client_secret": ("q~",),
    "gcp_service_account": ("private_key_id",),
    "env_secret": ("pass", "pwd", "secret", "token", "key", "dsn", "credential", "creds", "database_url"),
}
for _kind, _, _, _anchors in PHRASE_RULES:
    ANCHORS[_kind] = tuple(dict.fromkeys((*ANCHORS.get(_kind, ()), *_anchors)))
ALL_ANCHORS: tuple[str, ...] = tuple(sorted({a for anchors in ANCHORS.values() for a in anchors}))
_RULE_ANCHORS = {kind: frozenset(anchors) for kind, anchors in ANCHORS.items()}


PII_KINDS: tuple[str, ...] = ("payment_card", "national_id", "bank_account", "email", "phone")
# The user's e-mail address and phone number are personal data too: redacted unless
# ``[privacy] redact`` leaves them out.
DEFAULT_PII: tuple[str, ...] = PII_KINDS

# Card numbers by network: leading digits and lengths (ISO/IEC 7812 issuer ranges). With
# the Luhn check, a 16-digit order number is taken for a card about once in a hundred.
_CARD_NUMBER = re.compile(r"""
    4(?:\d{12}|\d{15}|\d{18})                                           # Visa: 13, 16 or 19 digits
  | (?:5[1-5]\d\d|222[1-9]|22[3-9]\d|2[3-6]\d\d|27[01]\d|2720)\d{12}     # Mastercard: 16
  | 3[47]\d{13}                                                          # American Express: 15
  | 3(?:0[0-59]|[689]\d)\d{11,16}                                        # Diners Club: 14-19
  | 35(?:2[89]|[3-8]\d)\d{12,15}                                         # JCB: 16-19
  | (?:6011|64[4-9]\d|65\d\d)\d{12,15}                                   # Discover: 16-19
  | 62\d{14,17}                                                          # UnionPay: 16-19
""", re.VERBOSE)


def _email(match: re.Match[str]) -> bool:
    """Not a URL's user-info (``postgres://app:secret@db.internal``): the host stays readable."""
    before = match.string[:match.start()]
    return "://" not in before[before.rfind(" ") + 1:]


def _card(match: re.Match[str]) -> bool:
    from stdnum import luhn

    number = re.sub(r"[ -]", "", match.group(0))
    return bool(_CARD_NUMBER.fullmatch(number)) and luhn.is_valid(number)


# Not inside a word, a decimal (0.4111…) or a longer dash-joined number.
_NUMBER_START, _NUMBER_END = r"(?<![\w.,-])", r"(?![\w-]|[.,]\d)"

# Personal data, redacted as configured (``[privacy] redact``; ``pii_from_config``).
_PII_RULES: tuple[_Rule, ...] = (
    # Cards: 13–19 digits in a row, or in the groups cards are printed in, one rule per
    # grouping so that a CVV or expiry after the number ("4111 1111 1111 1111 12/27")
    # does not make the whole run fail the Luhn check.
    _Rule("payment_card", re.compile(_NUMBER_START + r"\d{13,19}" + _NUMBER_END), _card),
    _Rule("payment_card", re.compile(_NUMBER_START + r"\d{4}([ -])\d{4}\1\d{4}\1\d{4}" + _NUMBER_END), _card),
    _Rule("payment_card", re.compile(_NUMBER_START + r"\d{4}([ -])\d{4}\1\d{4}\1\d{4}\1\d{3}" + _NUMBER_END),
          _card),
    _Rule("payment_card", re.compile(_NUMBER_START + r"\d{4}([ -])\d{6}\1\d{4,5}" + _NUMBER_END), _card),
    # US SSN (not area 000, 666 or 9xx, group 00, serial 0000) and UK National Insurance numbers.
    _Rule("national_id", re.compile(
        _NUMBER_START + r"(?!000|666|9\d\d)\d{3}([- ])(?!00)\d{2}\1(?!0000)\d{4}" + _NUMBER_END
        + r"|\b(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b")),
    _Rule(BANK_RULE[0], BANK_RULE[1], BANK_RULE[2]),
    _Rule("email", re.compile(r"(?<![\w.%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"),
          _email),
    # Phone numbers: libphonenumber's matcher (``secret_phrases.phone_spans``), not a regex.
)
# What a text must hold for each personal-data rule to match (every match of the kind
# contains one); written for Python's ``re`` and the Rust ``regex`` crate (polars) alike.
PII_PRECHECKS: dict[str, str] = {
    "payment_card": r"\d{13}|\d{4}[ -]\d{4}[ -]\d{4}[ -]\d{4}|\d{4}[ -]\d{6}[ -]\d{4}",
    "national_id": r"\d{3}[ -]\d\d[ -]\d{4}|\d\d ?\d\d ?\d\d ?[A-D]",
    "bank_account": BANK_PRECHECK,
    "email": r"@",
    "phone": r"\d[\d ().-]{8,18}\d",
}
# The prechecks of ``DEFAULT_PII``: the bulk scans use it beside ``ALL_ANCHORS``.
PII_PRECHECK = "|".join(PII_PRECHECKS[kind] for kind in DEFAULT_PII)
_PII_PRECHECK_RE = {kind: re.compile(pattern) for kind, pattern in PII_PRECHECKS.items()}
# The fewest digits a match of each kind holds: counting them is cheaper than any regex,
# and most text has too few for a card (13), a national id (6) or a phone number (10).
_PII_MIN_DIGITS = {"payment_card": 13, "national_id": 6, "bank_account": 8, "email": 0, "phone": 10}

# Every rule with its priority (its place in this order).
_ALL_RULES: tuple[tuple[int, _Rule], ...] = tuple(enumerate(_RULES + _PII_RULES))


def _pii_kinds(pii: Iterable[str]) -> frozenset[str]:
    kinds = frozenset((pii,) if isinstance(pii, str) else pii)
    unknown = kinds.difference(PII_KINDS)
    if unknown:
        raise ValueError(f"unknown personal-data kind(s) {', '.join(map(repr, sorted(unknown)))}; "
                         f"known: {', '.join(PII_KINDS)}")
    return kinds


def _rules_for(text: str, pii: frozenset[str]) -> list[tuple[int, _Rule]]:
    """The rules that could match ``text``: those whose kind's anchor (or PII precheck) it holds."""
    if not text.isascii():
        return [(p, r) for p, r in _ALL_RULES if r.kind in pii or r.kind not in PII_KINDS]
    present = set(filter(text.lower().__contains__, ALL_ANCHORS))
    digits = sum(map(text.count, "0123456789")) if pii else 0
    prechecked = {kind for kind in pii
                  if digits >= _PII_MIN_DIGITS[kind] and _PII_PRECHECK_RE[kind].search(text)}
    if not present and not prechecked:
        return []
    return [(p, r) for p, r in _ALL_RULES
            if r.kind in prechecked or (r.kind in _RULE_ANCHORS and not _RULE_ANCHORS[r.kind].isdisjoint(present))]


def _phone_possible(text: str, pii: frozenset[str]) -> bool:
    return ("phone" in pii and sum(map(text.count, "0123456789")) >= _PII_MIN_DIGITS["phone"]
            and _PII_PRECHECK_RE["phone"].search(text) is not None)


def might_hold_credential(text: str, *, pii: Iterable[str] = DEFAULT_PII) -> bool:
    """False only when ``text`` cannot hold a credential or the ``pii`` kinds: it is ASCII,
    holds none of ``ALL_ANCHORS``, no ``PII_PRECHECKS`` pattern of those kinds finds
    anything, and no run of it could be an encoded secret."""
    kinds = _pii_kinds(pii)
    return (bool(_rules_for(text, kinds)) or _phone_possible(text, kinds) or bool(encoded(text, lambda _: True))
            or any(find(text) for _, find in FINDERS))


def pii_from_config(config: Any) -> tuple[str, ...]:
    """The PII kinds ``[privacy] redact`` names (credentials are always redacted); the
    config validated them against ``PII_KINDS`` when it loaded."""
    return tuple(config.privacy.redact)


def find_credentials(text: str, *, pii: Iterable[str] = DEFAULT_PII) -> list[CredentialMatch]:
    """Every credential in ``text``, in order, with overlapping spans merged.

    Args:
        text: any text: a transcript turn, a candidate fact, a log line.
        pii: the personal-data kinds to find too (``PII_KINDS``; default cards and national ids).

    Raises:
        ValueError: ``pii`` names a kind not in ``PII_KINDS``.
    """
    kinds = _pii_kinds(pii)
    claims = _claims(text, kinds)
    if (veiled := unveil(text)) is not None:
        # Scanned again as it reads (NFKC, no zero-width characters); spans mapped back.
        clean, origin = veiled
        claims += [(origin[start], -(origin[-neg_end - 1] + 1), priority, kind)
                   for start, neg_end, priority, kind in _claims(clean, kinds)]
    found: list[CredentialMatch] = []
    # At one start the more specific kind names the span (a token before "@github.com" is
    # a token, not an e-mail address); the span still takes in all that overlaps it.
    for start, _, neg_end, kind in sorted((s, p, e, k) for s, e, p, k in claims):
        end = -neg_end
        if found and start < found[-1].end:
            if end > found[-1].end:
                found[-1] = CredentialMatch(found[-1].kind, found[-1].start, end)
            continue
        found.append(CredentialMatch(kind, start, end))
    return found


_LAST = len(_ALL_RULES)  # priorities after every rule: phone numbers, then encoded runs


def _claims(text: str, kinds: frozenset[str]) -> list[tuple[int, int, int, str]]:
    """(start, -end, priority, kind) of every match in ``text``, overlapping ones included."""
    claims: list[tuple[int, int, int, str]] = []
    for priority, rule in _rules_for(text, kinds):
        for match in rule.pattern.finditer(text):
            if rule.accept(match):
                start, end = _span(match)
                claims.append((start, -end, priority, rule.kind))
    claims += [(start, -end, _LAST, kind) for kind, find in FINDERS for start, end in find(text)]
    if _phone_possible(text, kinds):
        claims += [(start, -end, _LAST, "phone") for start, end in phone_spans(text)]
    claims += [(start, -end, _LAST + 1, ENCODED) for start, end in encoded(text, lambda d: bool(_claims(d, kinds)))]
    return claims


def redact(text: str, *, pii: Iterable[str] = DEFAULT_PII) -> str:
    """``text`` with each credential (and each ``pii`` kind) replaced by ``[REDACTED:<kind>]``."""
    out: list[str] = []
    pos = 0
    for match in find_credentials(text, pii=pii):
        out.append(text[pos:match.start])
        out.append(f"[REDACTED:{match.kind}]")
        pos = match.end
    out.append(text[pos:])
    return "".join(out)


def has_credential(text: str, *, pii: Iterable[str] = DEFAULT_PII) -> bool:
    """Whether ``text`` holds any credential (or any ``pii`` kind)."""
    return bool(find_credentials(text, pii=pii))
