"""Relaying an upstream stream to the client: translated (relay) or unchanged (forward).

Raw upstream chunks (not lines) go into the transducer; whatever it returns for one read is
sent as one ASGI body message, so events are batched as they arrive. Once the client's
response has started (and the server's send acts at once, as granian's does), each
upstream read is fed and sent from the upstream connection's parser callback: no future,
no task switch and no timeout context per chunk. One timer per stream, re-armed only when
it fires, watches for silence: a ping after one ping interval, an error event past the
idle timeout.

Before the client's response starts, an upstream failure is answered as an HTTP error
(status, retry-after), and so is an upstream error event seen before any content. The
response starts as soon as there is something to say, or after one ping interval of
upstream silence; past that point a failure becomes an in-stream error event. A client
disconnect drops the upstream request at once (its connection is closed, not reused).

Flow control: granian's send takes a body at once (an already-complete awaitable) while
its small per-response channel has room, and returns a pending awaitable once the client
is behind. Then the upstream connection stops being read (TCP slows the upstream) and the
relay task awaits that send; reading resumes when it completes. A client that takes
nothing for `stall_timeout` seconds has its stream ended (an error event, queued for it)
and the upstream request dropped. The cost per chunk: one type comparison.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from contextlib import suppress

from ...errors import ProxyError, status_for_anthropic_type
from ...transducers import StreamTransducer
from ..transport.http1 import H1Error, H1Response
from ..transport.shutdown import STREAM_END_MESSAGE, Shutdown, closing_event, refusal
from .exchange import Exchange, Headers, Receive, Send

_END = {"type": "http.response.body", "body": b"", "more_body": False}
# The stream's end when the upstream stalls past the idle timeout; `{}` is the timeout.
MSG_IDLE_TIMEOUT = "the upstream sent nothing for {} s, past the idle_timeout"
# How long a stream ended by a shutdown waits for its client to take the end.
_SHUTDOWN_SEND_S = 1.0


class _Disconnect:
    """Cancels the relaying task when the client goes away, or when a graceful shutdown's
    grace period ends (server/transport/shutdown.py)."""

    __slots__ = ("ending", "gone", "loop", "shutdown", "task", "watcher")

    def __init__(self, receive: Receive, shutdown: Shutdown | None = None) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.task = task
        self.loop = asyncio.get_running_loop()
        self.gone = False
        self.ending = False
        self.watcher = asyncio.ensure_future(self._watch(receive))
        self.shutdown = shutdown
        if shutdown is not None:
            shutdown.watch(self._end)

    def _end(self) -> None:
        self.ending = True
        self.task.cancel()

    def shutting_down(self) -> bool:
        """After a CancelledError: True when the shutdown's grace ended (the cancellation
        is then withdrawn, so the stream can be ended well-formed)."""
        if self.ending and not self.gone and sys.version_info >= (3, 11):
            self.task.uncancel()
        return self.ending and not self.gone

    async def _watch(self, receive: Receive) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.gone = True
                self.task.cancel()
                return

    def client_left(self) -> bool:
        """After a CancelledError: True when the client left (the cancellation is then
        withdrawn), False when the task itself is being cancelled."""
        if self.gone and sys.version_info >= (3, 11):
            self.task.uncancel()
        return self.gone

    async def close(self) -> None:
        if self.shutdown is not None:
            self.shutdown.forget(self._end)
        self.watcher.cancel()
        with suppress(asyncio.CancelledError):
            await self.watcher


ClientWatch = _Disconnect
"""For other exchanges: cancels the current task when the client goes away."""


def _sync_send(awaitable: object) -> bool:
    """granian's send acts when called and returns an already-complete awaitable; then a
    parser callback may send directly. Anything else is awaited from the relay task."""
    return type(awaitable).__name__ == "PyEmptyAwaitable"


# Chunks queued for a relay task that is still awaiting its client past which the
# upstream is paused (only before the parser callback sends directly, or with an ASGI
# server whose send is not synchronous).
_MAX_QUEUED_CHUNKS = 16


class _Body:
    """Upstream chunks (None: a silence tick) waiting for the relay task, and the end;
    `held`: a client send the server could not take at once (the upstream is paused)."""

    __slots__ = ("chunks", "ended", "failure", "held", "loop", "response", "waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop, response: H1Response | None = None) -> None:
        self.loop = loop
        self.response = response
        self.chunks: list[bytes | None] = []
        self.ended = False
        self.failure: BaseException | None = None
        self.held: Awaitable[None] | None = None
        self.waiter: asyncio.Future[None] | None = None

    def hold(self, pending: Awaitable[None]) -> None:
        """The client is behind: pause the upstream until the relay task drains `pending`."""
        self.held = pending
        if self.response is not None:
            self.response.pause_reading()
        self.wake()

    async def drain(self, seconds: float) -> None:
        """Await the held send (_Stalled: not taken within `seconds`), then read on.

        `held` stays set until the client took it: a stream paused for its client is not
        a silent upstream (the silence ticks skip it). Reading resumes only when nothing
        is held and the queue is below its bound, so no pause is lost."""
        while self.held is not None:
            held = self.held
            await _taken(held, seconds)
            if self.held is held:  # else a later send was held meanwhile: await it too
                self.held = None
        if self.response is not None and len(self.chunks) < _MAX_QUEUED_CHUNKS:
            self.response.resume_reading()

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def pull(self, chunk: bytes | None) -> None:
        chunks = self.chunks
        chunks.append(chunk)
        if len(chunks) >= _MAX_QUEUED_CHUNKS and self.response is not None:
            self.response.pause_reading()  # resumed by the relay task once it drained them
        self.wake()

    def end(self, exc: BaseException | None) -> None:
        if not self.ended:
            self.ended = True
            self.failure = exc
        self.wake()

    async def wait(self) -> None:
        if self.chunks or self.ended or self.held is not None:
            return
        self.waiter = self.loop.create_future()
        try:
            await self.waiter
        finally:
            self.waiter = None


class _Ticker:
    """One timer per stream: calls `on_silence` after `interval` without `last` moving
    (re-armed only when it fires, so a busy stream pays one attribute write per chunk)."""

    __slots__ = ("interval", "last", "loop", "on_silence", "timer")

    def __init__(
        self, loop: asyncio.AbstractEventLoop, interval: float, on_silence: Callable[[], None]
    ) -> None:
        self.loop = loop
        self.interval = interval
        self.on_silence = on_silence
        self.last = loop.time()
        self.timer: asyncio.TimerHandle | None = loop.call_at(self.last + interval, self._tick)

    def _tick(self) -> None:
        due = self.last + self.interval
        now = self.loop.time()
        if now >= due:
            self.last = now
            due = now + self.interval
            self.on_silence()
        if self.timer is not None:
            self.timer = self.loop.call_at(due, self._tick)

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


class _Stalled(Exception):
    """The client took nothing for the stall timeout."""


async def _completion(awaitable: Awaitable[None]) -> None:
    await awaitable


async def _taken(pending: Awaitable[None], seconds: float) -> None:
    """Await a send the server could not take at once; _Stalled past `seconds`."""
    try:
        await asyncio.wait_for(_completion(pending), seconds)
    except TimeoutError:
        raise _Stalled from None


async def _end_within(send: Send, immediate: type, seconds: float) -> None:
    """End the response; a client that does not take it within `seconds` is left to it."""
    pending = send(_END)
    if type(pending) is immediate:
        await pending
        return
    with suppress(TimeoutError):
        await asyncio.wait_for(_completion(pending), seconds)


def _stalled(seconds: float) -> tuple[str, str]:
    return "timeout_error", f"the client read nothing for {seconds:g} s (send_stall_timeout)"


def _queue_end(send: Send, last: bytes) -> None:
    """Queue the stream's last bytes and its end for a client that is not reading (never
    awaited: the server delivers them if the client reads again)."""
    if last:
        send({"type": "http.response.body", "body": last, "more_body": True})
    send(_END)


class _ClientSide:
    """Whether the client's response has started, whether its send is synchronous, and
    the type of the awaitable a send returns when it acted at once."""

    __slots__ = ("immediate", "started", "sync")

    def __init__(self) -> None:
        self.started = False
        self.sync = False
        self.immediate: type = type(None)

    async def start(self, send: Send, message: dict[str, object]) -> None:
        self.started = True
        awaitable = send(message)
        self.sync = _sync_send(awaitable)
        self.immediate = type(awaitable)
        await awaitable


def _finished(transducer: StreamTransducer) -> bool:
    # A call, not the property inline: it changes under the loops that test it.
    return transducer.finished


# The per-event loop, kept in one function on purpose: every call per event is measured.
async def relay(  # noqa: C901
    exchange: Exchange,
    connecting: asyncio.Future[H1Response],
    make_transducer: Callable[[], StreamTransducer],
    headers: Headers,
    *,
    ping_interval: float,
    idle_timeout: float,
    stall_timeout: float = 60.0,
) -> StreamTransducer:
    """Stream the upstream response that `connecting` yields to the client, translated.

    `connecting` raises ProxyError for an upstream failure; one before the response has
    started is answered as an HTTP error (`Exchange.fail`), and so is an upstream error
    event seen before any content. The transducer is built while the upstream works on
    the request.
    """
    send = exchange.send
    http_error = exchange.fail
    start = exchange.start
    disconnect = _Disconnect(exchange.receive, exchange.worker.shutdown)
    loop = disconnect.loop
    response: H1Response | None = None
    body = _Body(loop)  # its response is set once the upstream's head is in
    transducer = make_transducer()
    client = _ClientSide()
    ticker: _Ticker | None = None
    last_bytes = loop.time()

    async def emit(out: bytes) -> bool:
        """Send `out`, starting the response first; True when an early error was answered
        as an HTTP error instead."""
        nonlocal last_bytes
        if not client.started:
            if transducer.error is not None and not transducer.has_content:
                error_type, message = transducer.error
                status = status_for_anthropic_type(error_type)
                await http_error(ProxyError(status, message, error_type=error_type))
                return True
            if not out and not transducer.finished:
                return False
            await client.start(send, start(200, headers))
        if out:
            sent = send({"type": "http.response.body", "body": out, "more_body": True})
            if client.sync and type(sent) is not client.immediate:
                # The client is behind: the upstream is paused at once (not only once
                # _MAX_QUEUED_CHUNKS wait) until the client takes this; not upstream silence.
                body.hold(sent)
                await body.drain(stall_timeout)
                last_bytes = loop.time()
            else:
                await sent
        return False

    try:
        # 1. The upstream's response headers, with pings while they take long.
        while not connecting.done():
            await asyncio.wait((connecting,), timeout=ping_interval)
            if not connecting.done():
                if not client.started:
                    await client.start(send, start(200, headers))
                await send(
                    {"type": "http.response.body", "body": transducer.ping(), "more_body": True}
                )
        try:
            response = connecting.result()
        except ProxyError as exc:
            if not client.started:
                await http_error(exc)
                return transducer
            await emit(transducer.fail(exc.error_type, exc.message))
            await send(_END)
            return transducer
        # 2. The body.
        body.response = response
        last_bytes = loop.time()
        pushing = False
        feed = transducer.feed
        immediate = client.immediate  # set again once the response has started

        def silence_out() -> bytes:
            if loop.time() - last_bytes >= idle_timeout:
                return transducer.fail(
                    "timeout_error", MSG_IDLE_TIMEOUT.replace("{}", f"{idle_timeout:g}")
                )
            return transducer.ping()

        def send_now(out: bytes) -> None:
            try:
                sent = send({"type": "http.response.body", "body": out, "more_body": True})
            except Exception as exc:  # the client's side broke: the task re-raises it
                body.end(exc)
                return
            if type(sent) is not immediate:  # the client is behind: pause the upstream
                body.hold(sent)
            if transducer.finished:
                body.end(None)

        def on_silence() -> None:
            if body.held is not None:  # paused for the client, not silent
                return
            if pushing:
                send_now(silence_out())
            else:
                body.pull(None)

        def push(chunk: bytes) -> None:
            nonlocal last_bytes
            ticker_.last = last_bytes = loop.time()
            out = feed(chunk)
            if out:
                send_now(out)
            elif transducer.finished:
                body.end(None)

        ticker = ticker_ = _Ticker(loop, ping_interval, on_silence)
        response.stream(body.pull, body.end)
        while not transducer.finished:
            await body.wait()
            if body.held is not None:
                await body.drain(stall_timeout)
                ticker.last = last_bytes = loop.time()
                continue
            if body.chunks:
                if len(body.chunks) >= _MAX_QUEUED_CHUNKS:
                    response.resume_reading()
                chunks, body.chunks = body.chunks, []
                for chunk in chunks:
                    if chunk is None:
                        out = silence_out()
                    else:
                        ticker.last = last_bytes = loop.time()
                        out = feed(chunk)
                    if await emit(out):
                        return transducer
                    if _finished(transducer):
                        break
                if client.sync and not pushing and not _finished(transducer):
                    # From here on the parser's callback feeds and sends; this task waits
                    # for the end of the body, or for the client to leave.
                    pushing = True
                    immediate = client.immediate
                    response.sink = push
                continue
            if body.failure is not None and not isinstance(body.failure, H1Error):
                raise body.failure
            # The upstream's body ended (or broke) before the stream's end: finish() says
            # so with an error event.
            if not _finished(transducer) and await emit(transducer.finish()):
                return transducer
        await _end_within(send, client.immediate, stall_timeout)
    except _Stalled:
        # The client is not reading: its error event is queued for it, and the upstream
        # request is dropped below.
        _queue_end(send, transducer.fail(*_stalled(stall_timeout)))
    except asyncio.CancelledError:
        if disconnect.shutting_down():
            if not client.started:
                await http_error(refusal())
            elif not _finished(transducer):
                with suppress(_Stalled):
                    await emit(transducer.fail("overloaded_error", STREAM_END_MESSAGE))
                await _end_within(send, client.immediate, _SHUTDOWN_SEND_S)
        elif not disconnect.client_left():
            raise
    finally:
        if ticker is not None:
            ticker.cancel()
        await disconnect.close()
        connecting.cancel()
        if response is not None:
            if transducer.finished:
                response.release()
            else:
                response.close()
    return transducer


# The pass-through's per-chunk loop, in one function for the same reason as relay's.
async def forward(  # noqa: C901
    exchange: Exchange,
    response: H1Response,
    send: Send,
    *,
    idle_timeout: float,
    stall_timeout: float = 60.0,
) -> str | None:
    """Pass an upstream 200 response through unchanged (same protocol on both sides);
    returns None when it went through whole, else what broke it (an error type, or
    ``client_gone``). `send`: the exchange's, tapped for the usage record.

    An upstream cut mid-body or silent past `idle_timeout` is dropped and the response
    ends without its terminator, so the client sees a broken transfer, never a complete
    one.
    """
    disconnect = _Disconnect(exchange.receive, exchange.worker.shutdown)
    loop = disconnect.loop
    body = _Body(loop, response)
    complete = False
    ticker: _Ticker | None = None
    immediate: type = type(None)
    last = b""  # the last chunk sent: whether the client is between two events
    content_type = response.headers.get("content-type", "application/json").encode("latin-1")
    try:
        awaitable = send(
            exchange.start(200, [(b"content-type", content_type), (b"cache-control", b"no-cache")])
        )
        sync = _sync_send(awaitable)
        immediate = type(awaitable)
        await awaitable

        def push(chunk: bytes) -> None:
            nonlocal last
            ticker_.last = loop.time()
            last = chunk
            try:
                sent = send({"type": "http.response.body", "body": chunk, "more_body": True})
            except Exception as exc:
                body.end(exc)
                return
            if type(sent) is not immediate:  # the client is behind: pause the upstream
                body.hold(sent)

        def on_silence() -> None:
            if body.held is None:  # paused for the client is not silence
                body.end(TimeoutError())

        ticker = ticker_ = _Ticker(loop, idle_timeout, on_silence)
        response.stream(push if sync else body.pull, body.end)
        while True:
            await body.wait()
            if body.held is not None:
                try:
                    await body.drain(stall_timeout)
                except _Stalled:
                    return "client_stalled"  # dropped: the client sees a broken transfer
                ticker.last = loop.time()
                continue
            if len(body.chunks) >= _MAX_QUEUED_CHUNKS:
                response.resume_reading()
            chunks, body.chunks = body.chunks, []
            for chunk in chunks:
                ticker.last = loop.time()
                last = chunk or b""
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if body.ended and not body.chunks:
                break
        if body.failure is not None:
            if isinstance(body.failure, (H1Error, TimeoutError)):
                # Cut mid-body or silent past the idle timeout: end without the terminator,
                # so the client sees a broken transfer, not a complete one.
                return "timeout_error" if isinstance(body.failure, TimeoutError) else "api_error"
            raise body.failure
        complete = True
        await _end_within(send, immediate, stall_timeout)
    except asyncio.CancelledError:
        if disconnect.shutting_down():
            event = closing_event(exchange.scope["path"], content_type, last)
            if event is None:
                return "overloaded_error"  # mid-event: cut, the client sees a broken transfer
            # An end the client reads as one; the upstream request is dropped below.
            send({"type": "http.response.body", "body": event, "more_body": True})
            await _end_within(send, immediate, _SHUTDOWN_SEND_S)
            return "overloaded_error"
        if not disconnect.client_left():
            raise
        return "client_gone"
    finally:
        if ticker is not None:
            ticker.cancel()
        await disconnect.close()
        if complete:
            response.release()
        else:
            response.close()
    return None
