"""Credentials are found wherever they appear and never survive redaction.

The fake secrets below are assembled from pieces so that no complete key-shaped
literal sits in the repository for a secret scanner to trip over.
"""

from __future__ import annotations

import base64
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval.credentials import (
    ANCHORS,
    CREDENTIAL_KINDS,
    CredentialMatch,
    find_credentials,
    has_credential,
    might_hold_credential,
    pii_from_config,
    redact,
)

OPENAI = "sk-" + "T3stKey9" * 6
GITHUB_FOR_B64 = "ghp_" + "Q7wErT9yUiOp3aSdFgHjKlZx" + "C8vBnM1q2w3e"
OPENAI_PROJECT = "sk-" + "proj-" + "Ab3_dE6-" * 7
ANTHROPIC = "sk-" + "ant-api03-" + "Zx9Yw8Vu7" * 9
AWS_ID = "AKIA" + "IOSFODNN7EXAMPL3"
AWS_SESSION_ID = "ASIA" + "Q2W3E4R5T6Y7U8I9"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
GITHUB_PAT_CLASSIC = "ghp" + "_" + "a1B2c3D4e5" * 4
GITHUB_OAUTH = "gho" + "_" + "Q9w8E7r6T5" * 4
GITHUB_SERVER = "ghs" + "_" + "m1N2b3V4c5" * 4
GITHUB_FINE_GRAINED = "github" + "_pat_" + "11ABCDEFG0" * 3 + "_" + "xY9z" * 10
SLACK_BOT = "xox" + "b-" + "1234567890-0987654321-" + "AbCdEfGhIjKl"
SLACK_USER = "xox" + "p-" + "2222222222-3333333333-" + "ZyXwVuTsRqPo"
SLACK_WEBHOOK = "https://hooks.slack.com/services/" + "T0123ABCD/B0456EFGH/" + "aBcDeFgHiJkLmNoP"
GOOGLE = "AIza" + "SyD3mo_Key-0123456789abcdefghijklmn"
STRIPE_SECRET = "sk" + "_live_" + "51HxYzAbCdEfGhIj0123"
STRIPE_RESTRICTED = "rk" + "_live_" + "51HqWeRtYuIoPa4567"
STRIPE_PUBLISHABLE = "pk" + "_live_" + "51HzXcVbNmLkJh8901"
JWT = "eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiIxMjM0In0" + "." + "dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk"
BEARER = "abc123DEF456ghi789JKL0"
RSA_KEY_BODY = "MIIEowIBAAKCAQEA7x" + "Y2b3c4d5e6f7g8h9i0j\nk1l2m3n4o5p6q7r8s9t0u1v2w3x4y5z6"
RSA_KEY = "-----BEGIN RSA " + "PRIVATE KEY-----\n" + RSA_KEY_BODY + "\n-----END RSA " + "PRIVATE KEY-----"
OPENSSH_BODY = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"
OPENSSH_KEY = "-----BEGIN OPENSSH " + "PRIVATE KEY-----\n" + OPENSSH_BODY + "\n-----END OPENSSH " + "PRIVATE KEY-----"
GENERIC = "Qm9vbGVhbjEyMzQ1Njc4OTA"
GITLAB = "glpat" + "-" + "xK9mP2qR7sT4vW8yZ1aB"
SENDGRID = "SG" + "." + "aB3dE6gH9jK2mN5pQ8sT1v" + "." + "wX4yZ7bC0eF3hI6kL9nO2qR5tU8wX1zA4cD7fG0iJ3l"
TWILIO = "SK" + "0123456789abcdef" * 2
NPM = "npm" + "_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hI6"
PYPI = "pypi" + "-AgEIcHlwaS5vcmc" + "CJDY3NDcxZGM0LTFjZGItNDBkNC05MjA3LWQ0YzFhZWZiZDAwMQ"
HUGGINGFACE = "hf" + "_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3h"
MAILGUN = "key" + "-" + "3ax6" + "0123456789abcdef01234567abcd"
DATADOG = "0123456789abcdef" * 2
DISCORD = "MTA" + "yNzQ4ODM5MDAxMjM0NTY3OA" + "." + "GhT3xQ" + "." + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF"
DISCORD_HOOK = "https://discord.com/api/webhooks/" + "1027488390012345678/" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hI6"
TELEGRAM = "1234567890" + ":AA" + "Fb3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3"
SHOPIFY = "shpat" + "_" + "0123456789abcdef" * 2
DIGITALOCEAN = "dop" + "_v1_" + "0123456789abcdef" * 4
LINEAR = "lin" + "_api_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hI6kL9n"
DOPPLER = "dp" + ".st." + "dev." + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hI6kL9nO2qR5"
POSTMAN = "PMAK" + "-" + "0123456789abcdef01234567" + "-" + "0123456789abcdef0123456789abcdef01"
AZURE_KEY = "aB3dE6gH9jK2/" * 6 + "mN5p" + "=="
AZURE_SIG = "a0B1c2D3e4F5g6H7i8J9k0L1m2N3o4P5q6R7s8T9u0%3D"
GCP_KEY_ID = "0123456789abcdef0123456789abcdef01234567"
AZURE_CLIENT_SECRET = "aB3" + "8Q~" + "x9Yw8Vu7-Ts6Rq5Po4Nm3Lk2Jh1Gf0E.d"
GOOGLE_OAUTH_SECRET = "GOCSPX" + "-" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7b"
GOOGLE_ACCESS_TOKEN = "ya29" + "." + "a0AfH6SM" + "Bx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0Ed" * 2
ATLASSIAN = "ATATT" + "3xFfGF0" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hI6kL9nO2qR5tU8wX1zA4" + "=" + "0A1B2C3D"
HEROKU = "HRKU" + "-" + "AA" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hI6kL9nO2qR5tU8wX1zA4cD7fG0"
HEROKU_LEGACY = "8f14e45f" + "-ceea-467a-9575-" + "1f0e2a7b9c3d"
SQUARE = "EAAA" + "l9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1Gf0Ed" + "-aB3dE6gH9jK2mN5pQ8sT1vW4yZ7b"
SQUARE_OAUTH = "sq0csp" + "-" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hI6kL9nO2q"
VAULT = "hvs" + "." + "CAESIJ" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3hI6"
DATABRICKS = "dapi" + "0123456789abcdef" * 2
GRAFANA = "glsa" + "_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF" + "_" + "0a1b2c3d"
SENTRY = "sntrys" + "_" + "eyJpYXQiOjE3MDAwMDAwMDAuMCwidXJsIjoi" + "aB3dE6gH9jK2mN5pQ8"
TWILIO_AUTH_TOKEN = "9f8e7d6c5b4a" + "3210" * 5


def luhn_card(prefix: str, length: int = 16, fill: str | None = None) -> str:
    """A card number that passes the Luhn check (built here: none is written in the repo);
    ``fill``: the digits between the prefix and the check digit (default sevens)."""
    body = prefix + (fill or "7" * (length - len(prefix) - 1))
    for check in "0123456789":
        digits = body + check
        total = sum((int(d) * 2 - 9 if int(d) * 2 > 9 else int(d) * 2) if i % 2 else int(d)
                    for i, d in enumerate(reversed(digits)))
        if total % 10 == 0:
            return digits
    raise AssertionError("unreachable")


CARD = luhn_card("4111")
CARD_SPACED = " ".join(CARD[i:i + 4] for i in range(0, 16, 4))
CARD_DASHED = "-".join(CARD[i:i + 4] for i in range(0, 16, 4))
AMEX = luhn_card("3782", 15)
AMEX_SPACED = f"{AMEX[:4]} {AMEX[4:10]} {AMEX[10:]}"
MASTERCARD_2_SERIES = luhn_card("2221")
DISCOVER = luhn_card("6011")
NOT_A_NETWORK = luhn_card("1234")  # Luhn-valid, but no card network starts with 1
SSN = "123" + "-45-" + "6789"
NI_NUMBER = "AB" + " 12 34 56 " + "C"
SHA = "3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f"

# (kind, text, the secret that must not survive redaction)
POSITIVES = [
    ("openai_key", f"my OpenAI key is {OPENAI}", OPENAI),
    ("openai_key", f"export OPENAI_API_KEY={OPENAI_PROJECT}", OPENAI_PROJECT),
    ("anthropic_key", f"use {ANTHROPIC} for claude", ANTHROPIC),
    ("aws_access_key_id", f"the access key id is {AWS_ID}", AWS_ID),
    ("aws_access_key_id", f"temporary creds start with {AWS_SESSION_ID} today", AWS_SESSION_ID),
    ("aws_secret_access_key", f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    ("aws_secret_access_key", f'"AWS_SECRET_ACCESS_KEY": "{AWS_SECRET}"', AWS_SECRET),
    ("github_token", f"git clone https://{GITHUB_PAT_CLASSIC}@github.com/acme/app", GITHUB_PAT_CLASSIC),
    ("github_token", f"oauth token {GITHUB_OAUTH}", GITHUB_OAUTH),
    ("github_token", f"the action uses {GITHUB_SERVER}", GITHUB_SERVER),
    ("github_token", f"GH_TOKEN {GITHUB_FINE_GRAINED}", GITHUB_FINE_GRAINED),
    ("slack_token", f"bot token: {SLACK_BOT}", SLACK_BOT),
    ("slack_token", f"{SLACK_USER} is my user token", SLACK_USER),
    ("slack_webhook", f"alerts post to {SLACK_WEBHOOK}", SLACK_WEBHOOK),
    ("google_api_key", f"maps key {GOOGLE} for the app", GOOGLE),
    ("stripe_key", f"stripe secret {STRIPE_SECRET}", STRIPE_SECRET),
    ("stripe_key", f"restricted key {STRIPE_RESTRICTED}", STRIPE_RESTRICTED),
    ("stripe_key", f"publishable key {STRIPE_PUBLISHABLE}", STRIPE_PUBLISHABLE),
    ("bearer_token", f"curl -H 'Authorization: Bearer {BEARER}' https://api.acme.dev", BEARER),
    ("bearer_token", f"send Bearer {BEARER} with every call", BEARER),
    ("basic_auth", "Authorization: Basic dXNlcjpodW50ZXIy", "dXNlcjpodW50ZXIy"),
    ("jwt", f"session cookie was {JWT}", JWT),
    ("private_key", f"here is the deploy key:\n{RSA_KEY}\nkeep it safe", RSA_KEY_BODY),
    ("private_key", OPENSSH_KEY, OPENSSH_BODY),
    ("private_key", "-----BEGIN EC " + "PRIVATE KEY-----\nMHcCAQEEIA1b2c3 truncated", "MHcCAQEEIA1b2c3"),
    ("pin", "The garage door code is 4471.", "4471"),
    ("pin", "my bank card PIN is 8830", "8830"),
    ("password", "password: hunter2", "hunter2"),
    ("password", "password=swordfish", "swordfish"),
    ("password", "my password is hunter2.", "hunter2"),
    ("password", "The wifi password is Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("password", "pwd=Zebra!42", "Zebra!42"),
    ("password", "the door passcode: 8675309", "8675309"),
    ("password", "DB_PASSWORD=s3cr3t-Pa55", "s3cr3t-Pa55"),
    ("password", '{"password": "correct horse battery staple"}', "correct horse battery staple"),
    ("password", "Password: swordfish", "swordfish"),
    ("password", "my password was changed to Summer2024!", "Summer2024!"),
    ("connection_string", "DATABASE_URL=postgres://app:s3cr3tpw@db.internal:5432/app", "s3cr3tpw"),
    ("connection_string", "mysql://root:toor1234@10.0.0.5/shop", "toor1234"),
    ("connection_string", "mongodb+srv://admin:M0ngoPass@cluster0.abcd.mongodb.net/test", "M0ngoPass"),
    ("connection_string", "redis://:r3disPass@cache:6379/0", "r3disPass"),
    ("connection_string", "amqp://guest:Gu3stPw@rabbit:5672/", "Gu3stPw"),
    ("connection_string", "postgresql+psycopg2://svc:pa55word@pg/app", "pa55word"),
    ("generic_secret", f"api_key={GENERIC}", GENERIC),
    ("generic_secret", f"token = '{SHA}'", SHA),
    ("generic_secret", f"secret: {GENERIC}", GENERIC),
    ("generic_secret", f"client_secret={GENERIC}", GENERIC),
    ("generic_secret", "session_token: 123e4567-e89b-12d3-a456-426614174000",
     "123e4567-e89b-12d3-a456-426614174000"),
    ("gitlab_token", f"the CI uses {GITLAB} to push", GITLAB),
    ("sendgrid_key", f"sendgrid: {SENDGRID}", SENDGRID),
    ("twilio_key", f"twilio api key {TWILIO} for sms", TWILIO),
    ("npm_token", f"//registry.npmjs.org/:_authToken {NPM}", NPM),
    ("pypi_token", f"upload with {PYPI}", PYPI),
    ("huggingface_token", f"HF hub token is {HUGGINGFACE}", HUGGINGFACE),
    ("mailgun_key", f"mailgun {MAILGUN} for the newsletter", MAILGUN),
    ("datadog_key", f"the datadog api key is {DATADOG}", DATADOG),
    ("encoded_secret", "paste this: " + base64.b64encode(GITHUB_FOR_B64.encode()).decode() + " ok",
     base64.b64encode(GITHUB_FOR_B64.encode()).decode()),
    ("discord_token", f"Authorization: Bot {DISCORD}", DISCORD),
    ("discord_webhook", f"post alerts to {DISCORD_HOOK}", DISCORD_HOOK),
    ("telegram_token", f"my telegram bot is {TELEGRAM}", TELEGRAM),
    ("shopify_token", f"shop admin token {SHOPIFY}", SHOPIFY),
    ("digitalocean_token", f"doctl auth with {DIGITALOCEAN}", DIGITALOCEAN),
    ("linear_key", f"linear {LINEAR}", LINEAR),
    ("doppler_token", f"doppler service token {DOPPLER}", DOPPLER),
    ("postman_key", f"postman {POSTMAN}", POSTMAN),
    ("azure_key", "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=" + AZURE_KEY
     + ";EndpointSuffix=core.windows.net", AZURE_KEY),
    ("azure_sas", "https://acme.blob.core.windows.net/c/f.csv?sv=2022-11-02&sp=r&sig=" + AZURE_SIG, AZURE_SIG),
    ("gcp_service_account", '{"type": "service_account", "private_key_id": "' + GCP_KEY_ID + '"}', GCP_KEY_ID),
    ("aws_secret_access_key", f"and the secret is {AWS_SECRET} for that user", AWS_SECRET),
    ("env_secret", "DB_PASS=hunter2x", "hunter2x"),
    ("env_secret", "export MAILGUN_KEY=" + "k3y-abc", "k3y-abc"),
    ("env_secret", "SENTRY_DSN=" + "https://abc123@o1.ingest.sentry.io/42", "abc123@o1"),
    ("env_secret", 'JWT_SECRET="not so secret"', "not so secret"),
    ("env_secret", "  DB_PASS: hunter2x", "hunter2x"),  # YAML
    ("env_secret", '{"db_pass": "hunter2x", "port": 5432}', "hunter2x"),  # JSON
    ("env_secret", "SECRET_KEY_BASE=abcd1234", "abcd1234"),
    ("env_secret", "DB_PASS=pa#ss99 # prod", "pa#ss99"),
    ("env_secret", "I set DB_PASS=hunter2x...", "hunter2x"),
    ("env_secret", "`MAILGUN_KEY=3ax6a`", "3ax6a"),
    ("env_secret", "client = Client(api_key='Hunter2xyz')", "Hunter2xyz"),
    ("password", "dbPassword = 'correct-horse'", "correct-horse"),
    ("env_secret", "mailgunKey = 'k3y-horse'", "k3y-horse"),
    ("env_secret", "SENTRY_DSN=https://" + "abc123@o1.ingest.sentry.io/42", "abc123"),
    ("generic_secret", f"my api key is {GENERIC}", GENERIC),
    ("aws_secret_access_key", f"the key {AWS_SECRET}", AWS_SECRET),
    ("aws_secret_access_key", f"AWS creds: {AWS_SECRET}", AWS_SECRET),
    ("twilio_key", f"the Twilio auth token is {TWILIO_AUTH_TOKEN}", TWILIO_AUTH_TOKEN),
    ("google_oauth", f"client secret {GOOGLE_OAUTH_SECRET} for the web app", GOOGLE_OAUTH_SECRET),
    ("google_oauth", f"access token {GOOGLE_ACCESS_TOKEN}", GOOGLE_ACCESS_TOKEN),
    ("atlassian_token", f"Jira API token {ATLASSIAN}", ATLASSIAN),
    ("heroku_key", f"heroku {HEROKU}", HEROKU),
    ("heroku_key", f"my Heroku API key is {HEROKU_LEGACY}", HEROKU_LEGACY),
    ("square_token", f"square access token {SQUARE}", SQUARE),
    ("square_token", f"square oauth secret {SQUARE_OAUTH}", SQUARE_OAUTH),
    ("vault_token", f"vault login {VAULT}", VAULT),
    ("databricks_token", f"databricks PAT {DATABRICKS}", DATABRICKS),
    ("grafana_token", f"grafana service account {GRAFANA}", GRAFANA),
    ("sentry_token", f"sentry-cli uses {SENTRY}", SENTRY),
    ("azure_client_secret", f"the app registration secret {AZURE_CLIENT_SECRET} expires in June", AZURE_CLIENT_SECRET),
    ("azure_key", "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey="
     + AZURE_KEY, AZURE_KEY),
    ("private_key", '{"type": "service_account", "private_key": "-----BEGIN ' + 'PRIVATE KEY-----\\n'
     + RSA_KEY_BODY.replace("\n", "\\n") + '\\n-----END ' + 'PRIVATE KEY-----\\n"}', RSA_KEY_BODY[:20]),
]

# Personal data: redacted by default (payment cards, national ids) or when configured.
PII_POSITIVES = [
    ("payment_card", f"my card is {CARD_SPACED}, exp 04/29", CARD_SPACED),
    ("payment_card", f"charge {CARD} please", CARD),
    ("payment_card", f"amex {AMEX}", AMEX),
    ("national_id", f"SSN {SSN} on the form", SSN),
    ("national_id", f"my NI number is {NI_NUMBER}", NI_NUMBER),
    ("national_id", "SSN: " + "078" + " 05 " + "1120", "078 05 1120"),
    ("payment_card", f"card {CARD_SPACED} 12/27", CARD_SPACED),  # an expiry or a CVV after it
    ("payment_card", f"card {CARD_SPACED} 123", CARD_SPACED),
    ("payment_card", f"pay with {CARD_DASHED}.", CARD_DASHED),
    ("payment_card", f"amex {AMEX_SPACED}", AMEX_SPACED),
    ("payment_card", f"mastercard {MASTERCARD_2_SERIES}", MASTERCARD_2_SERIES),
    ("payment_card", f"discover {DISCOVER}", DISCOVER),
]

# Ordinary prose that talks about credentials, hashes or ids without holding a secret.
NEGATIVES = [
    "I forgot my password yesterday",
    "He said the password was wrong",
    "The password is at least 12 characters long",
    "Reset your password: go to settings and click reset",
    "We rate-limit with the token bucket algorithm",
    "The token expired after 3600 seconds",
    f"We reverted commit {SHA} after the outage",
    "Request 123e4567-e89b-12d3-a456-426614174000 failed with a timeout",
    "The bearer of bad news was Priya",
    "Use a bearer token for the internal API",
    "Secret Santa is on Friday",
    "The secret: it's all about timing.",
    "password = os.environ['DB_PASSWORD']",
    "password=$DB_PASSWORD",
    "password: ********",
    "connect to postgres://localhost:5432/app",
    "postgres://app:<password>@db/app",
    "Run pwd to print the working directory",
    "The API key lives in 1Password",
    "sk-learn is a nickname people use for scikit-learn",
    "the task-1234567890abcdefghijklmn ticket is closed",
    "Edit /etc/passwd: root:x:0:0",
    "xoxo-love-you-all-see-you-soon",
    "Use AKIA-prefixed keys only in CI",
    "https://example.com:8443/login",
    "Authorization: Bearer $TOKEN",
    "the max_tokens=4096 setting",
    "We use a key-value store for sessions",
    "Set DB_PASS in the environment, never in code",
    "API_KEY=${API_KEY}",
    "API_TOKEN=<your-token>",
    "DEBUG_TOKEN=false",
    "the SG.lab group meets on Fridays",
    "order 4111 1111 1111 1112 shipped",  # fails the Luhn check
    "ticket 1234-5678-9012-3456 closed",  # no card network starts with 1
    "call me at 555-123-4567",
    "the form asks for 123-45-678",
    "invalid SSN 000-12-3456 in the sample",
    "Dana's bot answers on Discord every evening",
    "the PUBLIC_KEY=ssh-ed25519 line goes in authorized_keys",
    "release 2026-10-12 shipped with version 1.24.3",
    "the DB_PASS variable",
    "DB_PASS: set it in vault",
    "NODE_AUTH_TOKEN=${{ secrets.NPM_TOKEN }}",
    "DB_PASS=$(cat /run/secrets/db_pass)",
    "DB_PASSWORD=changeme",
    "DB_PASSWORD_FILE=/run/secrets/db_password",
    "GOOGLE_APPLICATION_CREDENTIALS=/secrets/sa.json",
    "API_KEY_ID=12345",
    "TOKEN_TTL_SECONDS=3600",
    "SESSION_COOKIE_KEY_PREFIX=sess",
    "CACHE_KEY=users",
    "PASSWORD_MIN_LENGTH=12",
    # Code: an assignment of a call, a variable, a type or a constant is not a secret.
    "api_key = get_api_key()",
    "access_token = response.json()['access_token']",
    "sort_key = lambda x: x[0]",
    "const authToken = getToken();",
    "def connect(api_key: str, secret_key: str | None = None):",
    "partition_key = partition_key or 'default'",
    "foreign_key=ForeignKey(User)",
    "self.key_password = key_password",
    "password = password.encode('utf-8')",
    "password: Optional[str] = None",
    "client = Client(api_key=key, timeout=3)",
    'check = AssetCheckResult(asset_key="published_items", passed=ok)',
    "target_key: EntityKey | None,",
    "inject(query, token_budget=90)",
    "pad_token = tokenizer.eos_token",
    'CLIENT_CREDENTIALS = "client_credentials"',
    '_ARROW_EXTENSION_NAME_KEY = "ARROW:extension:name"',
    "token = _NUMBER_WORDS.get(token.lower(), token)",
    "client_secret: SessionClientSecret",
    "e.g. `pass` in `https://user:pass@host:port/path`",
    # Provider prefixes named, without a token.
    "GitLab tokens start with glpat- and expire yearly",
    "Hugging Face models load with hf_hub_download",
    "the pypi-release job failed",
    "npm_config_cache=/tmp/npm",
    "the ATATT prefix marks Atlassian tokens",
    "Heroku app 123e4567-e89b-12d3-a456-426614174000 restarted",
    "Twilio account SID AC" + "0123456789abcdef" * 2 + " sends the SMS",
    "twilio auth token rotation is monthly",
    "vault tokens look like hvs.example",
    "dapi is the Databricks token prefix",
    "the a1b2Q~short tilde",
    "dd if=/dev/zero of=disk.img bs=1M count=100",
    "Discord bot both ways MTA" + "yNzQ4ODM5MDAxMjM0NTY3OA",
    "the AccountKey= setting is empty",
    "https://example.com/search?q=1&sig=short",
    # An AWS-secret-sized run after a trigger word that is a SHA, a path or a word run.
    f"the secret fix is in {SHA}",
    "aws s3 sync /Users/DanaK/Projects/Backup2024/data s3://acme-backups",
    "the secret sauce is ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn",
    # Numbers that are not cards or national ids.
    "p = 0.4111111111111111 in the second run",
    "the build took 1730000000000 ms",
    "meeting 2026-10-12 09:30 in room 101",
    f"order {NOT_A_NETWORK} shipped",
    f"sha {SHA[:8]}{CARD}{SHA[:8]} is a hash",
    "invalid SSN 666-12-3456 and 123-00-4567",
]


@pytest.mark.parametrize(("kind", "text", "secret"), POSITIVES, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(POSITIVES)])
def test_credential_is_found_with_its_kind(kind: str, text: str, secret: str) -> None:
    found = find_credentials(text)
    assert [m.kind for m in found] == [kind]
    assert has_credential(text)


@pytest.mark.parametrize(("kind", "text", "secret"), POSITIVES, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(POSITIVES)])
def test_secret_never_survives_redaction(kind: str, text: str, secret: str) -> None:
    redacted = redact(text)
    assert secret not in redacted
    assert f"[REDACTED:{kind}]" in redacted


@pytest.mark.parametrize(("kind", "text", "secret"), POSITIVES, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(POSITIVES)])
def test_redacted_text_holds_no_credential(kind: str, text: str, secret: str) -> None:
    once = redact(text)
    assert not has_credential(once)
    assert redact(once) == once


@pytest.mark.parametrize("text", NEGATIVES)
def test_prose_about_credentials_is_not_flagged(text: str) -> None:
    assert find_credentials(text) == []
    assert not has_credential(text)
    assert redact(text) == text


@pytest.mark.parametrize(("kind", "text", "secret"), POSITIVES, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(POSITIVES)])
def test_every_credential_holds_an_anchor_of_its_kind(kind: str, text: str, secret: str) -> None:
    """The bulk scans skip texts without an anchor; no credential may be skipped (an
    encoded one has none: its run is what the scans look for)."""
    assert kind == "encoded_secret" or any(anchor in text.lower() for anchor in ANCHORS[kind])
    assert might_hold_credential(text)


def test_anchors_skip_plain_prose_but_never_non_ascii() -> None:
    # An encoded secret has no anchor: any long base64 run or a percent escape is decoded.
    assert set(ANCHORS) == set(CREDENTIAL_KINDS) - {"encoded_secret"}
    assert not might_hold_credential("Maya moved to Lisbon in March and walks her dog daily.")
    assert might_hold_credential("Maya's ſecret=Q2x8ZmVyY2hpbGRsaWtlYnV0dGVy")


def test_the_quality_scan_finds_what_the_full_scan_finds() -> None:
    import polars as pl

    from memory_assets.lib.quality.credential_scan import ScanLedger

    texts = ([text for _, text, _ in POSITIVES + PII_POSITIVES] + list(NEGATIVES)
             + ["Plain prose about a garden."] * 3)
    ledger = ScanLedger()
    kinds = ledger.kinds(pl.Series(texts)).to_list()
    assert [k is not None for k in kinds] == [has_credential(t) for t in texts]


@pytest.mark.parametrize(("kind", "text", "secret"), PII_POSITIVES, ids=[k for k, _, _ in PII_POSITIVES])
def test_cards_and_national_ids_are_redacted_by_default(kind: str, text: str, secret: str) -> None:
    assert [m.kind for m in find_credentials(text)] == [kind]
    assert secret not in redact(text) and f"[REDACTED:{kind}]" in redact(text)
    assert might_hold_credential(text)
    assert redact(text, pii=()) == text  # [privacy] redact = [] keeps them


def test_emails_and_phones_by_default_and_kept_when_configured() -> None:
    text = "write to dana.k@example.org or call +1 (415) 555-0134"
    assert redact(text) == "write to [REDACTED:email] or call [REDACTED:phone]"
    assert redact(text, pii=("payment_card", "national_id")) == text


def test_privacy_config_names_known_kinds() -> None:
    from retrieval.config import load_config

    config = load_config()
    assert pii_from_config(config) == ("payment_card", "national_id", "bank_account", "email", "phone")
    assert pii_from_config(config.replace(privacy={"redact": []})) == ()
    with pytest.raises(ValueError, match="passport"):
        pii_from_config(config.replace(privacy={"redact": ["passport"]}))
    with pytest.raises(ValueError, match="must be a list"):
        pii_from_config(config.replace(privacy={"redact": "email"}))


def test_an_unknown_personal_data_kind_is_an_error() -> None:
    with pytest.raises(ValueError, match="passport"):
        find_credentials("nothing here", pii=["passport"])


def test_a_cvv_after_the_card_is_hidden_too() -> None:
    assert redact(f"card {CARD_SPACED} cvv 123") == "card [REDACTED:payment_card] cvv [REDACTED:pin]"


def test_redacted_json_config_stays_json() -> None:
    import json

    text = json.dumps({"db_pass": "hunter2x", "AWS_SECRET_ACCESS_KEY": AWS_SECRET, "port": 5432})
    assert json.loads(redact(text)) == {"db_pass": "[REDACTED:env_secret]",
                                        "AWS_SECRET_ACCESS_KEY": "[REDACTED:aws_secret_access_key]", "port": 5432}


def test_dates_and_short_numbers_skip_every_rule() -> None:
    cards_and_ids = ("payment_card", "national_id")
    assert not might_hold_credential("meeting 2026-10-12 09:30 in room 101, call 415-555-0134", pii=cards_and_ids)
    assert not might_hold_credential("write to dana@example.org", pii=cards_and_ids)
    assert might_hold_credential("write to dana@example.org")
    # A date and a time are not a phone number, even when the phone rule looks.
    assert redact("meeting 2026-10-12 09:30 in room 101") == "meeting 2026-10-12 09:30 in room 101"


def test_python_and_polars_read_the_personal_data_precheck_alike() -> None:
    """The bulk scan runs ``PII_PRECHECK`` in polars (Rust regex); ``find_credentials`` in Python."""
    import re

    import polars as pl

    from retrieval.credentials import PII_PRECHECK

    texts = [text for _, text, _ in PII_POSITIVES] + list(NEGATIVES)
    in_polars = pl.Series(texts).str.contains(PII_PRECHECK).to_list()
    assert in_polars == [re.search(PII_PRECHECK, t) is not None for t in texts]
    assert all(in_polars[:len(PII_POSITIVES)])


def test_every_kind_has_a_positive_case() -> None:
    assert {kind for kind, _, _ in POSITIVES} == set(CREDENTIAL_KINDS)


def test_openai_key_is_found_and_redacted() -> None:
    text = f"my key is {OPENAI}, please keep it"
    assert redact(text) == "my key is [REDACTED:openai_key], please keep it"


def test_anthropic_key_is_not_mistaken_for_openai() -> None:
    assert [m.kind for m in find_credentials(ANTHROPIC)] == ["anthropic_key"]


def test_match_span_covers_exactly_the_secret() -> None:
    text = f"key={AWS_ID} region=us-east-1"
    (match,) = find_credentials(text)
    assert text[match.start:match.end] == AWS_ID


def test_connection_string_keeps_user_and_host_readable() -> None:
    redacted = redact("postgres://app:s3cr3tpw@db.internal:5432/app")
    assert redacted == "postgres://app:[REDACTED:connection_string]@db.internal:5432/app"


def test_jwt_in_authorization_header_is_redacted_once() -> None:
    redacted = redact(f"Authorization: Bearer {JWT}")
    assert redacted == "Authorization: Bearer [REDACTED:jwt]"


def test_several_credentials_in_one_text_are_all_redacted() -> None:
    text = f"aws {AWS_ID} / github {GITHUB_PAT_CLASSIC} / password: hunter2"
    redacted = redact(text)
    assert [m.kind for m in find_credentials(text)] == ["aws_access_key_id", "github_token", "password"]
    for secret in (AWS_ID, GITHUB_PAT_CLASSIC, "hunter2"):
        assert secret not in redacted


def test_whole_private_key_block_becomes_one_marker() -> None:
    assert redact(RSA_KEY) == "[REDACTED:private_key]"


def test_a_git_sha_is_a_credential_only_when_assigned_to_a_secret_name() -> None:
    assert not has_credential(f"fixed in {SHA}")
    assert has_credential(f"GITHUB_TOKEN={SHA}")


def test_credential_match_is_immutable() -> None:
    match = CredentialMatch(kind="jwt", start=0, end=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        match.start = 1  # type: ignore[misc]


def test_empty_text_has_no_credentials() -> None:
    assert find_credentials("") == []
    assert redact("") == ""


def test_credentials_module_imports_nothing_from_the_pipeline() -> None:
    # The agent imports this module; it must not drag in dagster or memory_assets.
    code = (
        "import sys, retrieval.credentials;"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('dagster', 'memory_assets')];"
        "sys.exit(1 if bad else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[1]).returncode == 0
