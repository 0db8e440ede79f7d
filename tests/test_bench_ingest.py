"""The ingest benchmark: a few sessions handed over as agents do, one `memory materialize`, nothing lost."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from memory_assets.cli import main as cli


@pytest.mark.slow
def test_a_small_ingest_bench_extracts_every_session_and_publishes():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli(["bench", "ingest", "--sessions", "4", "--turns", "6", "--json"])
    report = json.loads(out.getvalue())
    assert code == 0, report.get("materialize_error")
    assert report["bench"] == "ingest" and report["sessions"] == 4 and report["turns_per_session"] == 6
    assert report["extracted_sessions"] == 4 and report["lost"] == 0 and report["quarantined"] == 0
    assert report["failed_runs"] == 0
    assert report["facts"] > 0 and report["items_published"] > 0
    assert report["materialize_wall_s"] > 0 and report["materialize_cpu_s"] > 0 and report["peak_rss_mib"] > 0
    assert report["sessions_per_s"] > 0 and report["handover_s"] >= 0
    # How the pipeline batches sessions into runs may change; at least one run is recorded.
    assert report["runs"] and sum(report["runs"].values()) >= 1
    assert {"cpus", "platform", "python"} <= set(report["machine"])
