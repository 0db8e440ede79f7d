"""Timing spans: the pipeline marks its own steps; a benchmark records them without
patching the code it measures, and without a recorder a span records nothing."""

from __future__ import annotations

import dagster as dg

from memory_assets.lib.ingest.intake import ingest_paths
from memory_assets.cli.runner import run_job
from retrieval import spans
from retrieval.config import load_config
from retrieval.paths import DataRoot


def test_a_span_records_only_while_a_recorder_is_installed():
    @spans.spanned("double")
    def double(x: int) -> int:
        return 2 * x

    assert double(2) == 4 and spans._recorder is None
    recorder = spans.Recorder()
    with spans.recording(recorder):
        assert double(3) == 6
        with spans.timed("block"):
            sum(range(10_000))
    assert double(4) == 8  # after the block: not recorded
    assert [label for label, *_ in recorder.calls] == ["double", "block"]
    assert all(wall >= 0 and cpu >= 0 for _, _, wall, cpu in recorder.calls)
    try:
        with spans.recording(recorder), spans.timed("fails"):
            raise ValueError("boom")
    except ValueError:
        pass
    assert recorder.calls[-1][0] == "fails"  # a failing step is timed too


def test_a_nightly_run_in_process_reports_the_pipelines_own_spans(tmp_path, samples):
    paths = DataRoot.resolve(tmp_path / "data")
    ingest_paths([samples / "personal-assistant.jsonl"], paths.root, load_config())
    recorder = spans.Recorder()
    with dg.instance_for_test() as instance, spans.recording(recorder):
        assert run_job(paths, "nightly", extractor="offline", instance=instance)
    labels = {label for label, *_ in recorder.calls}
    assert {"consolidate", "consolidate: exact dedup", "embed", "lifecycle.apply", "write_items",
            "lancedb: write table", "lancedb: full-text index", "check: items suite", "publish", "lessons",
            "forward triggers", "summarize"} <= labels
