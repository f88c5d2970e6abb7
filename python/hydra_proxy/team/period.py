"""Budget periods in UTC: a day from midnight, a week from Monday, a month from the 1st."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Literal

Period = Literal["day", "week", "month"]
PERIODS: tuple[Period, ...] = ("day", "week", "month")


_current: dict[str, tuple[float, float]] = {}
"""The last period computed of each kind: every request of a period asks for the same."""


def bounds(period: str, now: float) -> tuple[float, float]:
    """The (start, end) Unix times of the period holding `now`."""
    known = _current.get(period)
    if known is not None and known[0] <= now < known[1]:
        return known
    found = _bounds(period, now)
    _current[period] = found
    return found


def _bounds(period: str, now: float) -> tuple[float, float]:
    moment = datetime.fromtimestamp(now, timezone.utc)
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "day":
        start, end = day, day + timedelta(days=1)
    elif period == "week":
        start = day - timedelta(days=day.weekday())
        end = start + timedelta(days=7)
    elif period == "month":
        start = day.replace(day=1)
        end = (start + timedelta(days=32)).replace(day=1)
    else:
        raise ValueError(f"period {period!r}: use one of {', '.join(PERIODS)}")
    return start.timestamp(), end.timestamp()


def utc_text(t: float) -> str:
    """A time as the refusals and listings say it: 2026-12-01T00:00:00Z."""
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
