"""The calendar: month and weekday words, the days a statement names, and when.

One home (``tests/test_one_home.py``) for reading a day out of words, as ``retrieval.text``
is for the other rules about words. Agent-safe (no dagster).

- ``MONTHS``, ``WEEKDAYS`` (from the ``calendar`` module), ``MONTH_NUMBERS``,
  ``WEEKDAY_NUMBERS``, ``RELATIVE_DAYS`` and the ``DATE`` mention;
- ``future_dates(text, said_at)``: the days a statement points to, read relative to when it
  was said (dateutil's calendar arithmetic), for reminders and preloading;
- ``stated_day(text, said_at)``: the day on or before it was said that a statement says
  something happened or holds from (a fact's ``valid_from``).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator
from datetime import date, datetime, time

from dateutil.relativedelta import MO, SA, relativedelta, weekdays
from dateutil.rrule import MONTHLY, rrule

from retrieval.text import NUMBER_WORDS

# --- the calendar ---------------------------------------------------------------------

MONTHS: tuple[str, ...] = tuple(m.lower() for m in calendar.month_name[1:])
WEEKDAYS: tuple[str, ...] = tuple(d.lower() for d in calendar.day_name)
# Month names and their abbreviations ("Sept", "Oct") → 1–12; weekday names → 0 (Monday)–6.
MONTH_NUMBERS: dict[str, int] = {
    **{m: i for i, m in enumerate(MONTHS, start=1)},
    **{m.lower(): i for i, m in enumerate(calendar.month_abbr) if m},
    "sept": 9,
}
WEEKDAY_NUMBERS: dict[str, int] = {d: i for i, d in enumerate(WEEKDAYS)}

# Relative days, resolved against the turn's timestamp so "yesterday" stays findable.
RELATIVE_DAYS = {"yesterday": -1, "today": 0, "tonight": 0, "this morning": 0, "last night": -1, "tomorrow": 1}
# An explicit date written out ("October 12", "12 Oct 2026", "2026-10-01", "10/12", "2019"):
# a mention worth keeping as an entity, whatever day it names.
DATE = re.compile(
    r"\b(?:(?:" + "|".join(MONTHS) + r")\.?\s+\d{1,2}(?:st|nd|rd|th)?(?:,?\s+\d{4})?|"
    r"\d{1,2}(?:st|nd|rd|th)?\s+(?:" + "|".join(MONTHS) + r")(?:,?\s+\d{4})?|"
    r"\d{4}-\d{2}-\d{2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?|(?:19|20)\d{2})\b",
    re.IGNORECASE,
)

# --- future dates: the days a statement points to ----------------------------------------
#
# ``future_dates(text, said_at)``: "Aaron's sister Maya's birthday is October 12" said on
# 2026-09-02 points to 2026-10-12. Read relative to when it was said (the calendar date in
# UTC), keeping only days after it. Recognised, first match wins for a span of text:
#
# * explicit dates — "2026-10-01", "October 12", "Oct 7 at 2pm", "12 October",
#   "Wednesday, October 7", "September 28 to October 2" (both ends); without a year, the
#   occurrence nearest to when it was said ("January 5" said in November is next January;
#   "October 12" said on November 20 is the past one, so no trigger);
# * a day of the month — "on the 5th", "Saturday the 19th": the next such day;
# * relative — "tomorrow", "the day after tomorrow", "in 6 months", "in two weeks",
#   "3 days from now", "next week" (its Monday), "next month" / "next year" (its 1st),
#   "this weekend" / "next weekend" (the Saturday), "in November" (the 1st);
# * weekdays — "next Friday" is the Friday of next week (the sample transcripts use it so:
#   said on Wednesday 9 September, it meant 18 September), "this Friday" the one in this
#   week, "on Saturday" / "Saturday" the coming one — unless the sentence is in the past
#   tense ("did the emissions test Saturday"), which points back, not forward.
#
# The calendar arithmetic is dateutil's (``relativedelta``, ``rrule``); the spans are
# recognised here. Why not ``dateparser`` for the spans (ARCHITECTURE.md asks for the
# reason): measured on 2026-11-24 with dateparser 1.5.0 (``search_dates``, ``RELATIVE_BASE``
# = the item's time, ``PREFER_DATES_FROM="future"``) against the 17 cases that specify this
# reading (``tests/test_lifecycle.py``), it gets 6 wrong: "next Friday" said on a Wednesday
# is that week's Friday (the transcripts mean next week's), "on the 5th" becomes 9 May,
# "next week" and "next month" become +7 days and +1 month (not the Monday and the 1st),
# and the past tense is ignored ("did the emissions test Saturday", "the outage was on
# September 1" both become future triggers). On plain sentences it also finds dates that
# are not there: "a 2019" in "drives a 2019 Subaru WRX", "may" and "a day" in "may take a
# day off". A trigger preloads a memory on the wrong day, so the spans those cases pin
# down are read here.

_WEEKDAY_OF = dict(zip(range(7), weekdays))  # 0 (Monday) … 6 as dateutil's MO … SU

_MONTH_NAME = r"(?P<month>" + "|".join(sorted(MONTH_NUMBERS, key=len, reverse=True)) + r")\.?"
_WEEKDAY_NAME = r"(?P<weekday>" + "|".join(WEEKDAYS) + r")"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?(?!\d)"
_YEAR = r"(?:,?\s+(?P<year>\d{4}))?"
_COUNT = r"(?P<count>\d+|" + "|".join(n.replace(" ", r"\s+") for n in sorted(NUMBER_WORDS, key=len, reverse=True)) + r")"
_UNIT = r"(?P<unit>day|week|month|year)s?"

_ISO = re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})\b")
_MONTH_DAY = re.compile(rf"\b(?:{_WEEKDAY_NAME},?\s+)?{_MONTH_NAME}\s+{_DAY}\b{_YEAR}", re.IGNORECASE)
_DAY_MONTH = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH_NAME}\b{_YEAR}", re.IGNORECASE)
_WEEKDAY_THE_DAY = re.compile(rf"\b{_WEEKDAY_NAME},?\s+the\s+{_DAY}\b", re.IGNORECASE)
_ON_THE_DAY = re.compile(rf"\b(?:on|by|until|before|from)\s+the\s+{_DAY}\b", re.IGNORECASE)
_DAY_AFTER_TOMORROW = re.compile(r"\bthe day after tomorrow\b", re.IGNORECASE)
_TOMORROW = re.compile(r"\btomorrow\b", re.IGNORECASE)
_IN_COUNT = re.compile(rf"\bin\s+{_COUNT}\s+{_UNIT}\b", re.IGNORECASE)
_FROM_NOW = re.compile(rf"\b{_COUNT}\s+{_UNIT}\s+from\s+now\b", re.IGNORECASE)
_NEXT_PERIOD = re.compile(r"\b(?P<which>next|this)\s+(?P<period>week|month|year|weekend)\b", re.IGNORECASE)
# A capitalised month after a lower-case preposition: "in may" is rarely the month.
_IN_MONTH = re.compile(r"\b(?i:(?P<part>in|by|until|since|early|mid|late|(?:the )?(?:end|middle|start|beginning) of))[\s-]+(?-i:(?P<month>" + "|".join(
    m.capitalize() for m in sorted(MONTH_NUMBERS, key=len, reverse=True)) + r"))\b(?!\.?\s+\d)")
_AGO = re.compile(r"\b(?P<count>\d+|" + "|".join(
    n.replace(" ", r"\s+") for n in sorted(NUMBER_WORDS, key=len, reverse=True)) + rf")\s+{_UNIT}\s+ago\b", re.IGNORECASE)
_LAST_PERIOD = re.compile(r"\blast\s+(?P<period>week|month|year)\b", re.IGNORECASE)
_RELATIVE_WEEKDAY = re.compile(rf"\b(?P<which>next|this|last|coming|this coming)\s+{_WEEKDAY_NAME}\b", re.IGNORECASE)
_BARE_WEEKDAY = re.compile(rf"\b{_WEEKDAY_NAME}\b(?!s\b)", re.IGNORECASE)

# The past tense turns "Saturday" into last Saturday ("did the emissions test Saturday").
# A participle after a form of "be"/"get" is passive ("is booked for Saturday"): not past.
_PAST = re.compile(
    r"\b(?:did|was|were|had|went|got|said|told|saw|took|came|made|felt|left|found|bought|sent|met|"
    r"ago|yesterday|last)\b|"
    r"(?<!\bis )(?<!\bare )(?<!\bbe )(?<!\bbeen )(?<!\bget )(?<!\bgets )(?<!\bgot )"
    r"\b(?!(?:need|feed|seed|speed|bed|red|shed|bleed|breed|based|used|tired|interested|excited|"
    r"scheduled|planned|supposed)\b)[a-z]{3,}ed\b", re.IGNORECASE)

# Cheap first look: text with none of these has no date to read.
_MAYBE = re.compile(r"\d|tomorrow|next|this|coming|from now|\bin\s+(?:a|an|one|two|three|four|five|six|seven|eight|"
                    r"nine|ten|eleven|twelve|a couple|a few)\b|" + "|".join(WEEKDAYS) + "|" + "|".join(MONTH_NUMBERS),
                    re.IGNORECASE)


def _on(year: int, month: int, day: int) -> date | None:
    """That day, or the month's last day for a day past it ("February 30"); None for no month."""
    if not 1 <= month <= 12 or day < 1:
        return None
    return date(year, month, 1) + relativedelta(day=day)


# The day of the month a part of it stands for ("the end of June" → its last day).
_MONTH_PART = {"mid": 15, "middle": 15, "late": 21, "end": 31}


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
    """The next ``day``-th after ``today``, skipping months too short for it."""
    if not 1 <= day <= 31:
        return None
    found = rrule(MONTHLY, dtstart=datetime.combine(today, time()), bymonthday=day).after(
        datetime.combine(today, time()))
    return found.date() if found else None


def _monday(today: date) -> date:
    return today + relativedelta(weekday=MO(-1))


def _weekday(which: str, weekday: int, today: date, past: bool) -> date:
    day = _WEEKDAY_OF[weekday]
    which = which.lower()
    if which == "next":
        return _monday(today) + relativedelta(weeks=1, weekday=day(+1))
    if which == "this":
        return _monday(today) + relativedelta(weekday=day(+1))
    if which == "last" or past:
        return today + relativedelta(days=-1, weekday=day(-1))
    return today + relativedelta(days=1, weekday=day(+1))


def _next_period(which: str, period: str, today: date) -> date | None:
    if period == "weekend":
        return _monday(today) + relativedelta(weeks=1 if which == "next" else 0, weekday=SA(+1))
    if which != "next":
        return None
    if period == "week":
        return _monday(today) + relativedelta(weeks=1)
    if period == "month":
        return today + relativedelta(months=1, day=1)
    return today + relativedelta(years=1, month=1, day=1)


def _spans(text: str, today: date) -> Iterator[tuple[tuple[int, int], date | None]]:
    """(span, day) for every temporal expression, most specific patterns first."""
    past: bool | None = None  # read only when a weekday needs it
    for m in _ISO.finditer(text):
        yield m.span(), _on(int(m["year"]), int(m["month"]), int(m["day"]))
    for pattern in (_MONTH_DAY, _DAY_MONTH):
        for m in pattern.finditer(text):
            month, day = MONTH_NUMBERS[m["month"].lower()], int(m["day"])
            yield m.span(), (_on(int(m["year"]), month, day) if m["year"] else _nearest(month, day, today))
    for pattern in (_WEEKDAY_THE_DAY, _ON_THE_DAY):
        for m in pattern.finditer(text):
            past = bool(_PAST.search(text)) if past is None else past
            yield m.span(), None if past else _next_day_of_month(int(m["day"]), today)
    for m in _DAY_AFTER_TOMORROW.finditer(text):
        yield m.span(), today + relativedelta(days=2)
    for m in _TOMORROW.finditer(text):
        yield m.span(), today + relativedelta(days=1)
    for pattern in (_IN_COUNT, _FROM_NOW):
        for m in pattern.finditer(text):
            raw = re.sub(r"\s+", " ", m["count"].lower())
            count = int(raw) if raw.isdigit() else NUMBER_WORDS[raw]
            yield m.span(), today + relativedelta(**{m["unit"].lower() + "s": count})
    for m in _NEXT_PERIOD.finditer(text):
        yield m.span(), _next_period(m["which"].lower(), m["period"].lower(), today)
    for m in _IN_MONTH.finditer(text):
        # "at the end of December" is the month's last day, "mid-March" its 15th.
        part = m["part"].lower().removeprefix("the ")
        first = _nearest(MONTH_NUMBERS[m["month"].lower()], 1, today)
        if part == "since" and first and first > today:
            first -= relativedelta(years=1)  # "since August" said in July: last August
        yield m.span(), first and first + relativedelta(day=_MONTH_PART.get(part.split()[0], 1))
    for m in _RELATIVE_WEEKDAY.finditer(text):
        which = m["which"].lower().replace("this coming", "coming")
        yield m.span(), _weekday(which, WEEKDAY_NUMBERS[m["weekday"].lower()], today, past=False)
    for m in _BARE_WEEKDAY.finditer(text):
        past = bool(_PAST.search(text)) if past is None else past
        yield m.span(), _weekday("", WEEKDAY_NUMBERS[m["weekday"].lower()], today, past)
    for m in _AGO.finditer(text):
        raw = re.sub(r"\s+", " ", m["count"].lower())
        count = int(raw) if raw.isdigit() else NUMBER_WORDS.get(raw, 1)
        yield m.span(), today - relativedelta(**{m["unit"].lower() + "s": count})
    for m in _LAST_PERIOD.finditer(text):
        yield m.span(), today - relativedelta(**{m["period"].lower() + "s": 1})
    for word, offset in RELATIVE_DAYS.items():
        for m in re.finditer(r"\b" + word + r"\b", text, re.IGNORECASE):
            yield m.span(), today + relativedelta(days=offset)


def stated_day(text: str, said_at: datetime) -> date | None:
    """The day a statement says something happened or holds from, when it names one on or
    before the day it was said ("moved to Denver last month", "two weeks ago", "on March 3"):
    a fact's ``valid_from``. None when it names no such day."""
    today = said_at.date()
    taken: list[tuple[int, int]] = []
    found: list[date] = []
    for (start, end), when in _spans(text, today):
        if any(start < e and s < end for s, e in taken):
            continue
        taken.append((start, end))
        if when is not None and when <= today:
            found.append(when)
    return min(found) if found else None


def future_dates(text: str, said_at: datetime) -> list[date]:
    """Future days (after ``said_at``'s day) that ``text`` points to, in order, once each."""
    if not _MAYBE.search(text):
        return []
    today = said_at.date()
    taken: list[tuple[int, int]] = []
    found: list[date] = []
    for (start, end), when in _spans(text, today):
        if any(start < e and s < end for s, e in taken):
            continue  # part of a more specific expression already read
        taken.append((start, end))
        if when is not None and when > today and when not in found:
            found.append(when)
    return sorted(found)
