"""0 secrets anywhere under the data root, after every job a user would run.

A transcript carrying more than 40 freshly generated secrets and personal numbers of
common shapes (made here at random: none is written in the repository) goes through
ingest, materialize, the nightly, weekly and monthly jobs; the agent also searches with
a secret in its context, updates a memory with one and flushes a session holding one.
Then every file under the data root is scanned: its raw bytes, every string of every
Parquet file (Parquet compresses), every version of every LanceDB table, and Dagster's
own run history (its SQLite storage lives under the data root here, as with `memory`).
"""

from __future__ import annotations

import json
import secrets
import string
from datetime import datetime, timedelta, timezone
from pathlib import Path

import dagster as dg
import lancedb
import pyarrow.parquet as pq

from memory_assets.cli import main as memory
from memory_assets.lib.runner import materialize_pending, run_job
from retrieval import MemoryClient
from retrieval.paths import DataRoot
from retrieval.store import ItemStore
from tests.test_credentials import luhn_card

T0 = datetime(2026, 9, 1, 9, tzinfo=timezone.utc)
LOWER, UPPER, DIGITS = string.ascii_lowercase, string.ascii_uppercase, string.digits
HEX = "0123456789abcdef"


def _r(n: int, alphabet: str = LOWER + UPPER + DIGITS) -> str:
    """Random characters, with a digit, an upper and a lower letter wherever the alphabet has them."""
    while True:
        value = "".join(secrets.choice(alphabet) for _ in range(n))
        kinds = [set(value) & set(a) for a in (LOWER, UPPER, DIGITS) if set(a) & set(alphabet)]
        if all(kinds) or n < 6:
            return value


def _luhn(prefix: str, length: int) -> str:
    return luhn_card(prefix, length, fill=_r(length - len(prefix) - 1, DIGITS))


def _ssn() -> str:
    return f"{secrets.randbelow(600) + 100:03d}-{secrets.randbelow(89) + 10:02d}-{secrets.randbelow(8999) + 1000:04d}"


def corpus() -> list[tuple[str, str, str]]:
    """(shape, the sentence a user would paste, the secret part that must never be stored)."""
    b64 = LOWER + UPPER + DIGITS
    url = b64 + "_-"
    pem_body = _r(64, b64) + "\n" + _r(64, b64)
    card = _luhn("4", 16)
    aws_secret = _r(30, b64) + "/" + _r(9, b64)
    shapes = {
        "openai": ("sk-" + "proj-" + _r(40, url), "My OpenAI key is {s}, use it for the eval."),
        "anthropic": ("sk-" + "ant-api03-" + _r(60, url), "The Claude key: {s}"),
        "aws_key_id": ("AKIA" + _r(16, UPPER + DIGITS), "AWS access key id {s} is for the backups."),
        "aws_secret_prose": (aws_secret, "and the secret {s} goes with it"),
        "aws_secret_assigned": (_r(40, b64), "aws_secret_access_key = {s}"),
        "github_classic": ("ghp" + "_" + _r(36, b64), "git push with {s} works"),
        "github_fine": ("github" + "_pat_" + _r(22, b64) + "_" + _r(59, b64), "fine-grained token {s}"),
        "gitlab": ("glpat" + "-" + _r(20, url), "our GitLab token is {s}"),
        "slack": ("xox" + "b-" + _r(12, DIGITS) + "-" + _r(24, b64), "Slack bot token {s} for alerts"),
        "slack_hook": ("https://hooks.slack.com/services/T" + _r(8, UPPER + DIGITS) + "/B" + _r(8, UPPER + DIGITS)
                       + "/" + _r(24, b64), "alerts go to {s}"),
        "stripe": ("sk" + "_live_" + _r(24, b64), "Stripe secret {s} is live"),
        "stripe_restricted": ("rk" + "_live_" + _r(24, b64), "restricted key {s}"),
        "google": ("AIza" + _r(35, url), "maps key {s}"),
        "sendgrid": ("SG" + "." + _r(22, url) + "." + _r(43, url), "SendGrid: {s}"),
        "twilio": ("SK" + _r(32, HEX), "Twilio API key {s}"),
        "npm": ("npm" + "_" + _r(36, b64), "publish with {s}"),
        "pypi": ("pypi" + "-AgEIcHlwaS5vcmc" + _r(60, url), "twine uses {s}"),
        "huggingface": ("hf" + "_" + _r(34, b64), "my Hugging Face token is {s}"),
        "mailgun": ("key" + "-" + _r(32, LOWER + DIGITS), "Mailgun {s} for the newsletter"),
        "datadog": (_r(32, HEX), "the Datadog API key is {s}"),
        "discord": ("MT" + _r(24, b64) + "." + _r(6, url) + "." + _r(38, url), "Discord bot token: {s}"),
        "discord_hook": ("https://discord.com/api/webhooks/" + _r(18, DIGITS) + "/" + _r(68, url), "ping {s}"),
        "telegram": (_r(10, DIGITS) + ":AA" + _r(33, url), "Telegram bot {s}"),
        "shopify": ("shpat" + "_" + _r(32, HEX), "Shopify admin token {s}"),
        "digitalocean": ("dop" + "_v1_" + _r(64, HEX), "doctl token {s}"),
        "linear": ("lin" + "_api_" + _r(40, b64), "Linear key {s}"),
        "doppler": ("dp" + ".st." + "prd." + _r(43, b64), "Doppler token {s}"),
        "postman": ("PMAK" + "-" + _r(24, HEX) + "-" + _r(34, HEX), "Postman {s}"),
        "azure_key": (_r(86, b64) + "==", "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={s};"
                                          "EndpointSuffix=core.windows.net"),
        "azure_sas": (_r(43, b64) + "%3D", "https://acme.blob.core.windows.net/c/f.csv?sv=2022-11-02&sp=r&sig={s}"),
        "gcp_key_id": (_r(40, HEX), '{{"type": "service_account", "private_key_id": "{s}"}}'),
        "pem": (pem_body, "-----BEGIN " + "PRIVATE KEY-----\n{s}\n-----END " + "PRIVATE KEY-----"),
        "ssh": (_r(70, b64), "-----BEGIN OPENSSH " + "PRIVATE KEY-----\n{s}\n-----END OPENSSH " + "PRIVATE KEY-----"),
        "jwt": ("eyJ" + _r(20, url) + ".eyJ" + _r(30, url) + "." + _r(43, url), "session cookie {s}"),
        "basic_auth_url": ("Pw" + _r(12, b64), "clone https://dana:{s}@git.acme.dev/app.git"),
        "postgres": ("Pg" + _r(12, b64), "DATABASE_URL=postgres://app:{s}@db.internal:5432/app"),
        "prose_password": ("Tr0" + _r(9, b64) + "!", "my password is {s} for the router"),
        "env_db_pass": ("hunter" + _r(4, LOWER + DIGITS), "DB_PASS={s}"),
        "env_mailgun": ("key-" + _r(8, LOWER + DIGITS), "MAILGUN_KEY={s}"),
        "bearer": (_r(32, b64), "curl -H 'Authorization: Bearer {s}' https://api.acme.dev"),
        "card": (" ".join(card[i:i + 4] for i in range(0, 16, 4)), "my card is {s}, expires 04/29"),
        "ssn": (_ssn(), "my SSN is {s}"),
        "pin": (_r(4, "123456789"), "the garage door code is {s}"),
    }
    return [(shape, text.format(s=value), value) for shape, (value, text) in shapes.items()]


def _transcript(path: Path, shapes: list[tuple[str, str, str]]) -> Path:
    lines = [{"session_id": "secrets", "turn": 1, "role": "user", "ts": T0.isoformat(),
              "content": "I drive a 2019 Subaru WRX and its oil change is due at 11,799 miles."}]
    for n, (_, text, _) in enumerate(shapes, start=2):
        role = "tool" if n % 7 == 0 else "user"
        lines.append({"session_id": "secrets", "turn": n, "role": role, "content": text,
                      "ts": (T0 + timedelta(minutes=n)).isoformat()})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


def _texts_under(root: Path) -> dict[str, str]:
    """Where → text: raw bytes of every file, decoded Parquet strings, every LanceDB version."""
    out: dict[str, str] = {}
    for file in root.rglob("*"):
        if not file.is_file():
            continue
        out[str(file)] = file.read_bytes().decode("utf-8", errors="replace")
        if file.suffix == ".parquet":
            table = pq.read_table(file)
            out[f"{file} (decoded)"] = "\n".join(s for row in table.to_pylist() for s in _strings(row))
    lance = root / "lancedb"
    if lance.exists():
        db = lancedb.connect(str(lance))
        for name in db.list_tables().tables:
            table = db.open_table(name)
            for version in table.list_versions():
                table.checkout(version["version"])
                rows = table.to_arrow().drop_columns(["vector"]).to_pylist()
                out[f"lancedb/{name} v{version['version']}"] = "\n".join(s for row in rows for s in _strings(row))
    return out


def test_no_secret_is_found_anywhere_under_the_data_root(tmp_path):
    shapes = corpus()
    assert len(shapes) >= 40 and len({s for _, _, s in shapes}) == len(shapes)
    root = tmp_path / "data"
    paths = DataRoot.resolve(root)
    transcript = _transcript(tmp_path / "secrets.jsonl", shapes)
    assert memory(["--data-root", str(root), "ingest", str(transcript)]) == 0
    (root / "dagster").mkdir(parents=True)
    with dg.instance_for_test(temp_dir=str(root / "dagster")) as instance:
        materialize_pending(paths, instance=instance, now=T0 + timedelta(hours=1))
        client = MemoryClient(root)
        block = client.inject(f"When is the WRX oil change due? {shapes[0][1]}", now=T0 + timedelta(hours=2))
        assert "11,799" in block.text
        client.update(block.items[0].id, f"Aaron's WRX oil change is due at 11,799 miles; {shapes[1][1]}",
                      now=T0 + timedelta(hours=2))
        client.flush_session("late", [{"role": "user", "content": shapes[2][1], "ts": T0.isoformat()}])
        for job, days in (("nightly", 1), ("weekly", 8), ("monthly", 40)):
            assert run_job(paths, job, now=T0 + timedelta(days=days), extractor="offline", instance=instance)
    contents = ItemStore(paths).items()["content"].to_list()
    assert any("11,799 miles" in c for c in contents)  # the pipeline ran for real
    texts = _texts_under(root)
    assert any(name.endswith(".db") or "sqlite" in name for name in texts), "Dagster's storage was not scanned"
    found = [(shape, where) for shape, _, secret in shapes for where, text in texts.items() if secret in text]
    assert found == [], f"{len({s for s, _ in found})} of {len(shapes)} secrets found: {found[:10]}"
