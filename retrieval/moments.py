"""Moments as the memory keeps them: aware datetimes in UTC.

The one home of the rule "every stored time is UTC; a time without an offset means UTC"
(``tests/test_one_home.py``): ``utc`` for a datetime in hand (SQLite and naive Parquet
columns hand back naive ones), ``parse_utc`` for ISO-8601 text (a transcript's ``ts``,
an event's, ``--now``, a run's tag). No other module calls ``datetime.fromisoformat`` or
sets a ``tzinfo``. Nothing here reads the wall clock: ``now`` is passed in (ARCHITECTURE.md,
"The clock is data").
"""

from __future__ import annotations

from datetime import datetime, timezone


def utc(moment: datetime) -> datetime:
    """``moment`` as an aware UTC datetime: a naive one is taken as UTC, an aware one is
    converted (the same instant)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def parse_utc(text: str) -> datetime:
    """An ISO-8601 time (``2026-09-10T02:00:00Z``, ``2026-09-10T04:00:00+02:00``,
    ``2026-09-10``) as an aware UTC datetime; without an offset it is UTC.

    Raises:
        ValueError: ``text`` is not an ISO-8601 time (the message quotes it and shows one).
        TypeError: ``text`` is not a string (a number, None), as ``datetime.fromisoformat``.
    """
    if not isinstance(text, str):
        raise TypeError(f"an ISO-8601 time is text, not {type(text).__name__} ({text!r})")
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO-8601 time (e.g. 2026-09-10T02:00:00Z)") from None
    return utc(parsed)
