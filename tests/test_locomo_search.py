"""A LoCoMo conversation through the CLI: its dia_ids come back as each item's source turns."""

from __future__ import annotations

import json

import pytest

from memory_assets.cli import main
from tests.conftest import LOCOMO

CONV = LOCOMO / "conv-26.json"


@pytest.mark.skipif(not CONV.exists(), reason="shared/datasets/locomo is not beside the repo")
def test_ingest_materialize_search_returns_dia_ids(data_root, capsys):
    assert main(["--data-root", str(data_root), "ingest", str(CONV)]) == 0
    assert main(["--data-root", str(data_root), "materialize", "--quiet", "--extractor", "offline"]) == 0
    capsys.readouterr()
    assert main(["--data-root", str(data_root), "search", "adoption agencies", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    dia_ids = {t["dia_id"] for s in json.loads(CONV.read_text()).values() if isinstance(s, list) for t in s if isinstance(t, dict) and "dia_id" in t}
    assert rows
    for row in rows:
        assert row["session_id"].startswith("conv-26-s")
        assert row["source_turn_ids"] and set(row["source_turn_ids"]) <= dia_ids
    assert any("adoption agenc" in row["content"].lower() for row in rows[:3])

    assert main(["--data-root", str(data_root), "stats", "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["sessions"] == 19 and stats["active_items"] > 100 and stats["pending_sessions"] == 0
