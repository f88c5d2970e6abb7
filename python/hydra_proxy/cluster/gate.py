"""An admission gate whose slots are counted in a store shared by every worker (and
replica), while its fair queue stays in this process.

A request takes a slot when the shared count of `name` is under the bound: one atomic
check of the store. Past it, it waits in this worker's round-robin queue of sessions
(server/checks/admission.py's `Gate`), and the queue's head asks the store again when a slot of
this worker frees (at once) and, since a slot freed by another worker says nothing here,
every `POLL` seconds at most (at random within it, so that the waiting workers do not ask
in lockstep). What holds: within a worker, sessions are served round-robin; across
workers and replicas, a slot freed by a worker goes to that worker's next waiter first,
and one freed by a worker with none waiting goes to whichever waiting worker asks next:
every waiting worker is served, in no global order of sessions.

Each slot is a lease (`Leases`): a heartbeat renews every lease this process holds every
third of the TTL, so the slots of a process killed without a word lapse within the TTL.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import random
from collections import deque
from typing import Any

from ..counters import Counters
from ..server.checks.admission import Gate, Refused, Slot

log = logging.getLogger("hydra_proxy.cluster")

POLL = 0.05  # seconds, at most, between two asks of the store by a waiting queue's head


class Leases:
    """The slots this process holds in the shared store, renewed by a heartbeat."""

    def __init__(self, counters: Counters, ttl: float, replica: str) -> None:
        self.counters = counters
        self.ttl = ttl
        self.prefix = f"{replica}/{os.getpid()}/"
        self.held: dict[tuple[str, str], None] = {}
        self._ids = itertools.count(1)
        self._heart: asyncio.Task[None] | None = None
        self._pending: set[asyncio.Task[None]] = set()

    def holder(self) -> str:
        return f"{self.prefix}{next(self._ids)}"

    def all(self) -> list[tuple[str, str]]:
        return list(self.held)

    async def acquire(self, name: str, limit: int) -> str | None:
        """A lease of one of `name`'s `limit` slots (its holder id), or None: all held."""
        holder = self.holder()
        return holder if await self.take(name, limit, holder) else None

    async def take(self, name: str, limit: int, holder: str) -> bool:
        """One of `name`'s `limit` slots as `holder`'s lease: False when all are held."""
        self.held[(name, holder)] = None  # counted before the await: a beat meanwhile renews
        try:
            ok = await self.counters.acquire(name, limit, holder, self.ttl)
        except BaseException:
            self.held.pop((name, holder), None)
            raise
        if not ok:
            self.held.pop((name, holder), None)
            return False
        self.start()
        return True

    def release(self, name: str, holder: str) -> None:
        """Give the lease back (in the background: the caller is in a `finally`)."""
        self.held.pop((name, holder), None)
        task = asyncio.get_running_loop().create_task(self._release(name, holder))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _release(self, name: str, holder: str) -> None:
        try:
            await self.counters.release(name, holder)
        except Exception:  # the lease lapses at its TTL
            log.warning("cluster: a slot of %s could not be given back; it lapses", name)

    def start(self) -> None:
        if self._heart is None or self._heart.done():
            self._heart = asyncio.get_running_loop().create_task(self._beat())

    async def beat_once(self) -> None:
        await self.counters.renew(self.all(), self.ttl)

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.ttl / 3)
            try:
                await self.beat_once()
            except Exception:
                log.exception("cluster: heartbeat failed")

    async def close(self) -> None:
        if self._heart is not None:
            self._heart.cancel()
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)


class SharedSlot(Slot):
    __slots__ = ("holder",)

    def __init__(self, gate: SharedGate, taken: float, holder: str) -> None:
        super().__init__(gate, taken)
        self.holder = holder

    def release(self) -> None:
        gate = self.gate
        if gate is not None:
            self.gate = None
            assert isinstance(gate, SharedGate)
            gate.give_back_shared(self.taken, self.holder)


class SharedGate(Gate):
    """A `Gate` whose bound holds across every process sharing `leases`' store."""

    def __init__(
        self, name: str, limit: int, depth: int, label: str, key: str, leases: Leases
    ) -> None:
        super().__init__(name, limit, depth, label)
        self.key = key  # the store's name of the bound
        self.leases = leases
        self.full = False  # the store said no at the last ask
        self._wake = asyncio.Event()
        self._pump: asyncio.Task[None] | None = None

    def has_room(self) -> bool:
        return self.active < self.limit and not self.waiting and not self.full

    async def take_if_free(self) -> Slot | None:
        if self.active >= self.limit or self.waiting:
            return None
        holder = await self.leases.acquire(self.key, self.limit)
        self.full = holder is None
        if holder is None:
            return None
        self.active += 1
        return SharedSlot(self, asyncio.get_running_loop().time(), holder)

    async def take(self, session: str, deadline: float) -> Slot:
        slot = await self.take_if_free()
        if slot is not None:
            return slot
        loop = asyncio.get_running_loop()
        if self.waiting >= self.depth:
            self.refused += 1
            raise Refused(self.name, "queue_full", self.retry_after())
        waiter: asyncio.Future[str | None] = loop.create_future()
        queue = self.sessions.get(session)
        if queue is None:
            queue = self.sessions[session] = deque()
        queue.append(waiter)  # type: ignore[arg-type]
        self.waiting += 1
        self._start_pump()
        timer = loop.call_at(deadline, self._expire, session, waiter)
        try:
            holder = await waiter
        except BaseException:
            granted = (
                waiter.done()
                and not waiter.cancelled()
                and waiter.exception() is None
                and waiter.result() is not None
            )
            if granted:  # a slot granted in the same moment goes back
                self.give_back_shared(loop.time(), waiter.result() or "")
            else:
                self._remove(session, waiter)  # type: ignore[arg-type]
            raise
        finally:
            timer.cancel()
        if holder is None:
            self.refused += 1
            raise Refused(self.name, "queue_timeout", self.retry_after())
        return SharedSlot(self, loop.time(), holder)

    def give_back(self, taken: float) -> None:  # pragma: no cover - slots are SharedSlots
        raise AssertionError("a shared gate's slot gives back its holder")

    def give_back_shared(self, taken: float, holder: str) -> None:
        now = asyncio.get_running_loop().time()
        self.hold += 0.2 * ((now - taken) - self.hold)
        self.active -= 1
        self.leases.release(self.key, holder)
        self.full = False
        self._wake.set()

    def _start_pump(self) -> None:
        if self._pump is None or self._pump.done():
            self._pump = asyncio.get_running_loop().create_task(self._serve_queue())

    def _head(self) -> tuple[str, asyncio.Future[str | None]] | None:
        """The waiter whose turn it is (cancelled ones dropped)."""
        sessions = self.sessions
        while sessions:
            session = next(iter(sessions))
            queue = sessions[session]
            while queue and queue[0].done():
                queue.popleft()
                self.waiting -= 1
            if queue:
                return session, queue[0]  # type: ignore[return-value]
            del sessions[session]
        return None

    async def _serve_queue(self) -> None:
        """Give the store's free slots to this worker's waiters, in turn, while any wait."""
        while True:
            head = self._head()
            if head is None:
                return
            if self.active < self.limit:
                try:
                    holder = await self.leases.acquire(self.key, self.limit)
                except Exception as exc:
                    self._fail_all(exc)
                    return
                if holder is not None:
                    self.full = False
                    self._grant(holder)
                    continue
                self.full = True
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), random.uniform(POLL / 5, POLL))

    def _grant(self, holder: str) -> None:
        head = self._head()
        if head is None:  # every waiter left meanwhile
            self.leases.release(self.key, holder)
            return
        session, waiter = head
        queue = self.sessions.pop(session)
        queue.popleft()
        self.waiting -= 1
        if queue:  # the session's next request waits for its next turn
            self.sessions[session] = queue
        self.active += 1
        waiter.set_result(holder)

    def _fail_all(self, exc: Exception) -> None:
        """The store failed the queue's ask (closed mode): every waiter gets the error."""
        for queue in self.sessions.values():
            for waiter in queue:
                if not waiter.done():
                    waiter.set_exception(exc)
            self.waiting -= len(queue)
        self.sessions.clear()

    def _expire(self, session: str, waiter: asyncio.Future[Any]) -> None:
        if not waiter.done() and self._remove(session, waiter):
            waiter.set_result(None)


class LeasedCounters:
    """The counters for code that takes slots itself (named keys' stream bounds): each slot
    it takes is one of this process's leases, at the lease TTL and renewed by the heartbeat
    (whatever TTL the caller asks), so a process killed loses it within the TTL; the rest
    goes to the store as it is."""

    def __init__(self, leases: Leases) -> None:
        self._leases = leases
        self._counters = leases.counters

    async def acquire(self, name: str, limit: int, holder: str, ttl: float) -> bool:
        return await self._leases.take(name, limit, holder)

    async def release(self, name: str, holder: str) -> None:
        self._leases.held.pop((name, holder), None)
        await self._counters.release(name, holder)

    async def renew(self, leases: list[tuple[str, str]], ttl: float) -> None:
        await self._counters.renew(leases, ttl)

    async def hit(self, name: str, limit: float, amount: float, period: float) -> float:
        return await self._counters.hit(name, limit, amount, period)

    async def add(self, name: str, amount: float, period: float) -> None:
        await self._counters.add(name, amount, period)

    async def reserve(self, name: str, amount: float, cap: float, holder: str) -> bool:
        return await self._counters.reserve(name, amount, cap, holder)

    async def settle(self, name: str, holder: str, spent: float, expires: float) -> None:
        await self._counters.settle(name, holder, spent, expires)

    async def spent(self, name: str) -> tuple[float, float]:
        return await self._counters.spent(name)

    async def seed(self, name: str, spent: float, expires: float) -> None:
        await self._counters.seed(name, spent, expires)

    async def rest(self, name: str, until: float) -> None:
        await self._counters.rest(name, until)

    async def rested_until(self, name: str) -> float:
        return await self._counters.rested_until(name)
