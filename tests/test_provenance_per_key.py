"""Provenance per key (issue 30, item 5): every write records the key and agent it came
from; another agent's writes are ``agent_stated``, carry ``[from: agent]``, rank below
what the user said on a conflict and never retire it; a line from a shared namespace
carries ``[shared: NAME]``.

The app is the one ``memory serve`` builds, over a copy of the published personal sample
(namespace ``default``: Aaron's WRX oil change is due at 11,799 miles).
"""

from __future__ import annotations

import contextlib
import io
from datetime import datetime, timedelta, timezone

import dagster as dg
import polars as pl
import pytest
import sqlalchemy as sa

from memory_assets import cli
from memory_assets.cli.runner import materialize_pending
from memory_assets.lib import warehouse
from retrieval.agent import trust
from retrieval.agent.search import Hit
from retrieval.agent.view import View
from retrieval.config import load_config
from retrieval.paths import DataRoot
from retrieval.service.keys import KeyStore
from tests.conftest import copy_root

OIL = "When is the WRX oil change due?"
CLAIM = "Aaron's WRX oil change is actually due at 50,000 miles."
NOW = datetime(2026, 11, 1, tzinfo=timezone.utc)


def _key(root, *args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["--data-root", str(root), "keys", "create", *args]) == 0
    return out.getvalue().strip()


@pytest.fixture(scope="module")
def served(personal_root, tmp_path_factory):
    """(the test client, headers by who, the data root): ``default`` is the user's own
    agent (named after its namespace), ``garage-bot`` another agent writing the same
    namespace, ``carol`` a reader of her own namespace who was granted ``default``."""
    from fastapi.testclient import TestClient

    from retrieval.service.app import build

    root = copy_root(personal_root, tmp_path_factory.mktemp("provenance"))
    keys = {"user": _key(root, "default"), "bot": _key(root, "garage-bot", "--namespace", "default"),
            "carol": _key(root, "carol", "--grant", "default")}
    client = TestClient(build(root)[1], raise_server_exceptions=False).__enter__()
    yield client, {who: {"Authorization": f"Bearer {key}"} for who, key in keys.items()}, root
    client.__exit__(None, None, None)


def _inject(served, who: str = "user", context: str = OIL) -> list[dict]:
    client, headers, _ = served
    answer = client.post("/v1/inject", json={"context": context}, headers=headers[who])
    assert answer.status_code == 200, answer.text
    return answer.json()["items"]


@pytest.fixture(scope="module")
def claimed(served):
    """The bot's claim and a transcript it hands over, what the user read before the run,
    then one pipeline run."""
    client, headers, root = served
    said = client.post("/v1/remember", json={"content": CLAIM}, headers=headers["bot"])
    assert said.status_code == 202, said.text
    before = _inject(served)
    said_turn = {"role": "user", "content": "My WRX oil change is due at 60,000 miles now."}
    # A caller cannot say who wrote it: the key does.
    forged = client.post("/v1/sessions/bot-s1/flush", headers=headers["bot"],
                         json={"messages": [{**said_turn, "written_by": "user:default:000000000000"}]})
    assert forged.status_code == 422 and "written_by" in forged.text
    flushed = client.post("/v1/sessions/bot-s1/flush", json={"messages": [said_turn]}, headers=headers["bot"])
    assert flushed.status_code in (200, 202), flushed.text
    with dg.instance_for_test() as instance:
        assert not materialize_pending(DataRoot.resolve(root), instance=instance).failed
    return {"said": said.json(), "before": before}


def test_a_key_named_after_its_namespace_is_the_users_and_any_other_is_another_agents(tmp_path):
    keys = KeyStore(sa.create_engine(f"sqlite:///{tmp_path / 'keys.db'}"))
    assert keys.create("alice")[1].role == "user"
    assert keys.create("research-bot", "alice")[1].role == "agent"
    assert keys.create("phone", "alice", role="user")[1].role == "user"
    assert {k.agent: k.role for k in keys.list()} == {"alice": "user", "research-bot": "agent", "phone": "user"}


def test_a_key_database_made_before_roles_gains_the_column(tmp_path):
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'old.db'}")
    with engine.begin() as db:
        db.execute(sa.text("CREATE TABLE api_keys (key_id VARCHAR(12) PRIMARY KEY, secret_sha256 VARCHAR(64) NOT NULL,"
                           " agent VARCHAR(128) NOT NULL, namespace VARCHAR(128) NOT NULL, grants TEXT NOT NULL,"
                           " writes_per_minute INTEGER, created_at DATETIME NOT NULL, revoked_at DATETIME)"))
        db.execute(sa.text("INSERT INTO api_keys VALUES ('0123456789ab', 'x', 'bot', 'alice', '[]', NULL,"
                           " '2026-01-01 00:00:00', NULL)"))
    keys = KeyStore(engine)
    assert [(k.agent, k.role) for k in keys.list()] == [("bot", "agent")]  # derived: not named after alice


def test_another_agents_pending_claim_follows_the_users_word_and_says_whose_it_is(served, claimed):
    assert claimed["said"]["provenance"] == "agent_stated"
    before = claimed["before"]
    pending = [i for i in before if i["content"] == CLAIM]
    assert pending and pending[0]["flags"] == ["[pending]", "[from: agent]"]
    user = next(n for n, i in enumerate(before) if "11,799" in i["content"])
    assert user < before.index(pending[0])


def test_every_stored_turn_names_the_key_that_wrote_it_and_a_caller_cannot_forge_it(served, claimed):
    _, _, root = served
    turns = warehouse.read_resources(DataRoot.resolve(root)).filter(pl.col("written_by").is_not_null())
    writers = set(turns["written_by"].to_list())
    assert len(writers) == 1 and next(iter(writers)).startswith("agent:garage-bot:")
    assert turns.height == 2  # the remember and the flushed turn


def test_another_agents_claim_is_stored_as_its_claim_and_retires_nothing_the_user_said(served, claimed):
    from retrieval.agent.client import MemoryClient

    _, _, root = served
    operator = MemoryClient(root, namespace="*")
    rows = operator.list(status=None, limit=500)
    claims = [r for r in rows if r["provenance"] == "agent_stated"]
    assert claims and all("50,000" in r["content"] or "60,000" in r["content"] for r in claims)
    user = [r for r in rows if "11,799" in r["content"] and r["provenance"] != "agent_stated"]
    assert user and all(r["status"] == "active" for r in user)


def test_the_users_word_leads_the_block_and_the_claim_is_marked(served, claimed):
    items = _inject(served)
    user = next(n for n, i in enumerate(items) if "11,799" in i["content"])
    claims = [n for n, i in enumerate(items) if "50,000" in i["content"] or "60,000" in i["content"]]
    assert claims and all("[from: agent]" in items[n]["flags"] for n in claims)
    assert "[conflict: agent claim]" in items[claims[0]]["flags"]
    assert user < min(claims) and "[from: agent]" not in items[0]["flags"]


def test_a_line_from_a_shared_namespace_says_so(served, claimed):
    items = _inject(served, "carol")
    assert items and all("[shared: default]" in i["flags"] for i in items)


def test_an_agents_rewording_is_its_claim_not_the_users_correction(served, claimed):
    client, headers, _ = served
    target = next(i for i in _inject(served) if "11,799" in i["content"])
    answer = client.patch(f"/v1/items/{target['id']}", json={"content": "Aaron's WRX oil change is due at 99,999 miles"},
                          headers=headers["bot"])
    assert answer.status_code == 202, answer.text
    reworded = next(i for i in _inject(served) if i["id"] == target["id"])
    assert "99,999" in reworded["content"] and "[from: agent]" in reworded["flags"]


# -- the trust pass, on its own ------------------------------------------------------------------

def _hit(hit_id: str, confidence: float, provenance: str, days_ago: int) -> Hit:
    return Hit(id=hit_id, content=hit_id, category="vehicle", importance=0.5, confidence=confidence,
               source_trust="trusted", session_id="s", source_resource_ids=[], source_turn_ids=[], relevance=1.0,
               score=1.0, row={"provenance": provenance, "created_at": NOW - timedelta(days=days_ago),
                               "namespace": "default"})


def test_a_newer_surer_claim_still_ranks_below_the_users_older_word():
    user, claim = _hit("user", 0.7, "user_stated", 30), _hit("claim", 0.95, "agent_stated", 0)
    pairs = {("claim", "user")}
    assert [h.id for h in trust.order([claim, user], pairs)] == ["user", "claim"]
    flags = trust.flags([user, claim], load_config(), NOW, pairs=pairs, view=View(namespace="default"))
    assert flags["claim"] == ["[conflict: agent claim]", "[from: agent]"]
    assert flags["user"] == ["[conflict]"]
    # Two claims, or two of the user's words: confidence decides, as before.
    other = _hit("other", 0.5, "agent_stated", 1)
    assert trust.losers([claim, other], {("claim", "other")}) == {"other"}


def test_two_claims_against_the_users_word_both_stay_below_it_whatever_their_ids():
    # Ranked: a surer claim, a second claim, the user's word, an unrelated line, a user line
    # the first claim also contradicts. Swapping pair by pair in id order lifted the surer
    # claim back above the user's word once the two claims were compared.
    surer, claim, user = _hit("b", 0.95, "agent_stated", 0), _hit("d", 0.9, "agent_stated", 2), _hit("c", 0.8, "user_stated", 30)
    unrelated, booked = _hit("x", 0.8, "user_stated", 5), _hit("a", 0.8, "user_stated", 20)
    pairs = {("a", "b"), ("b", "c"), ("b", "d"), ("c", "d")}
    for ids in (pairs, {tuple(reversed(p)) for p in pairs}):
        ordered = [h.id for h in trust.order([surer, claim, user, unrelated, booked], ids)]
        assert ordered.index("x") == 3  # not in a conflict: keeps its place
        assert max(ordered.index("a"), ordered.index("c")) < min(ordered.index("b"), ordered.index("d"))
        assert ordered.index("b") < ordered.index("d")  # between two claims, the likelier first


def test_another_agents_import_is_its_claim_whatever_its_lines_say(personal_root, tmp_path):
    import json

    from retrieval.agent.client import MemoryClient
    from retrieval.service import exports

    root = copy_root(personal_root, tmp_path)
    owner = MemoryClient(root)
    text = "\n".join(exports.export(owner, "default"))
    bot = owner.scoped("default", author="agent:garage-bot:0123456789ab")
    assert exports.import_text(bot, "default", text)["written"]
    [written] = list((root / "imports").glob("*.jsonl"))
    items = [r for r in map(json.loads, written.read_text().splitlines()) if r.get("type") == "item"]
    assert items and {r["provenance"] for r in items} == {"agent_stated"}
