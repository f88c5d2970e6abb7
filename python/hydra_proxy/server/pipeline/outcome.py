"""What a request's answer records, for its usage record and its access-log line: the
status sent, when its first body byte went out and what the client was sent, how the
upstream's reply was read (the transducer, a passed-through body, a JSON reply's usage),
the error, and the counts recorded.

Each step of the answer notes its part through one method here, and only here are these
fields set (tests/server/test_exchange_parts.py); server/pipeline/accounting.py reads them.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...transducers import StreamTransducer
    from ...usage.record import Tokens
    from .accounting import Passthrough
    from .exchange import Message, Send

# What a model request's client was sent, kept to count a reply whose counts never came
# (server/pipeline/accounting.py; past this, the rest is counted at the rate of what was kept).
RELAYED_BYTES = 1 << 20


class Relayed:
    """The reply bytes a model request's client was sent (the first RELAYED_BYTES)."""

    __slots__ = ("kept", "kept_size", "size")

    def __init__(self) -> None:
        self.kept: list[bytes] = []
        self.kept_size = 0
        self.size = 0

    def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.kept_size < RELAYED_BYTES:
            self.kept.append(chunk)
            self.kept_size += len(chunk)


class Outcome:
    """What one request's answer records."""

    __slots__ = (
        "counts",
        "error_type",
        "estimate",
        "first_byte",
        "passthrough",
        "refusal",
        "relayed",
        "reply_usage",
        "status",
        "transducer",
    )

    def __init__(self) -> None:
        self.status = 0
        self.first_byte: float | None = None
        self.relayed: Relayed | None = None
        """What the client was sent of a model request's reply (server/pipeline/accounting.py)."""
        self.transducer: StreamTransducer | None = None
        self.estimate = 0
        """The relay's input estimate (its transducer's usage before any event)."""
        self.passthrough: Passthrough | None = None
        self.reply_usage: dict[str, Any] | None = None
        self.error_type: str | None = None
        self.refusal: str | None = None
        """Why the proxy refused a model request itself, before any upstream attempt (the
        usage record's `refusal`: no spend)."""
        self.counts: Tokens | None = None
        """The usage record's token counts (set when the request is recorded)."""

    def watch(self, send: Send) -> Send:
        """`send`, noting when the first body byte goes out and keeping what is sent
        (`Relayed`; the same awaitable is returned: relay.py tests it to send from a parser
        callback)."""
        relayed = self.relayed = Relayed()

        def watched(message: Message) -> Awaitable[None]:
            body = message.get("body")
            if body:
                if self.first_byte is None:
                    self.first_byte = time.monotonic()
                relayed.add(body)
            return send(message)

        return watched

    def started(self, status: int) -> None:
        """The response started with `status`."""
        self.status = status

    def failed(self, error_type: str | None, refusal: str | None = None) -> None:
        """The answer failed with `error_type`; `refusal`: the proxy's own, before any
        upstream attempt."""
        self.error_type = error_type
        if refusal is not None:
            self.refusal = refusal

    def relaying(self, transducer: StreamTransducer) -> None:
        """A translated stream, through `transducer` (its input estimate noted)."""
        self.transducer = transducer
        self.estimate = transducer.usage[0]

    def forwarding(self, kept: Passthrough) -> None:
        """A forwarded body, its head and tail kept in `kept`."""
        self.passthrough = kept

    def replied(self, usage: dict[str, Any] | None) -> None:
        """A non-streamed JSON reply, with its usage object."""
        self.reply_usage = usage

    def counted(self, counts: Tokens) -> None:
        """The counts the usage record was given."""
        self.counts = counts
