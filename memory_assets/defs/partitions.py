"""One partition per agent session, added by the inbox sensor as sessions arrive."""

import dagster as dg

sessions = dg.DynamicPartitionsDefinition(name="sessions")
