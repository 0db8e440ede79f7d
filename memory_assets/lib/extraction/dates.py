"""The future days a fact points to, read once at extraction (``remind_on``).

"Aaron's sister Maya's birthday is October 12" said on 2026-09-02 points to 2026-10-12.
Dates are read from the fact's wording relative to when it was said (the calendar date
in UTC; facts carry no local time zone), and only dates after that day are kept. The
lifecycle's forward triggers read the stored ``remind_on`` days, never the wording.
What is recognised, first match wins for a span of text:

* explicit dates — "2026-10-01", "October 12", "Oct 7 at 2pm", "12 October",
  "Wednesday, October 7", "September 28 to October 2" (both ends); without a year, the
  occurrence nearest to ``created_at`` ("January 5" said in November is next January;
  "October 12" said on November 20 is the past one, so no trigger);
* a day of the month — "on the 5th", "Saturday the 19th": the next such day;
* relative — "tomorrow", "the day after tomorrow", "in 6 months", "in two weeks",
  "3 days from now", "next week" (its Monday), "next month" / "next year" (its 1st),
  "this weekend" / "next weekend" (the Saturday), "in November" (the 1st);
* weekdays — "next Friday" is the Friday of next week (the sample transcripts use it
  so: said on Wednesday 9 September, it meant 18 September), "this Friday" the one in
  this week, "on Saturday" / "Saturday" the coming one — unless the sentence is in the
  past tense ("did the emissions test Saturday"), which points back, not forward.

Why a grammar of our own and not ``dateparser`` (ARCHITECTURE.md asks for the reason):
measured on 2026-11-24 with dateparser 1.5.0 (``search_dates``, ``RELATIVE_BASE`` = the
item's time, ``PREFER_DATES_FROM="future"``) against the 17 cases that specify this module
(``tests/test_lifecycle.py``), it gets 6 wrong: "next Friday" said on a Wednesday is that
week's Friday (the transcripts mean next week's), "on the 5th" becomes 9 May, "next
week" and "next month" become +7 days and +1 month (not the Monday and the 1st), and the
past tense is ignored ("did the emissions test Saturday", "the outage was on September
1" both become future triggers). On plain sentences it also finds dates that are not
there: "a 2019" in "drives a 2019 Subaru WRX", "may" and "a day" in "may take a day
off". A trigger preloads a memory on the wrong day, so this module keeps the rules
those cases pin down; the month and weekday names come from ``retrieval.text``.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator
from datetime import date, datetime, timedelta

from retrieval.text import MONTH_NUMBERS, WEEKDAY_NUMBERS

_I = re.IGNORECASE
MONTHS = MONTH_NUMBERS
WEEKDAYS = WEEKDAY_NUMBERS
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3,
}

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_WEEKDAY = r"(?P<weekday>" + "|".join(WEEKDAYS) + r")"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?(?!\d)"
_YEAR = r"(?:,?\s+(?P<year>\d{4}))?"
_COUNT = r"(?P<count>\d+|" + "|".join(n.replace(" ", r"\s+") for n in sorted(NUMBERS, key=len, reverse=True)) + r")"
_UNIT = r"(?P<unit>day|week|month|year)s?"

_ISO = re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})\b")
_MONTH_DAY = re.compile(rf"\b(?:{_WEEKDAY},?\s+)?{_MONTH}\s+{_DAY}\b{_YEAR}", _I)
_DAY_MONTH = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b{_YEAR}", _I)
_WEEKDAY_THE_DAY = re.compile(rf"\b{_WEEKDAY},?\s+the\s+{_DAY}\b", _I)
_ON_THE_DAY = re.compile(rf"\b(?:on|by|until|before|from)\s+the\s+{_DAY}\b", _I)
_DAY_AFTER_TOMORROW = re.compile(r"\bthe day after tomorrow\b", _I)
_TOMORROW = re.compile(r"\btomorrow\b", _I)
_IN_COUNT = re.compile(rf"\bin\s+{_COUNT}\s+{_UNIT}\b", _I)
_FROM_NOW = re.compile(rf"\b{_COUNT}\s+{_UNIT}\s+from\s+now\b", _I)
_NEXT_PERIOD = re.compile(r"\b(?P<which>next|this)\s+(?P<period>week|month|year|weekend)\b", _I)
_IN_MONTH = re.compile(r"\b(?:in|by|until|early|mid|late|end of)\s+(?-i:(?P<month>" + "|".join(
    m.capitalize() for m in sorted(MONTHS, key=len, reverse=True)) + r"))\b(?!\.?\s+\d)")
_RELATIVE_WEEKDAY = re.compile(rf"\b(?P<which>next|this|last|coming|this coming)\s+{_WEEKDAY}\b", _I)
_BARE_WEEKDAY = re.compile(rf"\b{_WEEKDAY}\b(?!s\b)", _I)

# The past tense turns "Saturday" into last Saturday ("did the emissions test Saturday").
# A participle after a form of "be"/"get" is passive ("is booked for Saturday"): not past.
_PAST = re.compile(
    r"\b(?:did|was|were|had|went|got|said|told|saw|took|came|made|felt|left|found|bought|sent|met|"
    r"ago|yesterday|last)\b|"
    r"(?<!\bis )(?<!\bare )(?<!\bbe )(?<!\bbeen )(?<!\bget )(?<!\bgets )(?<!\bgot )"
    r"\b(?!(?:need|feed|seed|speed|bed|red|shed|bleed|breed|based|used|tired|interested|excited|"
    r"scheduled|planned|supposed)\b)[a-z]{3,}ed\b", _I)


# Cheap first look: text with none of these has no date to read.
_MAYBE = re.compile(r"\d|tomorrow|next|this|coming|from now|\bin\s+(?:a|an|one|two|three|four|five|six|seven|eight|"
                    r"nine|ten|eleven|twelve|a couple|a few)\b|" + "|".join(WEEKDAYS) + "|" + "|".join(MONTHS), _I)


def _clamp(year: int, month: int, day: int) -> date | None:
    if not 1 <= month <= 12 or day < 1:
        return None
    return date(year, month, min(day, calendar.monthrange(year, month)[1]))


def _add_months(start: date, months: int) -> date:
    total = start.month - 1 + months
    return _clamp(start.year + total // 12, total % 12 + 1, start.day)  # type: ignore[return-value]


def _nearest(month: int, day: int, today: date) -> date | None:
    """The month/day occurrence (last, this or next year) nearest to ``today``."""
    options = []
    for year in (today.year - 1, today.year, today.year + 1):
        try:
            options.append(date(year, month, day))
        except ValueError:
            continue
    return min(options, key=lambda d: (abs((d - today).days), d)) if options else None


def _next_day_of_month(day: int, today: date) -> date | None:
    for ahead in range(0, 13):
        first = _add_months(today.replace(day=1), ahead)
        if day <= calendar.monthrange(first.year, first.month)[1]:
            found = first.replace(day=day)
            if found > today:
                return found
    return None


def _monday(today: date) -> date:
    return today - timedelta(days=today.weekday())


def _relative(count: int, unit: str, today: date) -> date:
    unit = unit.lower()
    if unit == "day":
        return today + timedelta(days=count)
    if unit == "week":
        return today + timedelta(weeks=count)
    return _add_months(today, count * (12 if unit == "year" else 1))


def _weekday(which: str, weekday: int, today: date, past: bool) -> date:
    which = which.lower()
    if which == "next":
        return _monday(today) + timedelta(days=7 + weekday)
    if which == "this":
        return _monday(today) + timedelta(days=weekday)
    if which == "last" or past:
        return today - timedelta(days=(today.weekday() - weekday) % 7 or 7)
    return today + timedelta(days=(weekday - today.weekday()) % 7 or 7)


def _matches(text: str, today: date) -> Iterator[tuple[tuple[int, int], date | None]]:
    """(span, date) for every temporal expression, most specific patterns first."""
    past: bool | None = None  # read only when a weekday needs it
    for m in _ISO.finditer(text):
        yield m.span(), _clamp(int(m["year"]), int(m["month"]), int(m["day"]))
    for pattern in (_MONTH_DAY, _DAY_MONTH):
        for m in pattern.finditer(text):
            month, day = MONTHS[m["month"].lower()], int(m["day"])
            yield m.span(), (_clamp(int(m["year"]), month, day) if m["year"] else _nearest(month, day, today))
    for pattern in (_WEEKDAY_THE_DAY, _ON_THE_DAY):
        for m in pattern.finditer(text):
            past = bool(_PAST.search(text)) if past is None else past
            yield m.span(), None if past else _next_day_of_month(int(m["day"]), today)
    for m in _DAY_AFTER_TOMORROW.finditer(text):
        yield m.span(), today + timedelta(days=2)
    for m in _TOMORROW.finditer(text):
        yield m.span(), today + timedelta(days=1)
    for pattern in (_IN_COUNT, _FROM_NOW):
        for m in pattern.finditer(text):
            raw = re.sub(r"\s+", " ", m["count"].lower())
            yield m.span(), _relative(int(raw) if raw.isdigit() else NUMBERS[raw], m["unit"], today)
    for m in _NEXT_PERIOD.finditer(text):
        which, period = m["which"].lower(), m["period"].lower()
        if period == "weekend":
            yield m.span(), _monday(today) + timedelta(days=5 + (7 if which == "next" else 0))
        elif which == "next":
            yield m.span(), (_monday(today) + timedelta(weeks=1) if period == "week" else
                             _add_months(today.replace(day=1), 1) if period == "month" else date(today.year + 1, 1, 1))
    for m in _IN_MONTH.finditer(text):
        yield m.span(), _nearest(MONTHS[m["month"].lower()], 1, today)
    for m in _RELATIVE_WEEKDAY.finditer(text):
        which = m["which"].lower().replace("this coming", "coming")
        yield m.span(), _weekday(which, WEEKDAYS[m["weekday"].lower()], today, past=False)
    for m in _BARE_WEEKDAY.finditer(text):
        past = bool(_PAST.search(text)) if past is None else past
        yield m.span(), _weekday("", WEEKDAYS[m["weekday"].lower()], today, past)


def future_dates(text: str, said_at: datetime) -> list[date]:
    """Future days (after ``said_at``'s day) that ``text`` points to, in order, once each."""
    if not _MAYBE.search(text):
        return []
    today = said_at.date()
    taken: list[tuple[int, int]] = []
    found: list[date] = []
    for (start, end), when in _matches(text, today):
        if any(start < e and s < end for s, e in taken):
            continue  # part of a more specific expression already read
        taken.append((start, end))
        if when is not None and when > today and when not in found:
            found.append(when)
    return sorted(found)
