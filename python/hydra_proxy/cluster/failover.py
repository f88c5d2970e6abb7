"""What the bounds do while Redis cannot be reached (`[cluster] on_store_failure`).

``closed``: every check that needs the shared store is refused with `StoreUnavailable`, a
503 ``overloaded_error`` in the client's protocol (its SDK retries it); streams already
admitted run on. ``local``: the checks go to this replica's own store (the workers' host
store, or the process's own) with every limit divided by the replicas last seen alive, so
that N replicas together stay within the bound (at least one per replica: with more
replicas than the bound, the fleet admits one per replica). The slots this process held
in Redis are counted there first, so the switch admits nothing past the bound.

Either way one log line says the store is down and one that it is back, the metric
``hydra_cluster_store_failures_total`` counts the outages and
``hydra_cluster_degraded_checks_total`` (by mode) the checks answered without it. Redis is
down once a connection or an answer takes longer than `[cluster] redis_timeout` (250 ms
by default): the request that found it out is decided then, and while down no request
waits on Redis: a probe pings it every `PROBE_INTERVAL`; once it
answers, this process puts its running leases back (a Redis that restarted empty learns
them) and goes on counting locally until every other process had the time to do the same
(a heartbeat and a probe), then writes the spends, windows and rests counted meanwhile.
A process that saw no outage (shorter than a heartbeat) renews its leases at its next
heartbeat: until then a Redis restarted empty may admit up to what it forgot.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from ..counters import Counters
from ..errors import ProxyError
from .redis_store import RedisCounters
from .resp import StoreConnectionError

log = logging.getLogger("hydra_proxy.cluster")

PROBE_INTERVAL = 0.5
# Writes kept while the store is down, replayed when it is back (the oldest dropped past).
MAX_REPLAY = 10_000
MODES = ("closed", "local")

T = TypeVar("T")


class StoreUnavailable(ProxyError):
    """The shared store cannot be reached and `on_store_failure` is ``closed``."""

    def __init__(self) -> None:
        super().__init__(
            503,
            "the proxy's shared limits store is unreachable, so it admits no request it "
            "cannot count; retry shortly",
            error_type="overloaded_error",
            retry_after="2",
        )


class Fallback(Counters, Protocol):
    async def adopt(self, name: str, holder: str, ttl: float) -> None: ...


def redis_errors() -> tuple[type[BaseException], ...]:
    return (StoreConnectionError, OSError, TimeoutError, asyncio.TimeoutError)


def mask_url(url: str) -> str:
    """A Redis URL without its password, for log lines."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    auth, _, host = rest.rpartition("@")
    user = auth.split(":", 1)[0] if ":" in auth else ""
    return f"{scheme}://{user + ':' if user else ''}***@{host}"


class Failover:
    """`Counters` in Redis, with what `mode` says when Redis is unreachable."""

    def __init__(
        self,
        redis: RedisCounters,
        fallback: Fallback,
        *,
        mode: str,
        replica: str,
        leases: Callable[[], list[tuple[str, str]]],
        ttl: float,
    ) -> None:
        self.redis = redis
        self.fallback = fallback
        self.mode = mode
        self.replica = replica
        self.leases = leases
        self.ttl = ttl
        self.rejoin_wait = ttl / 3 + 2 * PROBE_INTERVAL
        self.up = True
        self.replicas = 1  # alive at the last heartbeat
        self.used: dict[str, float] = {}  # spent + reserved of each budget, last seen
        self.replay: deque[tuple[str, tuple[Any, ...]]] = deque(maxlen=MAX_REPLAY)
        self.outages = 0
        self.degraded = 0
        self._probe: asyncio.Task[None] | None = None
        self._errors = redis_errors()
        self.on_change: Callable[[bool], None] | None = None
        self.on_degraded: Callable[[str], None] | None = None

    # -- up and down ----------------------------------------------------------------------

    async def _try(self, call: Awaitable[T]) -> T | None:
        """The call's answer, or None when Redis failed it (then the store is down)."""
        try:
            return await call
        except self._errors as exc:
            await self._went_down(exc)
            return None

    async def _done(self, call: Awaitable[None]) -> bool:
        """Whether Redis did the call (else the store is down)."""
        try:
            await call
        except self._errors as exc:
            await self._went_down(exc)
            return False
        return True

    async def _went_down(self, exc: BaseException) -> None:
        if not self.up:
            return
        self.up = False
        self.outages += 1
        what = (
            "refusing bounded requests with 503 until it is back"
            if self.mode == "closed"
            else f"bounds are now this replica's, divided by {self.replicas} replica(s)"
        )
        log.error(
            "cluster store %s unreachable (%s: %s): %s",
            mask_url(self.redis.url),
            type(exc).__name__,
            exc,
            what,
        )
        if self.on_change is not None:
            self.on_change(False)
        if self.mode == "local":
            for name, holder in self.leases():
                await self.fallback.adopt(name, holder, self.ttl)
        if self._probe is None or self._probe.done():
            self._probe = asyncio.get_running_loop().create_task(self._probe_until_up())

    async def _probe_until_up(self) -> None:
        while True:
            await asyncio.sleep(PROBE_INTERVAL)
            try:
                await self.redis.ping()
                # The others may not have joined yet: their count is not this one's.
                await self.redis.beat(self.leases(), self.ttl, self.replica)
                # Every other process learns it is back within a probe (or a heartbeat)
                # and puts its running leases back: only then are the counts whole.
                await asyncio.sleep(self.rejoin_wait)
                self.replicas = max(await self.redis.beat(self.leases(), self.ttl, self.replica), 1)
                while self.replay:
                    op, args = self.replay[0]
                    await getattr(self.redis, op)(*args)
                    self.replay.popleft()
            except self._errors:
                continue
            break
        self.up = True
        log.warning("cluster store %s is back: bounds are shared again", mask_url(self.redis.url))
        if self.on_change is not None:
            self.on_change(True)

    def _degraded(self) -> None:
        """A check answered without the shared store; raises in closed mode."""
        self.degraded += 1
        if self.on_degraded is not None:
            self.on_degraded(self.mode)
        if self.mode == "closed":
            raise StoreUnavailable()

    def _share(self, limit: float) -> float:
        return limit / max(self.replicas, 1)

    async def close(self) -> None:
        if self._probe is not None:
            self._probe.cancel()
        await self.redis.close()

    # -- the counters ---------------------------------------------------------------------

    async def acquire(self, name: str, limit: int, holder: str, ttl: float) -> bool:
        if self.up:
            got = await self._try(self.redis.acquire(name, limit, holder, ttl))
            if got is not None:
                return got
            # The switch counted this holder among the running leases (it is listed from
            # before its ask): it holds nothing yet, so it must not fill the bound it asks.
            await self.fallback.release(name, holder)
        self._degraded()
        return await self.fallback.acquire(name, max(1, int(self._share(limit))), holder, ttl)

    async def release(self, name: str, holder: str) -> None:
        await self.fallback.release(name, holder)
        if self.up:
            await self._done(self.redis.release(name, holder))

    async def renew(self, leases: list[tuple[str, str]], ttl: float) -> None:
        await self.fallback.renew(leases, ttl)
        if self.up:
            replicas = await self._try(self.redis.beat(leases, ttl, self.replica))
            if replicas is not None:
                self.replicas = max(replicas, 1)

    async def hit(self, name: str, limit: float, amount: float, period: float) -> float:
        if self.up:
            wait = await self._try(self.redis.hit(name, limit, amount, period))
            if wait is not None:
                return wait
        self._degraded()
        return await self.fallback.hit(name, self._share(limit), amount, period)

    async def add(self, name: str, amount: float, period: float) -> None:
        if self.up and await self._done(self.redis.add(name, amount, period)):
            return
        await self.fallback.add(name, amount, period)
        self.replay.append(("add", (name, amount, period)))

    async def reserve(self, name: str, amount: float, cap: float, holder: str) -> bool:
        if self.up:
            seen = await self._try(self.redis.reserve_seen(name, amount, cap, holder))
            if seen is not None:
                self.used[name] = seen[1]
                return seen[0]
        self._degraded()
        left = max(cap - self.used.get(name, 0.0), 0.0)
        return await self.fallback.reserve(name, amount, self._share(left), holder)

    async def settle(self, name: str, holder: str, spent: float, expires: float) -> None:
        if self.up and await self._done(self.redis.settle(name, holder, spent, expires)):
            return
        await self.fallback.settle(name, holder, spent, expires)
        self.replay.append(("settle", (name, holder, spent, expires)))

    async def spent(self, name: str) -> tuple[float, float]:
        if self.up:
            answer = await self._try(self.redis.spent(name))
            if answer is not None:
                return answer
        self._degraded()
        return await self.fallback.spent(name)

    async def seed(self, name: str, spent: float, expires: float) -> None:
        if self.up and await self._done(self.redis.seed(name, spent, expires)):
            return
        await self.fallback.seed(name, spent, expires)

    async def rest(self, name: str, until: float) -> None:
        await self.fallback.rest(name, until)
        if self.up and await self._done(self.redis.rest(name, until)):
            return
        if until > time.time():
            self.replay.append(("rest", (name, until)))

    async def rested_until(self, name: str) -> float:
        if self.up:
            until = await self._try(self.redis.rested_until(name))
            if until is not None:
                return until
        return await self.fallback.rested_until(name)

    async def rests(self, names: list[str]) -> list[float]:
        """`rested_until` of many names at once (the rest sync's poll)."""
        if self.up:
            found = await self._try(self.redis.rests(names))
            if found is not None:
                return found
        return [await self.fallback.rested_until(n) for n in names]
