"""Spend alerts: thresholds of a key's or a team's budget (e.g. 50, 80 and 100 %), each
posting a webhook once per threshold and budget period.

An alert is stored in the key store (``hydra_alerts``: the subject, its thresholds, the
webhook URL and the body's format, JSON or Slack's ``{"text": ...}``). A worker watches the
budgets its requests settle (`AlertWatch.touched`, called where a named key's request
settles): a background task then reads what each touched subject spent this period (the
larger of the budget counter and the ledger, which counts every worker's requests) and,
for each threshold reached, claims it in ``hydra_alerts_sent`` (one row per subject,
threshold and period: the first worker or replica to insert it sends, every other one
finds it taken) before posting. A post is retried with exponential backoff and each
attempt logged; the webhook's URL is never logged or listed whole (a Slack URL is a
secret): only its scheme and host.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson

from .period import bounds, utc_text
from .store import KeyStore

log = logging.getLogger("hydra_proxy.alerts")

FORMATS = ("json", "slack")
MAX_THRESHOLDS = 10
MAX_URL = 2048
ATTEMPTS = 4
BACKOFF_ENV = "HYDRA_ALERTS_BACKOFF"
"""Seconds before the first retry of a webhook (doubled each time; default 2)."""
TIMEOUT = 10.0
_MAX_SENDING = 16  # posts in flight per worker; more wait their turn
CLOSE_WAIT = 5.0
"""Seconds a stopping worker waits for the posts under way."""


class AlertError(ValueError):
    """An alert that cannot be set: what is wrong, said to the user."""


@dataclass(frozen=True)
class Alert:
    subject: str
    """``key:NAME`` or ``team:NAME`` (as the budget counters name them)."""
    thresholds: tuple[int, ...]
    webhook: str
    format: str = "json"

    def public(self) -> dict[str, Any]:
        """As listings show it: the webhook by its scheme and host only."""
        return {"thresholds": list(self.thresholds), "webhook": shown_url(self.webhook),
                "format": self.format}  # fmt: skip


def shown_url(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}/…"


def subject(kind: str, name: str) -> str:
    assert kind in ("key", "team")
    return f"{kind}:{name}"


def parse_thresholds(value: Any) -> tuple[int, ...]:
    """Percentages of the budget: a list of numbers or "50,80,100"."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not items:
        raise AlertError("thresholds: a list of percentages of the budget, e.g. [50, 80, 100]")
    found = set()
    for item in items:
        try:
            number = int(str(item).strip().rstrip("%"))
        except ValueError:
            raise AlertError(f"threshold {item!r}: a whole percentage, e.g. 80") from None
        if not 1 <= number <= 1000:
            raise AlertError(f"threshold {number}: between 1 and 1000 (% of the budget)")
        found.add(number)
    if len(found) > MAX_THRESHOLDS:
        raise AlertError(f"thresholds: at most {MAX_THRESHOLDS}")
    return tuple(sorted(found))


def make(kind: str, name: str, thresholds: Any, webhook: Any, fmt: Any = "json") -> Alert:
    """A checked alert (AlertError: what is wrong)."""
    if not isinstance(webhook, str) or len(webhook) > MAX_URL:
        raise AlertError(f"webhook: an http(s) URL of at most {MAX_URL} characters")
    parts = urlsplit(webhook.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AlertError("webhook: an http:// or https:// URL with a host")
    fmt = fmt or "json"
    if fmt not in FORMATS:
        raise AlertError(f"format {fmt!r}: use one of {', '.join(FORMATS)}")
    return Alert(subject(kind, name), parse_thresholds(thresholds), webhook.strip(), fmt)


# -- the store ----------------------------------------------------------------------------


def load(store: KeyStore) -> dict[str, Alert]:
    """Every alert, by subject."""
    with store.transaction() as cur:
        cur.execute("SELECT subject, thresholds, webhook, format FROM hydra_alerts")
        rows = cur.fetchall()
    return {
        r[0]: Alert(r[0], tuple(int(t) for t in r[1].split(",") if t), r[2], r[3]) for r in rows
    }


def save(store: KeyStore, alert: Alert) -> None:
    """Set (or replace) a subject's alert; every worker reloads it (the version moves)."""
    m = store.mark
    with store.transaction() as cur:
        cur.execute(f"DELETE FROM hydra_alerts WHERE subject = {m}", (alert.subject,))
        cur.execute(
            f"INSERT INTO hydra_alerts (subject, thresholds, webhook, format) "
            f"VALUES ({m}, {m}, {m}, {m})",
            (alert.subject, ",".join(map(str, alert.thresholds)), alert.webhook, alert.format),
        )
        store._bump(cur)


def remove(store: KeyStore, subject_name: str) -> bool:
    """Remove a subject's alert; whether it had one."""
    with store.transaction() as cur:
        cur.execute(f"DELETE FROM hydra_alerts WHERE subject = {store.mark}", (subject_name,))
        removed = bool(cur.rowcount)
        store._bump(cur)
    return removed


def claim(
    store: KeyStore, subject_name: str, threshold: int, period_end: float, now: float
) -> bool:
    """Whether this caller is the first to send `threshold` of `subject_name` this period
    (a row per subject, threshold and period; every other worker or replica finds it)."""
    m = store.mark
    with store.transaction() as cur:
        cur.execute(
            f"INSERT INTO hydra_alerts_sent (subject, threshold, period_end, sent) "
            f"VALUES ({m}, {m}, {m}, {m}) ON CONFLICT DO NOTHING",
            (subject_name, threshold, period_end, now),
        )
        return bool(cur.rowcount == 1)


def sent(store: KeyStore, subject_name: str) -> list[tuple[int, float, float]]:
    """(threshold, period end, when sent) of every alert sent for a subject."""
    with store.transaction() as cur:
        cur.execute(
            f"SELECT threshold, period_end, sent FROM hydra_alerts_sent WHERE subject = "
            f"{store.mark} ORDER BY period_end, threshold",
            (subject_name,),
        )
        return [(int(r[0]), float(r[1]), float(r[2])) for r in cur.fetchall()]


# -- what is sent -------------------------------------------------------------------------


@dataclass(frozen=True)
class Crossing:
    """A threshold a subject's spend reached in a period."""

    alert: Alert
    threshold: int
    budget: float
    spent: float
    period: str
    start: float
    end: float
    team: str | None = None


def reached(thresholds: Iterable[int], budget: float, spent: float) -> list[int]:
    return [t for t in thresholds if spent >= budget * t / 100]


def body(c: Crossing, now: float) -> bytes:
    kind, _, name = c.alert.subject.partition(":")
    left = max(0.0, c.budget - c.spent)
    if c.alert.format == "slack":
        text = (
            f"hydra-proxy: {kind} {name!r} has spent ${c.spent:.2f} of its ${c.budget:.2f} "
            f"budget per {c.period} ({c.threshold}% reached, ${left:.2f} left); the period "
            f"resets at {utc_text(c.end)}."
        )
        return orjson.dumps({"text": text})
    doc = {
        "type": "budget_alert",
        "subject": {"kind": kind, "name": name, **({"team": c.team} if c.team else {})},
        "threshold_percent": c.threshold,
        "budget_usd": c.budget,
        "spent_usd": round(c.spent, 6),
        "left_usd": round(left, 6),
        "period": c.period,
        "period_start": utc_text(c.start),
        "period_resets": utc_text(c.end),
        "time": utc_text(now),
    }
    return orjson.dumps(doc)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A webhook that redirects is answered as its 3xx: the body goes where it was set to
    go, never elsewhere."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def post(url: str, payload: bytes, timeout: float = TIMEOUT) -> int:
    """POST the body; the status (blocking: from a thread)."""
    request = urllib.request.Request(
        url,
        data=payload,
        method="POST",
        headers={"content-type": "application/json", "user-agent": "hydra-proxy alerts"},
    )
    try:
        with _OPENER.open(request, timeout=timeout) as reply:
            reply.read(1 << 16)
            return int(reply.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return int(exc.code)


def _retryable(status: int) -> bool:
    return status in (408, 425, 429) or status >= 500


async def deliver(
    c: Crossing,
    now: float,
    backoff: float,
    poster: Callable[[str, bytes], int] = post,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> bool:
    """Post one crossing, retried with exponential backoff; every attempt logged."""
    payload = body(c, now)
    where = shown_url(c.alert.webhook)
    for attempt in range(1, ATTEMPTS + 1):
        try:
            status = await asyncio.to_thread(poster, c.alert.webhook, payload)
            error = None if 200 <= status < 300 else f"HTTP {status}"
            final = error is None or not _retryable(status)
        except (OSError, ValueError) as exc:
            error, final = f"{type(exc).__name__}: {exc}", False
        if error is None:
            log.info("alert sent: %s reached %d%% of its budget (webhook %s, attempt %d)",
                     c.alert.subject, c.threshold, where, attempt)  # fmt: skip
            return True
        if final or attempt == ATTEMPTS:
            log.error("alert NOT sent: %s reached %d%% of its budget; webhook %s failed "
                      "(%s, attempt %d of %d, given up)", c.alert.subject, c.threshold,
                      where, error, attempt, ATTEMPTS)  # fmt: skip
            return False
        delay = backoff * 2 ** (attempt - 1)
        log.warning("alert for %s at %d%%: webhook %s failed (%s, attempt %d of %d); retried "
                    "in %.1f s", c.alert.subject, c.threshold, where, error, attempt,
                    ATTEMPTS, delay)  # fmt: skip
        await sleep(delay)
    return False


# -- the watch of a worker ----------------------------------------------------------------

SpentNow = Callable[[str], Awaitable[float]]
"""A budget counter's name -> what it says was spent this period."""


@dataclass(frozen=True)
class Watched:
    """A subject whose budget a request just settled against."""

    subject: str
    budget: float
    period: str
    team: str | None = None


class AlertWatch:
    """One worker's alerts: which subjects have one, which were touched since the last
    look, and the background task that looks (off the request path)."""

    def __init__(
        self,
        store: KeyStore,
        counter_spent: SpentNow,
        *,
        ledger_on: bool,
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        self.store = store
        self.counter_spent = counter_spent
        self.ledger_on = ledger_on
        self.backoff = float(environ.get(BACKOFF_ENV, "2") or 2)
        self.alerts: dict[str, Alert] = {}
        self._touched: dict[str, Watched] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._sending: set[asyncio.Task[bool]] = set()

    def configure(self, alerts: dict[str, Alert]) -> None:
        self.alerts = alerts

    def touched(self, watched: Iterable[Watched]) -> None:
        """Requests settled against these budgets (cheap: the look happens later)."""
        alerts = self.alerts
        for w in watched:
            if w.subject in alerts:
                self._touched[w.subject] = w
                self._wake.set()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._run())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self._sending:  # posts under way get a moment to finish, not their retries
            _, pending = await asyncio.wait(self._sending, timeout=CLOSE_WAIT)
            for task in pending:
                task.cancel()
                log.error("alert NOT sent: the worker stopped while its webhook was retried")

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await asyncio.sleep(0.05)  # a burst of requests: one look
            touched, self._touched = self._touched, {}
            for w in touched.values():
                try:
                    await self.look(w, time.time())
                except Exception:
                    log.exception("the alerts of %s could not be checked", w.subject)

    async def spent(self, w: Watched, start: float) -> float:
        counted = await self.counter_spent(w.subject + ":budget")
        if not self.ledger_on:
            return counted
        kind, _, name = w.subject.partition(":")
        column = "key_name" if kind == "key" else "team"
        recorded, _ = await asyncio.to_thread(self.store.spent, column, name, start)
        return max(counted, recorded)

    async def look(self, w: Watched, now: float) -> list[Crossing]:
        """Claim and send every threshold `w` reached this period that nobody sent yet."""
        alert = self.alerts.get(w.subject)
        if alert is None or w.budget <= 0:
            return []
        start, end = bounds(w.period, now)
        spent = await self.spent(w, start)
        crossings = []
        for threshold in reached(alert.thresholds, w.budget, spent):
            if await asyncio.to_thread(claim, self.store, w.subject, threshold, end, now):
                crossing = Crossing(alert, threshold, w.budget, spent, w.period, start, end, w.team)
                crossings.append(crossing)
        for crossing in crossings:
            while len(self._sending) >= _MAX_SENDING:
                await asyncio.wait(self._sending, return_when=asyncio.FIRST_COMPLETED)
            task = asyncio.ensure_future(deliver(crossing, now, self.backoff))
            self._sending.add(task)
            task.add_done_callback(self._sending.discard)
        return crossings
