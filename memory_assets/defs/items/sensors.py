"""The agent's feedback events are folded into items soon after they arrive."""

import hashlib

import dagster as dg

from memory_assets.defs.resources import MemoryRoot

fold_feedback_job = dg.define_asset_job(
    "fold_feedback",
    selection=dg.AssetSelection.assets("memory_items", "published_items"),
    description="Rebuild memory_items with the agent's new feedback events folded in.",
)


@dg.sensor(job=fold_feedback_job, minimum_interval_seconds=300, default_status=dg.DefaultSensorStatus.RUNNING)
def feedback_sensor(context: dg.SensorEvaluationContext, memory: MemoryRoot) -> dg.RunRequest | dg.SkipReason:
    """Every 5 minutes, when new event files wait in ``events/``, requests a memory_items run."""
    folder = memory.paths.events
    names = sorted(p.name for p in folder.glob("*.json")) if folder.exists() else []
    if not names:
        return dg.SkipReason("no new feedback events")
    # The same waiting files never launch two runs.
    return dg.RunRequest(run_key=hashlib.sha256("".join(names).encode()).hexdigest()[:16])
