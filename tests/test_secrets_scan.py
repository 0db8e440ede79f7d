"""0 secrets anywhere under the data root, after every job a user would run.

A transcript carrying more than 50 freshly generated secrets and personal numbers of
common shapes (made here at random each run: none is written in the repository) goes
through ingest, materialize, the nightly, weekly and monthly jobs; the agent also
searches with a secret in its context, updates a memory with one and flushes a session
holding one. Then every file under the data root is scanned: its raw bytes, every string
of every Parquet file (Parquet compresses), of every DuckDB table (DuckDB compresses
strings too), of every version of every LanceDB table, and of every SQLite table
(Dagster's run history and event log live under the data root here, as with `memory`;
SQLite splits long text across pages). A secret counts as found when its full value or
any of its distinctive parts (the value without its public prefix, its first or last
twelve characters) appears anywhere.
"""

from __future__ import annotations

import base64
import json
import secrets
import sqlite3
import string
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import dagster as dg
import duckdb
import lancedb
import pyarrow.parquet as pq

from memory_assets.cli import main as memory
from memory_assets.cli.runner import materialize_pending, run_job
from retrieval import MemoryClient
from retrieval.paths import DataRoot
from retrieval.store import ItemStore
from tests.test_credentials import luhn_card

T0 = datetime(2026, 9, 1, 9, tzinfo=timezone.utc)
LOWER, UPPER, DIGITS = string.ascii_lowercase, string.ascii_uppercase, string.digits
HEX = "0123456789abcdef"
B64 = LOWER + UPPER + DIGITS
URL = B64 + "_-"


def _r(n: int, alphabet: str = B64) -> str:
    """Random characters, with a digit, an upper and a lower letter wherever the alphabet has them."""
    while True:
        value = "".join(secrets.choice(alphabet) for _ in range(n))
        kinds = [set(value) & set(a) for a in (LOWER, UPPER, DIGITS) if set(a) & set(alphabet)]
        if all(kinds) or n < 6:
            return value


@dataclass(frozen=True)
class Secret:
    """One secret in the corpus: the sentence that carries it and the parts that must never be stored."""

    shape: str
    text: str
    value: str
    body: str  # the value without its public prefix (glpat-, sk_live_, …)

    def parts(self) -> set[str]:
        """The value, its body, and the body's first and last 12 characters when it is long.

        A value shorter than 8 characters (a 4-digit PIN) turns up by chance in megabytes
        of timestamps and ids, so it counts only with the words before it ("code is 4471").
        """
        if len(self.body) < 8:
            start = self.text.index(self.value)
            return {self.text[max(0, start - 12):start] + self.value}
        out = {self.value, self.body}
        if len(self.body) >= 24:
            out |= {self.body[:12], self.body[-12:]}
        if self.shape.startswith("card"):
            out.add(self.value.replace(" ", "").replace("-", ""))
        return out


def _secret(shape: str, template: str, prefix: str, body: str, suffix: str = "") -> Secret:
    value = prefix + body + suffix
    return Secret(shape, template.format(s=value), value, body)


def _ssn() -> str:
    area = secrets.choice([n for n in range(1, 900) if n != 666])
    return f"{area:03d}-{secrets.randbelow(99) + 1:02d}-{secrets.randbelow(9999) + 1:04d}"


def _ni_number() -> str:
    return "".join(secrets.choice("ACEHJLMPRSW") for _ in range(2)) + " " + " ".join(
        f"{secrets.randbelow(100):02d}" for _ in range(3)) + " " + secrets.choice("ABCD")


def _discord_token() -> tuple[str, str]:
    """A bot token: base64 of the bot's numeric id, a timestamp part, an HMAC part."""
    first = base64.b64encode(str(10 ** 17 + secrets.randbelow(9 * 10 ** 17)).encode()).decode().rstrip("=")
    return first + ".", _r(6, URL) + "." + _r(38, URL)


def _iban() -> str:
    from stdnum import iban

    bban = _r(18, DIGITS)
    return "DE" + iban.calc_check_digits("DE00" + bban) + bban


def _phone() -> str:
    """A US number libphonenumber holds valid, written as people write it."""
    import phonenumbers

    while True:
        number = f"({secrets.choice('23456789')}{_r(2, DIGITS)}) {secrets.choice('23456789')}{_r(2, DIGITS)}-{_r(4, DIGITS)}"
        if phonenumbers.is_valid_number(phonenumbers.parse(number, "US")):
            return number


def _full_width(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def everyday() -> list[Secret]:
    """Secrets in the words people use and in disguise (issue 30, item 4): each is found
    through the message's own words, its NFKC form or a decoding."""
    s = _secret
    ghp = "ghp" + "_" + _r(36)
    encoded = base64.b64encode(ghp.encode()).decode()
    discord_first, discord_rest = _discord_token()
    body = _r(36)
    return [
        s("pw_colon", "pw: {s}", "", "Tr0" + _r(9)),
        s("account_pair", "the NAS login is admin / {s}", "", "Nas" + _r(9) + "!"),
        s("my_pass", "my pass is {s} for the gym site", "", "Gym" + _r(9)),
        s("possessive_password", "My Gmail password's {s}", "", "Gm" + _r(10)),
        s("german_password", "Mein Passwort ist {s}", "", "Pw" + _r(10)),
        s("aws_key_id_lower", "the old key id {s} still works", "akia", _r(16, LOWER + DIGITS)),
        Secret("github_base64", f"here it is in base64: {encoded}", encoded, encoded),
        Secret("github_zero_width", f"my token is g\u200bhp_{body}", f"g\u200bhp_{body}", body),
        Secret("github_full_width", f"my token is {_full_width('ghp_' + body[::-1])}",
               _full_width("ghp_" + body[::-1]), body[::-1]),
        s("iban", "wire it to my IBAN {s} by Friday", "", _iban()),
        s("datadog_no_colon", "Datadog API key {s}", "", _r(32, HEX)),
        s("discord_unnamed", "the moderation app runs on {s}", discord_first, discord_rest),
        s("phone", "call me on {s} after six", "", _phone()),
        s("email", "write to me at {s} instead", "", _r(9, LOWER) + "@" + _r(9, LOWER) + ".com"),
    ]


def corpus() -> list[Secret]:
    """Every shape ``retrieval.credentials`` redacts, each in a sentence a user or a tool would write."""
    card = luhn_card("4", 16, fill=_r(14, DIGITS))
    amex = luhn_card("37", 15, fill=_r(12, DIGITS))
    mastercard = luhn_card("5", 16, fill=str(secrets.randbelow(5) + 1) + _r(13, DIGITS))
    pem = _r(64) + "\n" + _r(64) + "\n" + _r(40)
    discord_first, discord_rest = _discord_token()
    s = _secret
    return [
        s("openai", "My OpenAI key is {s}, use it for the eval.", "sk-" + "proj-", _r(48, URL)),
        s("anthropic", "The Claude key: {s}", "sk-" + "ant-api03-", _r(80, URL)),
        s("aws_key_id", "AWS access key id {s} is for the backups.", "AKIA", _r(16, UPPER + DIGITS)),
        s("aws_secret_prose", "and the secret {s} goes with it", "", _r(30) + "/" + _r(9)),
        s("aws_secret_assigned", "aws_secret_access_key = {s}", "", _r(40)),
        s("github_classic", "git push with {s} works", "ghp" + "_", _r(36)),
        s("github_fine", "fine-grained token {s}", "github" + "_pat_", _r(22) + "_" + _r(59)),
        s("gitlab", "our GitLab token is {s}", "glpat" + "-", _r(20, URL)),
        s("slack", "Slack bot token {s} for alerts", "xox" + "b-", _r(12, DIGITS) + "-" + _r(24)),
        s("slack_hook", "alerts go to {s}", "https://hooks.slack.com/services/",
          "T" + _r(8, UPPER + DIGITS) + "/B" + _r(8, UPPER + DIGITS) + "/" + _r(24)),
        s("stripe", "Stripe secret {s} is live", "sk" + "_live_", _r(24)),
        s("stripe_restricted", "restricted key {s}", "rk" + "_live_", _r(24)),
        s("google", "maps key {s}", "AIza", _r(35, URL)),
        s("google_oauth", "the OAuth client secret is {s}", "GOCSPX" + "-", _r(28, URL)),
        s("sendgrid", "SendGrid: {s}", "SG" + ".", _r(22, URL) + "." + _r(43, URL)),
        s("twilio", "Twilio API key {s}", "SK", _r(32, HEX)),
        s("twilio_auth", "the Twilio auth token is {s}", "", _r(32, HEX)),
        s("npm", "publish with {s}", "npm" + "_", _r(36)),
        s("pypi", "twine uses {s}", "pypi" + "-AgEIcHlwaS5vcmc", _r(60, URL)),
        s("huggingface", "my Hugging Face token is {s}", "hf" + "_", _r(34)),
        s("mailgun", "Mailgun {s} for the newsletter", "key" + "-", _r(32, LOWER + DIGITS)),
        s("datadog", "the Datadog API key is {s}", "", _r(32, HEX)),
        s("discord", "Discord bot token: {s}", discord_first, discord_rest),
        s("discord_hook", "ping {s}", "https://discord.com/api/webhooks/" + _r(18, DIGITS) + "/", _r(68, URL)),
        s("telegram", "Telegram bot {s}", _r(10, DIGITS) + ":AA", _r(33, URL)),
        s("shopify", "Shopify admin token {s}", "shpat" + "_", _r(32, HEX)),
        s("digitalocean", "doctl token {s}", "dop" + "_v1_", _r(64, HEX)),
        s("linear", "Linear key {s}", "lin" + "_api_", _r(40)),
        s("doppler", "Doppler token {s}", "dp" + ".st." + "prd.", _r(43)),
        s("postman", "Postman {s}", "PMAK" + "-", _r(24, HEX) + "-" + _r(34, HEX)),
        s("atlassian", "Jira API token {s}", "ATATT" + "3xFfGF0", _r(170, URL)),
        s("heroku", "heroku authorizations gave {s}", "HRKU" + "-AA", _r(58, URL)),
        s("square", "Square access token {s}", "EAAA", _r(60, URL)),
        s("vault", "VAULT_TOKEN is {s}", "hvs" + ".", _r(90, URL)),
        s("databricks", "Databricks PAT {s}", "dapi", _r(32, HEX)),
        s("grafana", "Grafana service account token {s}", "glsa" + "_", _r(32) + "_" + _r(8, HEX)),
        s("sentry", "SENTRY_AUTH_TOKEN={s}", "sntrys" + "_", _r(80)),
        s("azure_key", "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={s};"
          "EndpointSuffix=core.windows.net", "", _r(86), "=="),
        s("azure_sas", "https://acme.blob.core.windows.net/c/f.csv?sv=2022-11-02&sp=r&sig={s}", "", _r(43), "%3D"),
        s("azure_client_secret", "the app registration secret {s} expires in June", _r(3) + "8Q~", _r(34, URL)),
        s("gcp_key_id", '{{"type": "service_account", "private_key_id": "{s}"}}', "", _r(40, HEX)),
        s("gcp_private_key", '{{"type": "service_account", "private_key": "-----BEGIN ' + 'PRIVATE KEY-----\\n{s}'
          '\\n-----END ' + 'PRIVATE KEY-----\\n"}}', "", _r(64) + "\\n" + _r(64)),
        s("pem", "-----BEGIN " + "PRIVATE KEY-----\n{s}\n-----END " + "PRIVATE KEY-----", "", pem),
        s("ssh", "-----BEGIN OPENSSH " + "PRIVATE KEY-----\n{s}\n-----END OPENSSH " + "PRIVATE KEY-----", "",
          _r(70)),
        s("jwt", "session cookie {s}", "eyJ", _r(20, URL) + ".eyJ" + _r(30, URL) + "." + _r(43, URL)),
        s("basic_auth_url", "clone https://dana:{s}@git.acme.dev/app.git", "", "Pw" + _r(12)),
        s("postgres", "DATABASE_URL=postgres://app:{s}@db.internal:5432/app", "", "Pg" + _r(12)),
        s("bearer", "curl -H 'Authorization: Bearer {s}' https://api.acme.dev", "", _r(32)),
        s("generic", "my api key is {s}", "", _r(28)),
        s("prose_password", "my password is {s} for the router", "", "Tr0" + _r(9) + "!"),
        s("env_db_pass", "DB_PASS={s}", "", "hunter" + _r(4, LOWER + DIGITS)),
        s("env_mailgun", "MAILGUN_KEY={s}", "key-", _r(8, LOWER + DIGITS)),
        s("env_yaml", "services:\n  db:\n    environment:\n      DB_PASSWORD: {s}\n", "", _r(12, LOWER + DIGITS)),
        s("env_json", '{{"db_pass": "{s}", "port": 5432}}', "", _r(10, LOWER + DIGITS)),
        s("pin", "the garage door code is {s}", "", _r(4, "123456789")),
        s("card_spaced", "my card is {s}, expires 04/29", "", " ".join(card[i:i + 4] for i in range(0, 16, 4))),
        s("card_amex", "amex {s} 1234", "", f"{amex[:4]} {amex[4:10]} {amex[10:]}"),
        s("card_mastercard", "charge {s} please", "", mastercard),
        s("ssn", "my SSN is {s}", "", _ssn()),
        s("ni_number", "my National Insurance number is {s}", "", _ni_number()),
        *everyday(),
    ]


# Turns that say what a user, an assistant or a tool would say around a secret.
_FRAMES = {
    "user": "{text}",
    "assistant": "Noted. I will not repeat it, but for the record you said: {text}",
    "tool": "$ cat notes.txt\n{text}\n$ echo done\ndone",
}
FACTS = ["I drive a 2019 Subaru WRX and its oil change is due at 11,799 miles.",
         "My sister Priya moved to Lisbon last spring."]


def _transcript(path: Path, carried: list[Secret]) -> Path:
    roles = list(_FRAMES)
    lines = [{"session_id": "secrets", "turn": n, "role": "user", "content": fact,
              "ts": (T0 + timedelta(minutes=n)).isoformat()} for n, fact in enumerate(FACTS, start=1)]
    for n, secret in enumerate(carried, start=len(FACTS) + 1):
        role = roles[n % 3]
        lines.append({"session_id": "secrets", "turn": n, "role": role,
                      "content": _FRAMES[role].format(text=secret.text),
                      "ts": (T0 + timedelta(minutes=n)).isoformat()})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return [bytes(value).decode("utf-8", errors="replace")]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    return []


def _rows_text(rows) -> str:
    return "\n".join(s for row in rows for s in _strings(row))


def _texts_under(root: Path) -> dict[str, str]:
    """Where → text: raw bytes of every file; decoded Parquet, DuckDB and SQLite tables; every LanceDB version."""
    out: dict[str, str] = {}
    for file in sorted(root.rglob("*")):
        if not file.is_file():
            continue
        out[str(file)] = file.read_bytes().decode("utf-8", errors="replace")
        if file.suffix == ".parquet":
            out[f"{file} (decoded)"] = _rows_text(pq.read_table(file).to_pylist())
        elif file.suffix == ".duckdb":
            with duckdb.connect(str(file), read_only=True) as db:
                tables = db.execute("SELECT table_schema, table_name FROM information_schema.tables "
                                    "WHERE table_type = 'BASE TABLE'").fetchall()
                for schema, name in tables:
                    rows = db.execute(f'SELECT * FROM "{schema}"."{name}"').fetchall()
                    out[f"{file} table {schema}.{name}"] = _rows_text(rows)
        elif file.suffix in (".db", ".sqlite", ".sqlite3"):
            with sqlite3.connect(f"file:{file}?mode=ro", uri=True) as db:
                names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
                for name in names:
                    out[f"{file} table {name}"] = _rows_text(db.execute(f'SELECT * FROM "{name}"').fetchall())
    lance = root / "lancedb"
    if lance.exists():
        db = lancedb.connect(str(lance))
        for name in db.list_tables().tables:
            table = db.open_table(name)
            for version in table.list_versions():
                table.checkout(version["version"])
                data = table.to_arrow()
                if "vector" in data.column_names:
                    data = data.drop_columns(["vector"])
                out[f"lancedb/{name} v{version['version']}"] = _rows_text(data.to_pylist())
    return out


def test_no_secret_is_found_anywhere_under_the_data_root(tmp_path):
    carried = corpus()
    # Secrets that reach the data root only through the agent's own calls.
    in_context = _secret("inject_context", "Also, my GitLab deploy token is {s}", "gldt" + "-", _r(24, URL))
    in_update = _secret("update_content", "and the garage wifi password is {s}", "", "Wifi" + _r(10) + "#")
    in_flush = _secret("flush_session", "my OpenAI key is {s}", "sk-" + "proj-", _r(48, URL))
    everything = carried + [in_context, in_update, in_flush]
    assert len(carried) >= 40
    assert len({p for s in everything for p in s.parts()}) >= len(everything)  # all distinct

    root = tmp_path / "data"
    paths = DataRoot.resolve(root)
    transcript = _transcript(tmp_path / "secrets.jsonl", carried)
    assert memory(["--data-root", str(root), "ingest", str(transcript)]) == 0
    (root / "dagster").mkdir(parents=True)
    with dg.instance_for_test(temp_dir=str(root / "dagster")) as instance:
        materialize_pending(paths, instance=instance, now=T0 + timedelta(hours=1))
        client = MemoryClient(root)
        block = client.inject(f"When is the WRX oil change due? {in_context.text}", now=T0 + timedelta(hours=2))
        assert "11,799" in block.text
        client.update(block.items[0].id, f"Aaron's WRX oil change is due at 11,799 miles; {in_update.text}",
                      now=T0 + timedelta(hours=2))
        client.flush_session("late", [{"role": "user", "content": in_flush.text, "ts": T0.isoformat()}])
        for job, days in (("nightly", 1), ("weekly", 8), ("monthly", 40)):
            assert run_job(paths, job, now=T0 + timedelta(days=days), extractor="offline", instance=instance)

    contents = ItemStore(paths).items()["content"].to_list()
    assert any("11,799 miles" in c for c in contents)  # the pipeline ran for real
    assert any("Lisbon" in c for c in contents)
    texts = _texts_under(root)
    assert any(" table " in where and "/dagster/" in where for where in texts), "Dagster's storage was not scanned"
    assert any("[REDACTED:" in text for text in texts.values())  # redaction ran where the secrets entered
    found = sorted({(secret.shape, where.removeprefix(str(root)))
                    for secret in everything for part in secret.parts()
                    for where, text in texts.items() if part in text})
    leaked = sorted({shape for shape, _ in found})
    assert not found, (f"{len(leaked)} of {len(everything)} secrets found under the data root ({', '.join(leaked)}):\n"
                       + "\n".join(f"  {shape}: {where}" for shape, where in found))
