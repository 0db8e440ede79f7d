"""The run's clock. Every time-based rule takes ``now``; a run may set it (tests, replays)."""

from datetime import datetime, timezone

import dagster as dg


class Clock(dg.Config):
    """``now`` as ISO-8601; empty means the wall clock when the step starts."""

    now: str = ""

    def resolve(self) -> datetime:
        if not self.now:
            return datetime.now(timezone.utc)
        parsed = datetime.fromisoformat(self.now.replace("Z", "+00:00"))
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
