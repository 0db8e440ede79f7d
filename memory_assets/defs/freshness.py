"""How stale a scheduled asset may get before the UI shows it late (a missed run)."""

from datetime import timedelta

import dagster as dg

# Deadlines an hour after each schedule's tick, looking back one period (28 days for the
# month: Dagster caps the window at the shortest interval of the cron): a missed
# nightly (02:00), weekly (Sunday 01:00) or monthly (1st, 03:00) run shows as stale.
NIGHTLY = dg.FreshnessPolicy.cron(deadline_cron="0 3 * * *", lower_bound_delta=timedelta(hours=24))
WEEKLY = dg.FreshnessPolicy.cron(deadline_cron="0 2 * * 0", lower_bound_delta=timedelta(days=7))
MONTHLY = dg.FreshnessPolicy.cron(deadline_cron="0 4 1 * *", lower_bound_delta=timedelta(days=28))
