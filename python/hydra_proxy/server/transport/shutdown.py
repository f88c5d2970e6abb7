"""Graceful shutdown of a worker: in-flight streams get a grace period, then a clean end.

What granian 2.8.9 does on SIGTERM (or SIGINT): the main process signals each worker and
waits `workers_kill_timeout` seconds before it kills it. A worker stops taking
connections, waits for its in-flight requests, and only then sends the app
`lifespan.shutdown`: too late to tell a stream anything. A worker killed at the timeout
cuts its streams mid-event.

So the worker notices the signal itself (a Python-level handler beside granian's loop
handler, which still runs: the event loop's wakeup fd is written for any handled
signal). From then on, new model requests are refused with 503 overloaded (the client
retries on another worker or after the restart), and after `shutdown_grace` seconds every
stream still open is ended with a well-formed error event in its client's protocol
(overloaded_error: retryable). The kill timeout is set past the grace (server/transport/run.py), so
those events go out before the process ends.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable
from types import FrameType

from ...anthropic import output as anthropic_output
from ...chat import output as chat_output
from ...errors import ProxyError

log = logging.getLogger("hydra_proxy")

# Seconds granian waits past the grace before it kills a worker: time for the streams'
# closing error events to go out.
KILL_MARGIN = 3.0

STREAM_END_MESSAGE = "the proxy is shutting down; retry the request"


def refusal() -> ProxyError:
    """The answer to a request that arrives while the worker drains."""
    return ProxyError(503, STREAM_END_MESSAGE, error_type="overloaded_error")


def closing_event(path: str, content_type: bytes, last: bytes) -> bytes | None:
    """The error event that ends a passed-through stream at shutdown, in its protocol;
    None when it cannot end well-formed (mid-event, not a stream, or a Responses stream,
    whose failure event needs the response's own fields)."""
    if not content_type.startswith(b"text/event-stream"):
        return None
    if last and not last.endswith((b"\n\n", b"\r\n\r\n")):
        return None
    if path == "/v1/messages":
        return anthropic_output.error("overloaded_error", STREAM_END_MESSAGE)
    if path == "/v1/chat/completions":
        return chat_output.error("server_error", STREAM_END_MESSAGE)
    return None


class Shutdown:
    """The worker's open streams, and whether it is draining."""

    def __init__(self, grace: float) -> None:
        self.grace = grace
        self.draining = False
        self.streams: set[Callable[[], None]] = set()

    def watch(self, stop: Callable[[], None]) -> None:
        """Call `stop` (once) if the grace ends before the stream does; `forget` it after."""
        self.streams.add(stop)

    def forget(self, stop: Callable[[], None]) -> None:
        self.streams.discard(stop)

    def begin(self) -> None:
        """Drain: refuse new requests, and end the open streams after the grace period."""
        if self.draining:
            return
        self.draining = True
        log.warning(
            "shutting down: %d stream(s) in flight get %g s to finish",
            len(self.streams),
            self.grace,
        )
        asyncio.get_running_loop().call_later(self.grace, self.end_streams)

    def end_streams(self) -> None:
        if self.streams:
            log.warning("shutdown grace over: ending %d open stream(s)", len(self.streams))
        for stop in list(self.streams):
            stop()
        self.streams.clear()

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        """Begin draining on SIGTERM or SIGINT, keeping whatever handler was there."""
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(signum)
            if not callable(previous):  # no loop handler to keep: the default stays
                continue

            def on_signal(
                number: int,
                frame: FrameType | None,
                previous: Callable[[int, FrameType | None], object] = previous,
            ) -> None:
                loop.call_soon_threadsafe(self.begin)
                previous(number, frame)

            try:
                signal.signal(signum, on_signal)
            except ValueError:  # not the main thread: an embedding server handles signals
                return
