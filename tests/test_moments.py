"""Every stored time is aware and in UTC; a time without an offset means UTC (``retrieval.moments``)."""

from datetime import datetime, timedelta, timezone

import pytest

from retrieval.moments import parse_utc, utc

NINE_UTC = datetime(2026, 9, 10, 9, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("text", [
    "2026-09-10T09:00:00Z",
    "2026-09-10T09:00:00+00:00",
    "2026-09-10T11:00:00+02:00",
    "2026-09-10T04:00:00-05:00",
    "2026-09-10T09:00:00",  # no offset: UTC
    " 2026-09-10T09:00:00Z\n",
])
def test_iso_text_is_read_as_the_same_instant_in_utc(text):
    parsed = parse_utc(text)
    assert parsed == NINE_UTC
    assert parsed.utcoffset() == timedelta(0)


def test_a_day_alone_is_its_midnight_in_utc():
    assert parse_utc("2026-09-10") == datetime(2026, 9, 10, tzinfo=timezone.utc)


@pytest.mark.parametrize("text", ["", "next Tuesday", "2026-13-01", "10/09/2026", "2026-09-10T09:00:00 CEST"])
def test_text_that_is_not_an_iso_time_is_refused_with_what_was_given(text):
    with pytest.raises(ValueError, match="is not an ISO-8601 time"):
        parse_utc(text)


@pytest.mark.parametrize("value", [None, 1788944400, b"2026-09-10"])
def test_what_is_not_text_is_a_type_error(value):
    with pytest.raises(TypeError, match="an ISO-8601 time is text"):
        parse_utc(value)


def test_a_naive_datetime_is_utc_and_an_aware_one_is_converted():
    assert utc(datetime(2026, 9, 10, 9, 0)) == NINE_UTC
    assert utc(datetime(2026, 9, 10, 9, 0)).tzinfo == timezone.utc
    paris = datetime(2026, 9, 10, 11, 0, tzinfo=timezone(timedelta(hours=2)))
    assert utc(paris) == NINE_UTC and utc(paris).hour == 9 and utc(paris).tzinfo == timezone.utc
    assert utc(NINE_UTC) == NINE_UTC
