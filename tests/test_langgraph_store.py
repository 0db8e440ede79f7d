"""LangGraph's long-term memory on this product (``retrieval.integrations.langgraph``).

The store answers as LangGraph's own ``InMemoryStore`` does for the same operations
(values, keys, namespaces, filters, pagination); what it puts becomes a memory that the
pipeline publishes and every door finds; and docs/integrations.md's graph runs on a fake
chat model over a real data root.
"""

from __future__ import annotations

import asyncio
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import dagster as dg
import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.store.base import InvalidNamespaceError
from langgraph.store.memory import InMemoryStore

from memory_assets.cli.runner import materialize_pending
from retrieval.agent.client import MemoryClient
from retrieval.database import DSN_ENV, sqlite_path
from retrieval.integrations.langgraph import MemoryStore
from retrieval.paths import DataRoot
from tests.postgres_server import new_database, postgres_server  # noqa: F401  (fixture)

DOCS = Path(__file__).resolve().parents[1] / "docs" / "integrations.md"

DOCUMENTS = [
    (("memories", "aaron"), "coffee", {"text": "Aaron takes his coffee black, no sugar", "type": "food", "n": 3}),
    (("memories", "aaron"), "car", {"text": "The WRX oil change is due at 11,799 miles", "type": "car", "n": 11799}),
    (("memories", "aaron", "work"), "editor", {"text": "Aaron writes code in neovim", "type": "tool", "n": 1}),
    (("memories", "bea"), "diet", {"text": "Bea is vegetarian", "type": "food", "n": 7}),
    (("prefs", "bea", "ui"), "theme", {"text": "Bea uses a dark theme", "type": "ui", "n": 0, "tags": ["a", "b"]}),
]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.slow)])
def backend(request, monkeypatch) -> str:
    """Where the documents are kept: SQLite in the data root, or the PostgreSQL of
    ``MEMORY_CHECKPOINT_DSN`` that several service processes share."""
    monkeypatch.delenv(DSN_ENV, raising=False)
    if request.param == "postgres":
        monkeypatch.setenv(DSN_ENV, new_database(request.getfixturevalue("postgres_server")))
    return request.param


def _both(root: Path) -> tuple[MemoryStore, InMemoryStore]:
    ours, theirs = MemoryStore(MemoryClient(root), namespace_at=1), InMemoryStore()
    for store in (ours, theirs):
        for namespace, key, value in DOCUMENTS:
            store.put(namespace, key, value)
    return ours, theirs


def _found(items) -> list[tuple]:
    return sorted((i.namespace, i.key, repr(sorted(i.value.items()))) for i in items)


@pytest.mark.parametrize("prefix, wanted", [
    ((), None), (("memories",), None), (("memories", "aaron"), None), (("memories",), {"type": "food"}),
    ((), {"n": {"$gt": 2}}), ((), {"n": {"$gte": 3, "$lt": 11799}}), ((), {"type": {"$ne": "food"}}),
    (("prefs",), {"tags": ["a", "b"]}), ((), {"missing": 1}), (("nobody",), None),
])
def test_search_without_a_query_finds_what_langgraphs_own_store_finds(tmp_path, backend, prefix, wanted):
    ours, theirs = _both(tmp_path / "data")
    assert _found(ours.search(prefix, filter=wanted, limit=50)) == _found(theirs.search(prefix, filter=wanted, limit=50))
    pages = [ours.search(prefix, filter=wanted, limit=2, offset=k) for k in (0, 2, 4)]
    assert _found(i for page in pages for i in page) == _found(ours.search(prefix, filter=wanted, limit=50))
    newest_first = [i.updated_at for i in ours.search(prefix, filter=wanted, limit=50)]
    assert newest_first == sorted(newest_first, reverse=True)


@pytest.mark.parametrize("arguments", [
    {}, {"prefix": ("memories",)}, {"suffix": ("ui",)}, {"prefix": ("*", "bea")}, {"max_depth": 1},
    {"max_depth": 2, "prefix": ("memories",)}, {"limit": 2, "offset": 1}, {"prefix": ("none",)},
])
def test_list_namespaces_answers_as_langgraphs_own_store(tmp_path, backend, arguments):
    ours, theirs = _both(tmp_path / "data")
    assert ours.list_namespaces(**arguments) == theirs.list_namespaces(**arguments)


def test_get_put_again_and_delete_keep_langgraphs_semantics(tmp_path, backend):
    ours, theirs = _both(tmp_path / "data")
    for store in (ours, theirs):
        first = store.get(("memories", "aaron"), "coffee")
        store.put(("memories", "aaron"), "coffee", {"text": "Aaron switched to oat milk lattes"})
        again = store.get(("memories", "aaron"), "coffee")
        assert again.value == {"text": "Aaron switched to oat milk lattes"}
        assert again.updated_at > first.updated_at
        # kept, as LangGraph's PostgresStore keeps it (its InMemoryStore starts it again)
        assert store is theirs or again.created_at == first.created_at
        store.delete(("memories", "aaron"), "coffee")
        assert store.get(("memories", "aaron"), "coffee") is None
        store.delete(("memories", "aaron"), "never-there")  # deleting nothing is no error
        assert store.get(("memories", "bea"), "coffee") is None  # a key is per namespace
    assert _found(ours.search((), limit=50)) == _found(theirs.search((), limit=50))


def test_the_users_name_in_the_namespace_is_whose_memory_it_is(tmp_path):
    root = tmp_path / "data"
    ours, _ = _both(root)
    bea = [r["content"] for r in MemoryClient(root, namespace="bea").list(status="pending")]
    aaron = [r["content"] for r in MemoryClient(root, namespace="aaron").list(status="pending")]
    assert any("vegetarian" in c for c in bea) and not any("vegetarian" in c for c in aaron)
    assert any("neovim" in c for c in aaron) and len(aaron) == 3
    with pytest.raises(InvalidNamespaceError, match="no name at position 1"):
        ours.put(("memories",), "k", {"text": "whose?"})
    one = MemoryStore(MemoryClient(root, namespace="carol"))  # without namespace_at: every path is carol's
    one.put(("anything", "at", "all"), "k", {"text": "Carol plays the cello"})
    assert [r["namespace"] for r in MemoryClient(root, namespace="carol").list(status="pending")] == ["carol"]


def test_what_becomes_the_memory_is_the_documents_words(tmp_path):
    root = tmp_path / "data"
    store = MemoryStore(MemoryClient(root, namespace="aaron"))
    store.put(("m",), "one", {"text": "Aaron's sister Marigold lives in Lisbon"})
    store.put(("m",), "two", {"food": "pizza", "drink": "green tea"})
    store.put(("m",), "three", {"facts": ["Aaron runs on Sundays", "Aaron owns a WRX"], "id": "x"}, index=["facts[*]"])
    store.put(("m",), "four", {"text": "kept out of memory"}, index=False)
    contents = sorted(r["content"] for r in MemoryClient(root, namespace="aaron").list(status="pending"))
    assert contents == ["Aaron runs on Sundays Aaron owns a WRX", "Aaron's sister Marigold lives in Lisbon",
                        "food: pizza; drink: green tea"]
    assert store.get(("m",), "four").value == {"text": "kept out of memory"}
    assert store.search(("m",), query="kept out of memory") == []  # no memory, nothing to find it by


def test_a_secret_in_a_document_is_redacted_before_it_is_stored(tmp_path):
    root = tmp_path / "data"
    store = MemoryStore(MemoryClient(root, namespace="aaron"))
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    store.put(("m",), "gh", {"text": f"Aaron's GitHub token is {secret}", "note": "my password is hunter2hunter2"})
    value = store.get(("m",), "gh").value
    assert secret not in str(value) and "hunter2hunter2" not in str(value) and "REDACTED" in value["text"]
    stored = b"".join(p.read_bytes() for p in sqlite_path(DataRoot.resolve(root)).parent.iterdir())
    assert secret.encode() not in stored and b"hunter2hunter2" not in stored
    with pytest.raises(ValueError, match="not JSON"):
        store.put(("m",), "bad", {"when": object()})
    with pytest.raises(ValueError, match="characters as JSON"):
        store.put(("m",), "big", {"text": "x" * 200_000})


def test_the_async_forms_answer_as_the_batch_does(tmp_path):
    store = MemoryStore(MemoryClient(tmp_path / "data", namespace="aaron"))

    async def session():
        await store.aput(("m",), "coffee", {"text": "Aaron takes his coffee black"})
        await store.aput(("m", "work"), "editor", {"text": "Aaron writes code in neovim"})
        got = await store.aget(("m",), "coffee")
        found = await store.asearch(("m",), query="what does Aaron drink in the morning?", limit=1)
        spaces = await store.alist_namespaces(prefix=("m",))
        await store.adelete(("m",), "coffee")
        return got, found, spaces, await store.aget(("m",), "coffee")

    got, found, spaces, after = asyncio.run(session())
    assert got.value == {"text": "Aaron takes his coffee black"}
    assert [i.key for i in found] == ["coffee"] and 0 < found[0].score <= 1
    assert spaces == [("m",), ("m", "work")] and after is None


@pytest.mark.slow
def test_documents_become_published_memories_and_stay_one_with_them(tmp_path):
    """Through real pipeline runs: search finds the published items, a second put rewords
    the item, a forget at another door takes the document, and erasing a namespace or one
    item deletes the documents (no word left in the database file)."""
    root = tmp_path / "data"
    paths = DataRoot.resolve(root)
    store = MemoryStore(MemoryClient(root), namespace_at=1)
    for namespace, key, value in DOCUMENTS:
        store.put(namespace, key, value, index=["text"])
    assert [i.key for i in store.search(("memories", "aaron"), query="when is the WRX oil change due?")][:1] == ["car"]
    t0 = datetime.now(timezone.utc)
    with dg.instance_for_test() as instance:
        assert not materialize_pending(paths, instance=instance, extractor="offline", now=t0).failed
    aaron = MemoryClient(root, namespace="aaron")
    assert aaron.list(status="pending") == []  # the pipeline has them all
    found = store.search(("memories", "aaron"), query="when is the WRX oil change due?")
    assert found[0].key == "car" and found[0].value["n"] == 11799
    car = next(h for h in aaron.search("WRX oil change", k=5) if "11,799" in h.content)
    assert not car.id.startswith("pending")  # a published item, found through the document
    store.put(("memories", "aaron"), "car", {"text": "The WRX oil change is due at 16,799 miles", "type": "car"},
              index=["text"])
    assert MemoryClient(root, namespace="aaron").get(car.id)["content"] == "The WRX oil change is due at 16,799 miles"
    aaron.forget(next(h.id for h in aaron.search("neovim editor", k=5) if "neovim" in h.content))
    assert store.get(("memories", "aaron", "work"), "editor") is None  # forgotten at another door
    assert "editor" not in [i.key for i in store.search(("memories",), limit=50)]
    store.delete(("memories", "aaron"), "coffee")
    assert "black" not in " ".join(h.content for h in MemoryClient(root, namespace="aaron").search("coffee", k=10))
    MemoryClient(root, namespace="bea").erase()
    aaron.erase(item_id=car.id)  # one item: the document it was made of goes with it
    with dg.instance_for_test() as instance:
        assert not materialize_pending(paths, instance=instance, extractor="offline",
                                       now=t0 + timedelta(minutes=5)).failed
    assert store.search(("memories", "bea"), limit=50) == [] and store.search(("prefs", "bea"), limit=50) == []
    stored = b"".join(p.read_bytes() for p in sqlite_path(paths).parent.iterdir())
    assert b"vegetarian" not in stored and b"dark theme" not in stored and b"16,799" not in stored
    assert store.get(("memories", "aaron"), "car") is None
    assert store.search(("memories",), limit=50) == []  # deleted, forgotten, erased


class _Recording(GenericFakeChatModel):
    """A fake chat model that keeps the prompts it was given."""

    prompts: list = []

    def _generate(self, messages, *args, **kwargs):
        self.prompts.append([m.content for m in messages])
        return super()._generate(messages, *args, **kwargs)


def _blocks(section: str) -> list[str]:
    text = DOCS.read_text()
    part = text[text.index(f"## {section}"):]
    part = part[:part.find("\n## ", 4)] if "\n## " in part[4:] else part
    return re.findall(r"```python\n(.*?)```", part, flags=re.S)


def test_the_documented_langgraph_agent_remembers_across_calls(tmp_path, monkeypatch):
    graph, usage = _blocks("LangGraph")
    monkeypatch.chdir(tmp_path)
    model = _Recording(messages=iter([AIMessage("Noted."), AIMessage("Black, no sugar.")]))
    scope: dict = {"model": model}
    exec(compile(graph, "docs/integrations.md:LangGraph graph", "exec"), scope)
    exec(compile(usage, "docs/integrations.md:LangGraph usage", "exec"), scope)
    assert scope["answer"]["messages"][-1].content == "Black, no sugar."
    first, second = model.prompts
    assert "coffee" not in first[0]  # nothing was known before the first message
    assert "I take my coffee black, no sugar." in second[0]  # the system message of the second call
    pending = MemoryClient(tmp_path / "data", namespace="aaron").list(status="pending")
    assert {r["content"] for r in pending} == {"I take my coffee black, no sugar.", "How do I like my coffee?"}
