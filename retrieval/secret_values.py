"""What a secret value looks like: the tests ``retrieval.credentials`` runs on a match.

A pattern finds a candidate (``password: …``, ``token=…``, ``AWS_SECRET=…``); these
decide whether the value is a secret or a placeholder, a path, a code identifier, a
setting or an id. Each takes the ``re.Match`` (its ``secret`` group is the value) and
returns True to redact.
"""

from __future__ import annotations

import re

# A value that names a secret without being one: env-var references, templates,
# masks, and text this module already redacted (so redaction is idempotent).
PLACEHOLDER = re.compile(
    r"""^(?:
        \[REDACTED
      | \$\{?\w+\}?$
      | \$[({]                                 # ${VAR:-x}, ${{ secrets.X }}, $(cat /run/secrets/x)
      | <[^>]*>$
      | \{\{?[^}]*\}\}?$
      | %\(?\w*\)?s$
      | (?:\*+|•+|x{3,}|\.{3,}|…)$
      | (?:os\.environ|os\.getenv|getenv|process\.env|env\(|settings\.|config\.)
      | your[_-]
      | (?:none|null|nil|empty|n/a|unset|redacted|hidden|required|changeme|change[_-]me)$
    )""",
    re.IGNORECASE | re.VERBOSE,
)

# A context value: quoted (any characters) or bare, not ending in sentence punctuation.
VALUE = r"""(?P<secret>"[^"\n]{1,200}"|'[^'\n]{1,200}'|[^\s'"]*[^\s'".,;:)\]}>])"""


def unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def is_real(value: str) -> bool:
    return not PLACEHOLDER.match(unquote(value))


def looks_random(value: str) -> bool:
    """Machine-made, not a word: a digit, or mixed case (``token=authenticationrequired`` is prose)."""
    return any(c.isdigit() for c in value) or (
        any(c.isupper() for c in value) and any(c.islower() for c in value)
    )


def looks_like_password(value: str) -> bool:
    """Not an English word: a digit, a symbol, or a capital after the first letter."""
    return (
        any(c.isdigit() for c in value)
        or any(not c.isalnum() for c in value)
        or any(c.isupper() for c in value[1:])
    )


def is_path(value: str) -> bool:
    """A file path says where a secret is kept, not what it is (``~/.ssh/id_ed25519``).

    Base64 may start with ``/``, so a leading slash counts only with a second one.
    """
    return (value.startswith(("~/", "./", "../")) or (value.startswith("/") and value.count("/") >= 2)
            or re.match(r"[A-Za-z]:\\", value) is not None)


def span(match: re.Match[str]) -> tuple[int, int]:
    """The part to hide: the value for a context rule, the whole match otherwise."""
    if "secret" in match.re.groupindex:
        return match.span("secret")
    return match.span()


def secret(match: re.Match[str]) -> str:
    start, end = span(match)
    return match.string[start:end]


def accept_any(match: re.Match[str]) -> bool:
    return True


def random_real(match: re.Match[str]) -> bool:
    value = secret(match)
    return is_real(value) and looks_random(value)


def high_entropy(match: re.Match[str]) -> bool:
    """A long machine-made value, not a path (``private_key=/home/dana/.ssh/id_rsa``) nor
    code (``token = _NUMBER_WORDS.get(…)``, ``client_secret: SessionClientSecret``)."""
    value = unquote(secret(match))
    code = CODE_VALUE.match(value) is not None and (
        not any(c.isdigit() for c in value) or match.string[match.end():match.end() + 1] in ("(", "["))
    return random_real(match) and not is_path(value) and not code


def real(match: re.Match[str]) -> bool:
    return is_real(secret(match))


def connection_password(match: re.Match[str]) -> bool:
    """Not the documentation's own example (``https://user:pass@host``)."""
    return real(match) and secret(match).lower() not in ("pass", "password", "passwd", "pwd", "secret")


def aws_secret(match: re.Match[str]) -> bool:
    """40 base64 characters with upper and lower case and a digit or ``/``/``+``.

    A git SHA is lower-case hex and a run of letters has no digit; a random 40-character
    secret key has all three with near certainty (it lacks a digit, ``/`` and ``+``
    one time in four thousand).
    """
    value = secret(match)
    return (is_real(value) and not is_path(value)
            and any(c.isupper() for c in value) and any(c.islower() for c in value)
            and any(c.isdigit() or c in "/+" for c in value))


# A value that is code, not a secret: a call or subscript (get_key(), config["k"],
# Optional[str]), a tuple or literal, a keyword, attribute access (tokenizer.eos_token),
# or another name: a variable (partition_key, apiKey), a type (AssetKey) or a constant
# (DEFAULT_TOKEN).
CODE_VALUE = re.compile(r"""^(?:
      [A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*\s*[(\[]
    | [(\[{]
    | (?:lambda|await|new|function|not|typeof|self|this|True|False|None|null|undefined)\b
    | [A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+$
    | _*[a-z$][a-z0-9$]*(?:_+[a-z0-9$]+)+$
    | [a-z$]+(?:[A-Z][a-z]+)+$
    | _*[A-Z][a-z]+(?:[A-Z][a-z]*)+$
    | _*[A-Z][A-Z0-9]*(?:_+[A-Z0-9]+)+$
)""", re.VERBOSE)
SETTING_VALUES = frozenset({
    "true", "false", "0", "1", "yes", "no", "on", "off", "str", "string", "int", "bool", "bytes", "float",
    "any", "optional", "secretstr"})


def password(match: re.Match[str]) -> bool:
    """``password=x`` is always a value; ``password: x`` and ``password is x`` must look like one.

    "The password is correct" and "Password: reset it in settings" are prose;
    "password: swordfish" alone on its line, or any quoted value, is a password.
    """
    value = secret(match)
    plain = unquote(value)
    if not is_real(value) or len(plain) < 3 or plain.startswith(("/", "~")):
        return False
    separator = match.group("sep").strip().lower()
    if value != plain:
        return True
    if (CODE_VALUE.match(plain) or plain.lower() in SETTING_VALUES
            or plain.lower() in ("password", "passwd", "pwd", "passphrase", "passcode")):
        return False  # code: password=self.password, password: Optional[str], password=password
    if separator in ("=", ":=", "=>"):
        return True
    if separator == ":":
        return looks_like_password(plain) or ends_line(match)
    return len(plain) >= 4 and looks_like_password(plain)


def ends_line(match: re.Match[str]) -> bool:
    """Nothing but a comma, a full stop or a ``#`` comment follows the value on its line."""
    return re.match(r"[ \t]*(?:[,;]|\.?[ \t]*(?:#[^\n]*)?(?:\n|$))", match.string[match.end():]) is not None


# .env names. A name is secret-sounding when one of its parts (split at ``_`` and at
# camelCase humps) is a secret word: DB_PASS, MAILGUN_KEY, JWT_SECRET, dbPassword; and
# the parts after it only say which copy it is (SECRET_KEY_BASE, API_KEY_V2,
# DB_PASSWORD_PROD), not a setting about it (DB_PASSWORD_FILE, API_KEY_ID, TOKEN_TTL).
ENV_SECRET_PARTS = frozenset({
    "PASS", "PASSWORD", "PASSWD", "PWD", "PASSPHRASE", "SECRET", "SECRETS", "TOKEN", "KEY", "APIKEY",
    "DSN", "CREDENTIAL", "CREDENTIALS", "CREDS"})
# A name that is only one of these is secret on its own (PASS=…); KEY=, TOKEN= and
# SECRET= alone are left to the rules that want a machine-made value.
ENV_ALONE = frozenset({"PASS", "PASSWORD", "PASSWD", "PWD", "PASSPHRASE", "APIKEY"})
ENV_GLUED = re.compile(r"[A-Z0-9]+(?:PASSWORD|PASSWD|SECRET|TOKEN|APIKEY)")  # DBPASSWORD, APITOKEN
ENV_COPY_PARTS = frozenset({
    "BASE", "VALUE", "PROD", "PRODUCTION", "DEV", "DEVELOPMENT", "STAGING", "STAGE", "TEST", "QA", "LIVE",
    "SANDBOX", "LOCAL", "OLD", "NEW", "PREVIOUS", "PRIMARY", "SECONDARY", "RAW", "B64", "BASE64", "HEX",
    "ENCODED", "PLAIN", "PLAINTEXT", "ADMIN", "ROOT", "RO", "RW"})
# In code a KEY is mostly a dict, cache or asset key: there it needs a word that makes
# it a secret (api_key, secret_key, mailgun_key); a .env NAME=value line needs none.
SECRET_KEY_QUALIFIERS = frozenset({
    "API", "SECRET", "PRIVATE", "ACCESS", "SIGNING", "SIGNATURE", "ENCRYPTION", "DECRYPTION", "ENCRYPT",
    "MASTER", "LICENSE", "AUTH", "CLIENT", "APP", "SERVICE", "ACCOUNT", "STORAGE", "SUBSCRIPTION", "WEBHOOK",
    "HMAC", "JWT", "SESSION", "CRYPTO", "AES", "RSA", "SHARED", "ADMIN", "SDK", "DEPLOY", "WRITE", "READ",
    "INGEST", "PROJECT", "CONSUMER", "GPG", "PGP", "SSH", "OPENAI", "ANTHROPIC", "CLAUDE", "GEMINI", "GOOGLE",
    "AWS", "AZURE", "GCP", "STRIPE", "MAILGUN", "SENDGRID", "TWILIO", "DATADOG", "DD", "SLACK", "GITHUB",
    "GITLAB", "NPM", "PYPI", "HF", "HUGGINGFACE", "DISCORD", "TELEGRAM", "SHOPIFY", "LINEAR", "SENTRY",
    "HEROKU", "SQUARE", "ALGOLIA", "MAPBOX", "PINECONE", "COHERE", "MISTRAL", "GROQ", "REPLICATE"})
# KEY after one of these is a lookup key even in a .env line (CACHE_KEY=users).
NOT_SECRET_KEY = frozenset({
    "CACHE", "SORT", "PRIMARY", "FOREIGN", "PARTITION", "HOT", "DICT", "MAP", "ROW", "LOOKUP", "GROUP",
    "UNIQUE", "INDEX", "HASH", "IDEMPOTENCY", "DEDUP", "STATE", "OBJECT", "SHARD", "ROUTING", "LOCK",
    "CONFIG", "FIELD", "COLUMN", "ATTR", "ENTRY", "ITEM", "NODE", "TRANSLATION", "I18N", "EVENT", "METRIC",
    "LABEL", "TAG", "RESULT", "QUERY", "CURSOR", "PAGE", "ASSET", "TABLE", "BUCKET", "PREFIX"})
# TOKEN after one of these is a pagination cursor or a tokenizer's special token.
NOT_SECRET_TOKEN = frozenset({
    "NEXT", "PAGE", "PAGINATION", "CONTINUATION", "CURSOR", "CANCEL", "CANCELLATION", "EOS", "BOS", "PAD",
    "SEP", "UNK", "MASK", "CLS", "SPECIAL", "START", "END", "STOP", "INPUT", "OUTPUT", "MAX", "MIN", "NUM",
    "COMPLETION", "PROMPT", "CONTEXT", "LEXER", "PARSER", "SYNTAX", "PREV", "CURRENT", "LAST", "FIRST",
    "SYNC", "RESUME", "SENTINEL", "CHAT", "IMAGE", "AUDIO", "THINKING", "REASONING"})


def name_parts(name: str) -> list[str]:
    return [p for p in re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).upper().split("_") if p]


def is_copy_part(part: str) -> bool:
    return part in ENV_COPY_PARTS or part.isdigit() or re.fullmatch(r"V\d+", part) is not None


def secret_name(name: str, *, env_line: bool) -> bool:
    """Whether ``name`` names a secret; ``env_line``: in a ``.env``/YAML line, not code."""
    parts = name_parts(name)
    if not parts or "PUBLIC" in parts or "PUBLISHABLE" in parts:
        return False
    if parts[-2:] == ["DATABASE", "URL"]:
        return True

    def secret_part(i: int, part: str) -> bool:
        if ENV_GLUED.fullmatch(part):
            return True
        if part not in ENV_SECRET_PARTS or (len(parts) == 1 and part not in ENV_ALONE):
            return False
        before = parts[i - 1] if i else ""
        if part == "TOKEN":
            return before not in NOT_SECRET_TOKEN
        if part == "KEY":
            return before in SECRET_KEY_QUALIFIERS if not env_line else before not in NOT_SECRET_KEY
        return True

    hits = [i for i, part in enumerate(parts) if secret_part(i, part)]
    return bool(hits) and all(is_copy_part(part) for part in parts[hits[-1] + 1:])


def env_value(match: re.Match[str]) -> bool:
    """A value assigned to a secret-sounding name: hidden however short or plain it is.

    Not when it is a placeholder or reference (``${API_KEY}``, ``<your-token>``), a
    flag or type word (``true``, ``str``), a path to the secret, a PEM block (the
    ``private_key`` rule names it), the name itself
    (``CLIENT_CREDENTIALS = "client_credentials"``), or code: ``API_KEY=hunter2`` in a
    ``.env`` file is a secret; ``api_key = get_api_key()``, ``f(api_key=key)`` and
    ``def f(api_key: str)`` are code. A ``NAME: value`` line (YAML) needs the value to
    end the line or look like a password.
    """
    name, sep, plain = match.group("name"), match.group("sep"), secret(match)
    upper = name.isupper()
    env_line = upper and (sep == "=" or sep.strip() == ":")
    if not secret_name(name, env_line=env_line):
        return False
    if (len(plain) < 3 or not is_real(plain) or plain[0] in "{<" or plain.startswith("-----BEGIN")
            or plain.lower() in SETTING_VALUES
            or is_path(plain) or plain.upper().replace("-", "_") in (name.upper(), *name_parts(name))):
        return False
    if "://" in plain:
        # A DSN's secret is its user-info: scheme://key@host (Sentry) is hidden whole;
        # scheme://user:password@host is left to connection_string, which keeps the
        # user and host readable; scheme://host holds no secret.
        userinfo = re.match(r"[^/]*://([^/@\s]*)@", plain)
        return userinfo is not None and ":" not in userinfo.group(1)
    if match.group("open"):
        return True  # a quoted literal
    if upper and sep == "=":
        return True  # NAME=value: a shell or .env line
    if CODE_VALUE.match(plain):
        return False
    if sep.strip() == ":":
        return ends_line(match) or looks_like_password(plain)
    # name = word / f(name=word): a lower-case word assigned in code is another variable.
    code_like = sep != "=" or match.string[match.end():match.end() + 1] in (",", ")")
    return upper or not (code_like and plain.isalpha() and plain.islower())
