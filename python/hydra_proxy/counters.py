"""The counters behind every bound the proxy keeps: concurrent slots, rate windows, budget
reservations and key rests, behind one small interface so that where they live is a
setting: this process (`LocalCounters`), the workers of one machine, or Redis for a fleet.

Names are opaque strings chosen by the caller (``"key:alice:rpm"``); a store knows no
protocol, key or provider. Every method is one atomic step of the store, so a check and
its count cannot be split by another worker: a store shared by N workers admits exactly
what one process would. Times are wall-clock seconds (`time.time()`), shared by machines.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol


class Unseeded(Exception):
    """The store holds no spend of a budget for its period: it was emptied (a Redis that
    restarted without its data, or a new one), or the period is new. The caller seeds it
    from the usage ledger and asks again; a store that cannot lose its counts without the
    process never raises it."""


class Counters(Protocol):
    """One store of counters. Each method is atomic in its store."""

    async def acquire(self, name: str, limit: int, holder: str, ttl: float) -> bool:
        """Take one of the `limit` slots of `name` for `holder` (unique per holding), as a
        lease that lapses `ttl` s from now unless renewed; False when all are held."""
        ...

    async def release(self, name: str, holder: str) -> None:
        """Give `holder`'s slot of `name` back (nothing when it lapsed)."""
        ...

    async def renew(self, leases: list[tuple[str, str]], ttl: float) -> None:
        """Extend the (name, holder) leases still held to `ttl` s from now (the heartbeat)."""
        ...

    async def hit(self, name: str, limit: float, amount: float, period: float) -> float:
        """Count `amount` into the sliding window of `period` s of `name` if the window's
        total stays within `limit`: 0.0. Otherwise nothing is counted and the answer is
        the seconds until it would fit (> 0)."""
        ...

    async def add(self, name: str, amount: float, period: float) -> None:
        """Count `amount` into `name`'s window of `period` s unconditionally (a settled
        token count, which is known only after the reply)."""
        ...

    async def reserve(self, name: str, amount: float, cap: float, holder: str) -> bool:
        """Reserve `amount` of `name` for `holder` if spent + reserved + amount <= cap
        (`Unseeded`: the store does not know what the period spent)."""
        ...

    async def settle(self, name: str, holder: str, spent: float, expires: float) -> None:
        """Drop `holder`'s reservation of `name` and add `spent` (0: a failure released
        it) to what `name` has spent; the spend is forgotten at `expires` (period end)."""
        ...

    async def spent(self, name: str) -> tuple[float, float]:
        """What `name` has spent and what is reserved, in this period."""
        ...

    async def seed(self, name: str, spent: float, expires: float) -> None:
        """Set `name`'s spend from the ledger when the store has none for the period (or
        only what was settled since it lost the rest: the larger of the two stays)."""
        ...

    async def rest(self, name: str, until: float) -> None:
        """Mark `name` (a provider key) resting until `until`; a later end wins."""
        ...

    async def rested_until(self, name: str) -> float:
        """When `name`'s rest ends (0.0: not resting)."""
        ...


@dataclass
class _Budget:
    spent: float = 0.0
    expires: float = 0.0
    reserved: dict[str, float] = field(default_factory=dict)


class LocalCounters:
    """The counters of this process: exact within it, blind to other workers."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._now = clock
        self._slots: dict[str, dict[str, float]] = {}
        self._windows: dict[str, deque[tuple[float, float]]] = {}
        self._totals: dict[str, float] = {}
        self._budgets: dict[str, _Budget] = {}
        self._rests: dict[str, float] = {}

    def _held(self, name: str) -> dict[str, float]:
        holders = self._slots.setdefault(name, {})
        now = self._now()
        for holder in [h for h, until in holders.items() if until <= now]:
            del holders[holder]
        return holders

    async def acquire(self, name: str, limit: int, holder: str, ttl: float) -> bool:
        holders = self._held(name)
        if len(holders) >= limit:
            return False
        holders[holder] = self._now() + ttl
        return True

    async def adopt(self, name: str, holder: str, ttl: float) -> None:
        """Count a slot `holder` already holds elsewhere (a shared store that went away),
        past any limit: the stream is running."""
        self._held(name)[holder] = self._now() + ttl

    async def release(self, name: str, holder: str) -> None:
        self._slots.get(name, {}).pop(holder, None)

    async def renew(self, leases: list[tuple[str, str]], ttl: float) -> None:
        until = self._now() + ttl
        for name, holder in leases:
            holders = self._slots.get(name)
            if holders is not None and holder in holders:
                holders[holder] = until

    def _window(self, name: str, period: float) -> deque[tuple[float, float]]:
        window = self._windows.setdefault(name, deque())
        horizon = self._now() - period
        while window and window[0][0] <= horizon:
            self._totals[name] -= window.popleft()[1]
        if not window:
            self._totals[name] = 0.0  # no float drift once empty
        return window

    async def hit(self, name: str, limit: float, amount: float, period: float) -> float:
        window = self._window(name, period)
        total = self._totals[name]
        if total + amount <= limit:
            window.append((self._now(), amount))
            self._totals[name] = total + amount
            return 0.0
        # The oldest entries leave first: wait until enough of them have.
        need, freed = total + amount - limit, 0.0
        for at, counted in window:
            freed += counted
            if freed >= need:
                return max(at + period - self._now(), 0.001)
        return period  # more than the limit alone: the window will never take it

    async def add(self, name: str, amount: float, period: float) -> None:
        window = self._window(name, period)
        window.append((self._now(), amount))
        self._totals[name] += amount

    def _budget(self, name: str) -> _Budget:
        budget = self._budgets.setdefault(name, _Budget())
        if budget.expires and budget.expires <= self._now():
            budget.spent, budget.expires = 0.0, 0.0
        return budget

    async def reserve(self, name: str, amount: float, cap: float, holder: str) -> bool:
        budget = self._budget(name)
        if budget.spent + sum(budget.reserved.values()) + amount > cap:
            return False
        budget.reserved[holder] = amount
        return True

    async def settle(self, name: str, holder: str, spent: float, expires: float) -> None:
        budget = self._budget(name)
        budget.reserved.pop(holder, None)
        budget.spent += spent
        budget.expires = expires

    async def spent(self, name: str) -> tuple[float, float]:
        budget = self._budget(name)
        return budget.spent, sum(budget.reserved.values())

    async def seed(self, name: str, spent: float, expires: float) -> None:
        budget = self._budget(name)
        if not budget.expires:
            budget.spent, budget.expires = spent, expires

    async def rest(self, name: str, until: float) -> None:
        self._rests[name] = max(self._rests.get(name, 0.0), until)

    async def rested_until(self, name: str) -> float:
        until = self._rests.get(name, 0.0)
        if until and until <= self._now():
            del self._rests[name]
            return 0.0
        return until
