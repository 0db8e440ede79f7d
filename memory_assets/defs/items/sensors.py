"""The agent's feedback events are folded into items soon after they arrive."""

import hashlib

import dagster as dg

from memory_assets.defs.runtime import MemoryRoot, location_config
from memory_assets.defs.partitions import sensor_seconds
from memory_assets.defs.scheduled_jobs import ITEMS_WRITER_TAGS

fold_feedback_job = dg.define_asset_job(
    "fold_feedback",
    selection=dg.AssetSelection.assets("memory_items", "entities", "edges", "published_items"),
    description="Rebuild memory_items with the agent's new feedback events folded in.",
    tags=ITEMS_WRITER_TAGS,
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


# Dagster's own default_automation_condition_sensor starts STOPPED under `make ui`, so
# memory_items (eager) would wait for 02:00 after a new session's extraction. This one
# runs by default: a new session reaches agents within a minute of its facts.
automation_sensor = dg.AutomationConditionSensorDefinition(
    "memory_automation_sensor",
    target=dg.AssetSelection.all(),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=sensor_seconds(location_config()),
    run_tags=ITEMS_WRITER_TAGS,
    description="Evaluates every asset's automation condition (memory_items and published_items after "
                "extraction, category_summaries after publish) every `[pipeline] sensor_seconds` (30 s); "
                "on by default.",
)

materialize_items_job = dg.define_asset_job(
    "materialize_items",
    selection=dg.AssetSelection.assets("memory_items", "entities", "edges", "published_items"),
    description="Rebuild the items from every session's facts and the pending feedback, audit and publish "
                "(what `memory materialize` runs after extraction).",
    tags=ITEMS_WRITER_TAGS,
)
