"""Admission control: a bound on concurrent upstream exchanges per provider and per client
key, a fair queue past it, and how a request takes its slots.

A `Gate` counts the exchanges that hold one of its slots. Past its limit a request waits in
the gate's queue, grouped by session (an agent); a freed slot goes to the session after the
one served last, round-robin, so one agent's burst cannot starve another. A wait ends with
a slot, or with `Refused` when the queue is full (`depth`) or the deadline passes. The gates
know no protocol: a refusal becomes the client's 429 in `refusal`.

Sessions (`session_of`): Claude Code sends ``x-claude-code-session-id``, Codex
``session-id`` (older releases ``session_id``); a request without one is its client key's,
else its peer address's.

A refusal is a 429 ``rate_limit_error`` with ``retry-after`` in every client protocol.
429 rather than 529 because both official SDKs retry a 429 after its retry-after, and
Claude Code retries a 429 up to its retry limit while it gives up after a few 529s
("Repeated 529 Overloaded errors") or switches to its fallback model.

The gates count in the worker process; with several processes (workers, replicas) the
worker's `Admission` makes its gates with `make_gate`, whose slots are counted in a shared
store (hydra_proxy.cluster) while the fair queue stays per worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Literal, Protocol

from ...config import Settings
from ...errors import ProxyError
from ...usage.service import UsageService
from ..pipeline.exchange import ClientGone, Receive, Scope, header
from ..pipeline.sessions import agent_id, session_id

# A refusal's retry-after, in seconds: the expected wait for a slot, within these bounds.
MIN_RETRY_AFTER = 1
MAX_RETRY_AFTER = 60
# Weight of the newest hold time in the running estimate (an exponential moving average).
_HOLD_WEIGHT = 0.2


@dataclass(frozen=True)
class ConcurrencyLimits:
    """How many exchanges may run at once, per worker (0: unbounded), and how long and how
    many may wait past the bound."""

    provider_streams: int = 0
    """Per provider, unless `provider_overrides` names it."""
    provider_overrides: Mapping[str, int] = field(default_factory=dict)
    key_streams: int = 0
    """Per client (proxy) key."""
    queue_timeout: float = 30.0
    """Seconds a request may wait for its slots, in all."""
    queue_depth: int = 256
    """Requests that may wait for one gate; one more is refused at once."""
    when_full: Literal["fallback", "queue"] = "fallback"
    """A full provider with a fallback after it in the chain: go on to the next ("fallback")
    or wait for it ("queue"). The last attempt always waits."""

    def provider_limit(self, name: str) -> int:
        return self.provider_overrides.get(name, self.provider_streams)


def limits_of(settings: Settings) -> ConcurrencyLimits:
    """The `[admission]` settings as ConcurrencyLimits."""
    return ConcurrencyLimits(
        provider_streams=settings.provider_streams,
        provider_overrides=dict(settings.provider_stream_overrides),
        key_streams=settings.key_streams,
        queue_timeout=settings.queue_timeout,
        queue_depth=settings.queue_depth,
        when_full="queue" if settings.when_full.lower() == "queue" else "fallback",
    )


class Refused(Exception):
    """No slot: the queue was full, or the wait reached its deadline."""

    def __init__(
        self, gate: str, reason: Literal["queue_full", "queue_timeout"], retry_after: int
    ) -> None:
        what = "queue is full" if reason == "queue_full" else "wait timed out"
        super().__init__(f"{gate}: every slot is taken and the {what}")
        self.gate = gate
        self.reason = reason
        self.retry_after = retry_after


class Slot:
    """One held slot of a gate; `release` is idempotent."""

    __slots__ = ("gate", "taken")

    def __init__(self, gate: Gate, taken: float) -> None:
        self.gate: Gate | None = gate
        self.taken = taken

    def release(self) -> None:
        gate = self.gate
        if gate is not None:
            self.gate = None
            gate.give_back(self.taken)


class Gate:
    """At most `limit` slots held at once; past it, a round-robin queue of sessions."""

    def __init__(self, name: str, limit: int, depth: int, label: str = "") -> None:
        self.name = name  # for messages: "provider 'x'", "client key 1a2b3c4d"
        self.label = label or name  # for metrics: the provider's name, or "client_key"
        self.limit = limit
        self.depth = depth
        self.active = 0
        self.waiting = 0
        # Sessions with waiters, in serving order (a dict keeps insertion order: the ring).
        self.sessions: dict[str, deque[asyncio.Future[bool]]] = {}
        self.hold = 1.0  # seconds a slot is held, running estimate
        self.refused = 0

    def has_room(self) -> bool:
        return self.active < self.limit and not self.waiting

    async def take_if_free(self) -> Slot | None:
        """A slot now if one is free and nobody waits, else None (no wait)."""
        if not self.has_room():
            return None
        self.active += 1
        return Slot(self, asyncio.get_running_loop().time())

    def retry_after(self) -> int:
        """Seconds until a slot is likely free for one more request."""
        expected = self.hold * (self.waiting + 1) / self.limit
        return max(MIN_RETRY_AFTER, min(MAX_RETRY_AFTER, math.ceil(expected)))

    async def take(self, session: str, deadline: float) -> Slot:
        """A slot, at once when there is room, else after waiting in turn (Refused: the
        queue is full or `deadline`, a loop time, passed)."""
        loop = asyncio.get_running_loop()
        if self.active < self.limit and not self.waiting:
            self.active += 1
            return Slot(self, loop.time())
        if self.waiting >= self.depth:
            self.refused += 1
            raise Refused(self.name, "queue_full", self.retry_after())
        waiter: asyncio.Future[bool] = loop.create_future()
        queue = self.sessions.get(session)
        if queue is None:
            queue = self.sessions[session] = deque()
        queue.append(waiter)
        self.waiting += 1
        timer = loop.call_at(deadline, self._expire, session, waiter)
        try:
            granted = await waiter
        except BaseException:
            # Cancelled (the client left, the task was cancelled): a slot granted in the
            # same moment goes back; a waiter still queued leaves the queue.
            if waiter.done() and not waiter.cancelled() and waiter.result():
                self.give_back(loop.time())
            else:
                self._remove(session, waiter)
            raise
        finally:
            timer.cancel()
        if not granted:
            self.refused += 1
            raise Refused(self.name, "queue_timeout", self.retry_after())
        return Slot(self, loop.time())

    def give_back(self, taken: float) -> None:
        """A slot is free again: the next session in turn gets it."""
        now = asyncio.get_running_loop().time()
        self.hold += _HOLD_WEIGHT * ((now - taken) - self.hold)
        self.active -= 1
        sessions = self.sessions
        while self.active < self.limit and sessions:
            session = next(iter(sessions))
            queue = sessions.pop(session)
            waiter = queue.popleft()
            self.waiting -= 1
            if queue:  # the session's next request waits for its next turn
                sessions[session] = queue
            if waiter.done():  # cancelled, not yet removed by its task
                continue
            self.active += 1
            waiter.set_result(True)

    def _expire(self, session: str, waiter: asyncio.Future[bool]) -> None:
        if not waiter.done() and self._remove(session, waiter):
            waiter.set_result(False)

    def _remove(self, session: str, waiter: asyncio.Future[bool]) -> bool:
        queue = self.sessions.get(session)
        if queue is None:
            return False
        try:
            queue.remove(waiter)
        except ValueError:
            return False
        self.waiting -= 1
        if not queue:
            del self.sessions[session]
        return True


@dataclass
class Ticket:
    """One request's way through admission: who it is, until when it may wait, and what
    it held (the access log reports the queue depth it met and its wait)."""

    session: str
    deadline: float
    waited: float = 0.0
    depth: int = 0
    """Requests that were waiting ahead of it, at the deepest gate it queued at."""

    def log(self) -> dict[str, object]:
        return {"queue": self.depth, "wait_ms": round(self.waited * 1000, 1)}


class GateMaker(Protocol):
    """Makes a gate: its name for messages, limit, queue depth, metrics label, and the
    name of its bound in a shared store."""

    def __call__(self, name: str, limit: int, depth: int, label: str, key: str) -> Gate: ...


def local_gate(name: str, limit: int, depth: int, label: str, key: str) -> Gate:
    return Gate(name, limit, depth, label)


class Admission:
    """The worker's gates, made as providers and keys are first seen."""

    def __init__(self, limits: ConcurrencyLimits, make_gate: GateMaker = local_gate) -> None:
        self.limits = limits
        self.make_gate = make_gate
        self.providers: dict[str, Gate | None] = {}
        self.keys: dict[str, Gate] = {}

    @property
    def active(self) -> bool:
        """Whether any bound is set (else requests skip admission entirely)."""
        limits = self.limits
        return bool(
            limits.provider_streams or limits.key_streams or any(limits.provider_overrides.values())
        )

    def ticket(self, session: str) -> Ticket:
        loop = asyncio.get_running_loop()
        return Ticket(session, loop.time() + self.limits.queue_timeout)

    def provider_gate(self, name: str) -> Gate | None:
        try:
            return self.providers[name]
        except KeyError:
            limit = self.limits.provider_limit(name)
            gate = None
            if limit:
                gate = self.make_gate(
                    f"provider {name!r}", limit, self.limits.queue_depth, name, f"provider:{name}"
                )
            self.providers[name] = gate
            return gate

    def key_gate(self, key_id: str | None) -> Gate | None:
        """The gate of a proxy key (None: no key, or no per-key bound). Keys are the
        configured proxy keys, so the map stays small."""
        if key_id is None or not self.limits.key_streams:
            return None
        gate = self.keys.get(key_id)
        if gate is None:
            gate = self.keys[key_id] = self.make_gate(
                f"client key {key_id}",
                self.limits.key_streams,
                self.limits.queue_depth,
                "client_key",
                f"key:{key_id}",
            )
        return gate

    async def enter(self, gate: Gate | None, ticket: Ticket) -> Slot | None:
        """A slot of `gate` for `ticket` (None: the gate is unbounded); Refused past the
        queue's bounds. The ticket records the wait."""
        if gate is None:
            return None
        ticket.depth = max(ticket.depth, gate.waiting)
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            return await gate.take(ticket.session, ticket.deadline)
        finally:
            ticket.waited += loop.time() - started


# -- a request's admission --------------------------------------------------------------

_MAX_SESSION = 128  # longer values are cut: the id is only a queue's key


def session_of(scope: Scope, key_id: str | None) -> str:
    """The agent session a request belongs to, for the fair queue: a teammate's requests
    (Claude Code's agent id) queue apart from their lead's."""
    read = partial(header, scope)
    named = session_id(read)
    if named:
        agent = agent_id(read)
        session = "s:" + named[:_MAX_SESSION]
        return session + "/" + agent if agent is not None else session
    if key_id is not None:
        return "k:" + key_id
    client = scope.get("client")
    return "p:" + (str(client[0]) if client else "-")


def refusal(exc: Refused) -> ProxyError:
    return ProxyError(
        429,
        f"the proxy's {exc}; retry in {exc.retry_after} s",
        error_type="rate_limit_error",
        retry_after=str(exc.retry_after),
    )


async def take(
    admission: Admission,
    gate: Gate | None,
    ticket: Ticket,
    usage: UsageService | None,
    log: dict[str, object],
) -> Slot | None:
    """A slot of `gate` after waiting in its queue (the caller found none free);
    ProxyError (429) when refused. The wait and the queue depth met go into `log` and
    the metrics."""
    if gate is None:
        return None
    metrics = usage.metrics if usage is not None else None
    if metrics is not None:
        metrics.admission_queued(gate.label)
    before = ticket.waited
    try:
        return await admission.enter(gate, ticket)
    except Refused as exc:
        if metrics is not None:
            metrics.admission_refused(gate.label, exc.reason)
        raise refusal(exc) from None
    finally:
        if metrics is not None:
            metrics.admission_dequeued(gate.label, ticket.waited - before)
        log.update(ticket.log())


class Admitted:
    """One request's slots: its client key's for the whole request, and the provider's of
    the attempt being tried (given back when the next attempt takes its own). `release`
    gives back both, on every path: the caller runs it in a `finally`."""

    __slots__ = ("admission", "key_slot", "receive", "slot", "ticket", "usage")

    def __init__(
        self, admission: Admission, session: str, receive: Receive, usage: UsageService | None
    ) -> None:
        self.admission = admission
        self.ticket = admission.ticket(session)
        self.receive = receive
        self.usage = usage
        self.key_slot: Slot | None = None
        self.slot: Slot | None = None

    async def enter_key(self, key_id: str | None, log: dict[str, object]) -> None:
        gate = self.admission.key_gate(key_id)
        self.key_slot = await self._take(gate, log)

    async def enter(self, provider: str, log: dict[str, object], *, last: bool) -> bool:
        """The provider's slot for the next attempt; False when the provider is full and
        the attempt should be skipped for the next one (`when_full = "fallback"`)."""
        if self.slot is not None:
            self.slot.release()
            self.slot = None
        admission = self.admission
        gate = admission.provider_gate(provider)
        if gate is None:
            return True
        if not last and admission.limits.when_full == "fallback":
            self.slot = await gate.take_if_free()
            return self.slot is not None
        self.slot = await self._take(gate, log)
        return True

    def release(self) -> None:
        if self.slot is not None:
            self.slot.release()
            self.slot = None
        if self.key_slot is not None:
            self.key_slot.release()
            self.key_slot = None

    async def _take(self, gate: Gate | None, log: dict[str, object]) -> Slot | None:
        if gate is None:
            return None
        if gate.has_room():
            # Room here; a shared gate's store may still be full (slots of other
            # processes): then this request waits, and its wait is logged like any other.
            slot = await gate.take_if_free()
            if slot is not None:
                return slot
        # A wait: a client that leaves meanwhile leaves the queue at once.
        waiting = asyncio.ensure_future(take(self.admission, gate, self.ticket, self.usage, log))
        watching = asyncio.ensure_future(_disconnected(self.receive))
        try:
            await asyncio.wait((waiting, watching), return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # this task is cancelled: a slot granted meanwhile goes back
            if waiting.done() and not waiting.cancelled() and waiting.exception() is None:
                slot = waiting.result()
                if slot is not None:
                    slot.release()
            raise
        finally:
            watching.cancel()
            if not waiting.done():
                waiting.cancel()  # the gate takes the waiter out of its queue
                with contextlib.suppress(asyncio.CancelledError):
                    await waiting
        if waiting.cancelled():
            raise ClientGone
        return waiting.result()


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
