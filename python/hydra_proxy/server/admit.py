"""Admission (server/admission.py) applied to HTTP requests: which session a request
belongs to, a slot taken with its wait counted, and a refusal as the client's error.

Sessions: Claude Code sends ``x-claude-code-session-id``, Codex ``session-id`` (older
releases ``session_id``); a request without one is its client key's, else its peer
address's.

A refusal is a 429 ``rate_limit_error`` with ``retry-after`` in every client protocol (the
error body is the client's: app.error renders it). 429 rather than 529 because both
official SDKs retry a 429 after its retry-after, and Claude Code retries a 429 up to its
retry limit while it gives up after a few 529s ("Repeated 529 Overloaded errors") or
switches to its fallback model.
"""

from __future__ import annotations

import asyncio
import contextlib

from ..errors import ProxyError
from ..usage.service import UsageService
from .admission import Admission, Gate, Refused, Slot, Ticket
from .asgi import ClientGone, Receive, Scope, header

_SESSION_HEADERS = (b"x-claude-code-session-id", b"session-id", b"session_id")
_MAX_SESSION = 128  # longer values are cut: the id is only a queue's key


def session_of(scope: Scope, key_id: str | None) -> str:
    """The agent session a request belongs to, for the fair queue."""
    for name in _SESSION_HEADERS:
        value = header(scope, name)
        if value:
            return "s:" + value[:_MAX_SESSION].decode("latin-1")
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
    """A slot of `gate` (None: unbounded); ProxyError (429) when refused. A request that
    had to wait has its queue depth and wait in `log` and in the metrics."""
    if gate is None:
        return None
    if gate.has_room():
        return await admission.enter(gate, ticket)
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
        if not last and admission.limits.when_full == "fallback" and not gate.has_room():
            return False
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
        if gate is None or gate.has_room():
            return await take(self.admission, gate, self.ticket, self.usage, log)
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
