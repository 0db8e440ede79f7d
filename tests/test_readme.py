"""The README's agent example runs as written."""

from __future__ import annotations

import json
import re

import dagster as dg

from memory_assets.lib.ingest.intake import ingest_paths
from memory_assets.cli.runner import materialize_pending
from retrieval.paths import DataRoot
from tests.conftest import REPO


def _agent_example() -> str:
    readme = (REPO / "README.md").read_text()
    match = re.search(r"<!-- agent-example -->\s*```python\n(.*?)```", readme, re.DOTALL)
    assert match, "README lost its agent example"
    return match.group(1)


def _built(tmp_path, samples, monkeypatch) -> DataRoot:
    """The personal-assistant sample materialized under ``data/`` of a working directory."""
    paths = DataRoot.resolve(tmp_path / "data")
    ingest_paths([samples / "personal-assistant.jsonl"], paths.root)
    with dg.instance_for_test() as instance:
        materialize_pending(paths, extractor="offline", instance=instance)
    monkeypatch.chdir(tmp_path)
    return paths


def test_readme_agent_example_runs_as_written(tmp_path, samples, monkeypatch):
    paths = _built(tmp_path, samples, monkeypatch)
    namespace: dict = {}
    exec(compile(_agent_example(), "README.md", "exec"), namespace)
    injection = namespace["injection"]
    assert "11,799" in injection.text and injection.tokens <= 400
    types = [json.loads(p.read_text())["type"] for p in paths.events.glob("*.json")]
    assert {"injected", "reinforce"} <= set(types)
    assert {"referenced", "ignored"} & set(types)  # record_response wrote echo/fizzle
    assert list((paths.inbox / "chat-42").glob("*.jsonl"))


def test_readme_tool_agent_example_acts_on_the_line_the_model_names(tmp_path, samples, monkeypatch):
    paths = _built(tmp_path, samples, monkeypatch)
    readme = (REPO / "README.md").read_text()
    code = re.search(r"<!-- tool-agent-example -->\s*```python\n(.*?)```", readme, re.DOTALL).group(1)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)
    first = namespace["injection"].items[0]
    assert namespace["full_id"] == first.id
    reinforced = [json.loads(p.read_text()) for p in paths.events.glob("*-reinforce-*.json")]
    assert [e["item_ids"] for e in reinforced] == [[first.id]]
