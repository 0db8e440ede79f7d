"""The user's word takes effect at once (issue 30, item 7): ``forget``, ``update``, ``pin``,
``unpin`` and ``erase`` change what ``search``, ``inject``, ``get`` and ``list`` return from
the next call, before any pipeline run, through the client, HTTP and MCP alike; the run
that publishes them removes the readers' copies, and an erasure scrubs them.
"""

from __future__ import annotations

import contextlib
import io
import json
from datetime import datetime, timezone

import dagster as dg
import pytest

from memory_assets import cli
from memory_assets.cli.runner import materialize_pending
from retrieval.agent.client import MemoryClient
from retrieval.paths import DataRoot
from tests.conftest import copy_root
from tests.test_doors import MCP_HEADERS

OIL = "When is the WRX oil change due?"
NEW = "Aaron's WRX oil change is now due at 12,500 miles"


def _ids(hits) -> list[str]:
    return [h.id for h in hits]


def _corrections(root) -> list[dict]:
    return [json.loads(f.read_text()) for f in sorted((root / "corrections").glob("*.json"))]


@pytest.fixture
def root(personal_root, tmp_path):
    return copy_root(personal_root, tmp_path)


def test_a_forgotten_memory_is_neither_found_nor_injected_from_the_next_call(root):
    client = MemoryClient(root)
    found = client.search(OIL, k=5)
    gone = found[0]
    assert gone.id in _ids(client.inject(OIL, record=False).items)
    client.forget(gone.id)
    assert gone.id not in _ids(client.search(OIL, k=5))
    assert gone.id not in _ids(client.inject(OIL, record=False).items)
    assert client.get(gone.id)["status"] == "purged"
    # Another reader of the same root (another process, say) sees it on its next call too.
    assert gone.id not in _ids(MemoryClient(root).search(OIL, k=5))
    # The slot it left is filled: the search still gives as many hits.
    assert len(client.search(OIL, k=5)) == len(found)


def test_a_new_wording_is_what_search_and_inject_show_before_any_run(root):
    client = MemoryClient(root)
    target = client.search(OIL, k=3)[0]
    other = MemoryClient(root)
    other.search(OIL, k=3)  # warm: its snapshot rows are cached before the update
    client.update(target.id, NEW, tags=["car"])
    shown = {h.id: h.content for h in other.search(OIL, k=5)}
    assert shown.get(target.id) == NEW
    assert NEW in other.inject(OIL, record=False).text
    row = other.get(target.id)
    assert (row["content"], row["tags"], row["provenance"]) == (NEW, ["car"], "user_corrected")
    # The copy readers hold is the stored event: redacted, named by its id.
    [held] = _corrections(root)
    assert held["type"] == "update" and held["item_ids"] == [target.id]


def test_pin_and_unpin_show_in_the_tier_at_once(root):
    client = MemoryClient(root)
    item = next(r for r in client.list(status="active", limit=50) if r["tier"] != "permanent")
    client.pin(item["id"])
    assert client.get(item["id"])["tier"] == "permanent"
    client.unpin(item["id"])
    assert client.get(item["id"])["tier"] == item["tier"]  # the tier its kind gives it


def test_a_pin_brings_an_archived_memory_back_at_once(root):
    import polars as pl

    from retrieval import published

    # Archive one item in the published snapshot, as the nightly job would.
    paths = DataRoot.resolve(root)
    file = published.items_file(paths)
    frame = pl.read_parquet(file)
    client = MemoryClient(root)
    target = client.search(OIL, k=1)[0].id
    frame.with_columns(status=pl.when(pl.col("id") == target).then(pl.lit("archived"))
                       .otherwise(pl.col("status"))).write_parquet(file)
    reader = MemoryClient(root)
    assert target not in _ids(reader.search(OIL, k=5))
    reader.pin(target)
    assert target in _ids(reader.search(OIL, k=5))
    assert reader.get(target)["status"] == "active"


def test_an_erased_namespace_reads_empty_before_the_erasure_runs(root):
    client = MemoryClient(root)
    assert client.search(OIL, k=3)
    client.erase(client.namespace)
    assert client.search(OIL, k=3) == []
    assert client.inject(OIL, record=False).items == []
    assert client.list(status="active") == []


def test_the_run_that_publishes_a_correction_removes_the_readers_copy(root):
    client = MemoryClient(root)
    first, second = client.search(OIL, k=2)
    client.forget(first.id)
    client.update(second.id, NEW)
    client.reinforce(second.id)  # a counter: the pipeline's alone, no copy
    assert {e["type"] for e in _corrections(root)} == {"forget", "update"}
    with dg.instance_for_test() as instance:
        assert not materialize_pending(DataRoot.resolve(root), instance=instance,
                                       now=datetime.now(timezone.utc)).failed
    assert _corrections(root) == []
    after = MemoryClient(root)
    assert after.get(first.id)["status"] == "purged"
    assert after.get(second.id)["content"] == NEW


def test_an_erasure_scrubs_the_new_wording_from_the_readers_copies(root):
    client = MemoryClient(root)
    target = client.search(OIL, k=1)[0]
    secret = "Aaron's WRX oil change is due at 12,345 miles at the Elm Street garage"
    client.update(target.id, secret)
    assert any(secret in json.dumps(e) for e in _corrections(root))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["--data-root", str(root), "erase", "--id", target.id, "--yes"]) == 0
    assert not any("Elm Street" in f.read_text() for f in (root / "corrections").glob("*.json"))
    assert "Elm Street" not in MemoryClient(root).inject(OIL, record=False).text


def test_a_summary_line_quoting_a_reworded_memory_is_not_served(root):
    from retrieval.agent import retrieve

    client = MemoryClient(root)
    target = client.search(OIL, k=1)[0].id
    assert retrieve._visible_citations(client.stores, client.view, [target]) is not None
    client.update(target, NEW)
    assert retrieve._visible_citations(client.stores, client.view, [target]) is None


# -- the doors: HTTP and MCP -------------------------------------------------------------------

@pytest.fixture
def app(root):
    """The app ``memory serve`` builds over the copy, and a key for its namespace."""
    from fastapi.testclient import TestClient

    from retrieval.service.app import build

    namespace = MemoryClient(root).namespace
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main(["--data-root", str(root), "keys", "create", namespace]) == 0
    client = TestClient(build(root)[1], raise_server_exceptions=False).__enter__()
    yield client, {"Authorization": f"Bearer {out.getvalue().strip()}"}
    client.__exit__(None, None, None)


def _inject_ids(client, headers) -> list[str]:
    answer = client.post("/v1/inject", json={"context": OIL}, headers=headers)
    assert answer.status_code == 200, answer.text
    return [i["id"] for i in answer.json()["items"]]


def test_forget_over_http_and_mcp_takes_effect_on_the_next_inject(app):
    client, headers = app
    first, second = _inject_ids(client, headers)[:2]
    answer = client.post(f"/v1/items/{first}/forget", headers=headers)
    assert answer.status_code == 202 and answer.json()["applied"] == "now"
    assert first not in _inject_ids(client, headers)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "memory_forget", "arguments": {"item_id": second}}}
    done = client.post("/mcp/", json=call, headers={**headers, **MCP_HEADERS})
    assert done.status_code == 200 and not done.json()["result"].get("isError"), done.text
    assert second not in _inject_ids(client, headers)
    assert client.post(f"/v1/items/{first}/reinforce", headers=headers).json()["applied"] == "by the next pipeline run"
