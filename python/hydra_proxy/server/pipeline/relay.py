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


async def relay(
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
    stream = _Relay(exchange, make_transducer, headers, ping_interval, idle_timeout, stall_timeout)
    await stream.run(connecting)
    return stream.transducer


class _Stream:
    """What a relayed response holds, translated or passed through: the exchange and the
    client's send, the timeouts, the watch on the client (`disconnect`), the upstream body
    (`body`) and, once the body starts, the watch for upstream silence (`ticker`)."""

    __slots__ = (
        "body",
        "disconnect",
        "exchange",
        "idle_timeout",
        "immediate",
        "loop",
        "send",
        "stall_timeout",
        "ticker",
    )
    ticker: _Ticker
    immediate: type

    def __init__(
        self,
        exchange: Exchange,
        send: Send,
        idle_timeout: float,
        stall_timeout: float,
        response: H1Response | None = None,
    ) -> None:
        self.exchange = exchange
        self.send = send
        self.idle_timeout = idle_timeout
        self.stall_timeout = stall_timeout
        self.disconnect = _Disconnect(exchange.receive, exchange.worker.shutdown)
        self.loop = self.disconnect.loop
        self.body = _Body(self.loop, response)

    async def close(self) -> None:
        """The silence watch stopped and the client's watch closed."""
        ticker: _Ticker | None = getattr(self, "ticker", None)
        if ticker is not None:
            ticker.cancel()
            del self.ticker  # it calls back into this stream: no cycle left behind
        await self.disconnect.close()


class _Relay(_Stream):
    """One translated stream, step by step: the upstream's head (`head`), then its body,
    each upstream read fed to the transducer and what it returns written to the client
    (`relay_queued` from the relay task, then `push` from the upstream parser's callback),
    with a ping or the idle timeout's error on silence (`on_silence`); the response starts
    with the first thing to say (`emit`)."""

    __slots__ = (
        "client",
        "feed",
        "headers",
        "last_bytes",
        "ping_interval",
        "pushing",
        "transducer",
    )

    def __init__(
        self,
        exchange: Exchange,
        make_transducer: Callable[[], StreamTransducer],
        headers: Headers,
        ping_interval: float,
        idle_timeout: float,
        stall_timeout: float,
    ) -> None:
        # The body's response is set once the upstream's head is in.
        super().__init__(exchange, exchange.send, idle_timeout, stall_timeout)
        loop = self.loop
        self.headers = headers
        self.ping_interval = ping_interval
        self.transducer = transducer = make_transducer()
        self.feed = transducer.feed
        self.client = _ClientSide()
        self.immediate = self.client.immediate  # set again once the parser callback sends
        self.last_bytes = loop.time()
        self.pushing = False

    async def run(self, connecting: asyncio.Future[H1Response]) -> None:
        transducer = self.transducer
        send = self.send
        client = self.client
        response: H1Response | None = None
        try:
            response = await self.head(connecting)
            if response is None or await self.relay_body(response):
                return
            await _end_within(send, client.immediate, self.stall_timeout)
        except _Stalled:
            # The client is not reading: its error event is queued for it, and the upstream
            # request is dropped below.
            _queue_end(send, transducer.fail(*_stalled(self.stall_timeout)))
        except asyncio.CancelledError:
            if self.disconnect.shutting_down():
                await self.shut_down()
            elif not self.disconnect.client_left():
                raise
        finally:
            await self.close()
            connecting.cancel()
            if response is not None:
                if transducer.finished:
                    response.release()
                else:
                    response.close()

    async def head(self, connecting: asyncio.Future[H1Response]) -> H1Response | None:
        """The upstream's response head, with pings while it takes long; None when its
        failure was answered (an HTTP error, or an error event once the response began)."""
        transducer = self.transducer
        client = self.client
        send = self.send
        while not connecting.done():
            await asyncio.wait((connecting,), timeout=self.ping_interval)
            if not connecting.done():
                if not client.started:
                    await client.start(send, self.exchange.start(200, self.headers))
                await send(
                    {"type": "http.response.body", "body": transducer.ping(), "more_body": True}
                )
        try:
            return connecting.result()
        except ProxyError as exc:
            if not client.started:
                await self.exchange.fail(exc)
                return None
            await self.emit(transducer.fail(exc.error_type, exc.message))
            await send(_END)
            return None

    async def emit(self, out: bytes) -> bool:
        """Send `out`, starting the response first; True when an early error was answered
        as an HTTP error instead."""
        client = self.client
        transducer = self.transducer
        if not client.started:
            if transducer.error is not None and not transducer.has_content:
                error_type, message = transducer.error
                status = status_for_anthropic_type(error_type)
                await self.exchange.fail(ProxyError(status, message, error_type=error_type))
                return True
            if not out and not transducer.finished:
                return False
            await client.start(self.send, self.exchange.start(200, self.headers))
        if out:
            sent = self.send({"type": "http.response.body", "body": out, "more_body": True})
            if client.sync and type(sent) is not client.immediate:
                # The client is behind: the upstream is paused at once (not only once
                # _MAX_QUEUED_CHUNKS wait) until the client takes this; not upstream silence.
                body = self.body
                body.hold(sent)
                await body.drain(self.stall_timeout)
                self.last_bytes = self.loop.time()
            else:
                await sent
        return False

    async def relay_body(self, response: H1Response) -> bool:
        """The upstream's body, to the stream's end; True when an early error was answered
        as an HTTP error."""
        body = self.body
        transducer = self.transducer
        body.response = response
        self.last_bytes = self.loop.time()
        ticker = self.ticker = _Ticker(self.loop, self.ping_interval, self.on_silence)
        response.stream(body.pull, body.end)
        while not transducer.finished:
            await body.wait()
            if body.held is not None:
                await body.drain(self.stall_timeout)
                ticker.last = self.last_bytes = self.loop.time()
                continue
            if body.chunks:
                if await self.relay_queued(response):
                    return True
                continue
            if body.failure is not None and not isinstance(body.failure, H1Error):
                raise body.failure
            # The upstream's body ended (or broke) before the stream's end: finish() says
            # so with an error event.
            if not _finished(transducer) and await self.emit(transducer.finish()):
                return True
        return False

    async def relay_queued(self, response: H1Response) -> bool:
        """The chunks queued for this task, fed and sent one by one (None: a silence tick);
        then, once the client's send acts at once, the parser's callback takes over
        (`push`). True when an early error was answered as an HTTP error."""
        body = self.body
        transducer = self.transducer
        if len(body.chunks) >= _MAX_QUEUED_CHUNKS:
            response.resume_reading()
        chunks, body.chunks = body.chunks, []
        for chunk in chunks:
            if chunk is None:
                out = self.silence_out()
            else:
                self.ticker.last = self.last_bytes = self.loop.time()
                out = self.feed(chunk)
            if await self.emit(out):
                return True
            if _finished(transducer):
                break
        if self.client.sync and not self.pushing and not _finished(transducer):
            # From here on the parser's callback feeds and sends; this task waits for the
            # end of the body, or for the client to leave.
            self.pushing = True
            self.immediate = self.client.immediate
            response.sink = self.push
        return False

    def push(self, chunk: bytes) -> None:
        """One upstream read, from the parser's callback: fed, and what it makes written."""
        self.ticker.last = self.last_bytes = self.loop.time()
        out = self.feed(chunk)
        if out:
            self.write_now(out)
        elif self.transducer.finished:
            self.body.end(None)

    def write_now(self, out: bytes) -> None:
        """Send `out` from the parser's callback; a client that is behind pauses the
        upstream (the relay task awaits the send)."""
        try:
            sent = self.send({"type": "http.response.body", "body": out, "more_body": True})
        except Exception as exc:  # the client's side broke: the task re-raises it
            self.body.end(exc)
            return
        if type(sent) is not self.immediate:  # the client is behind: pause the upstream
            self.body.hold(sent)
        if self.transducer.finished:
            self.body.end(None)

    def on_silence(self) -> None:
        """The ticker's call after a ping interval without an upstream read."""
        if self.body.held is not None:  # paused for the client, not silent
            return
        if self.pushing:
            self.write_now(self.silence_out())
        else:
            self.body.pull(None)

    def silence_out(self) -> bytes:
        """A ping, or the idle timeout's error event once the upstream was silent past it."""
        if self.loop.time() - self.last_bytes >= self.idle_timeout:
            return self.transducer.fail(
                "timeout_error", MSG_IDLE_TIMEOUT.replace("{}", f"{self.idle_timeout:g}")
            )
        return self.transducer.ping()

    async def shut_down(self) -> None:
        """The shutdown's grace ended: an HTTP refusal before the response started, else the
        stream's end as an error event."""
        client = self.client
        if not client.started:
            await self.exchange.fail(refusal())
        elif not _finished(self.transducer):
            with suppress(_Stalled):
                await self.emit(self.transducer.fail("overloaded_error", STREAM_END_MESSAGE))
            await _end_within(self.send, client.immediate, _SHUTDOWN_SEND_S)


async def forward(
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
    return await _Forward(exchange, response, send, idle_timeout, stall_timeout).run()


class _Forward(_Stream):
    """One passed-through response, step by step: its head to the client, then every
    upstream read written as it is (`push` from the upstream parser's callback when the
    client's send acts at once, else `copy_queued` from the task), until the body ends,
    breaks or goes silent (`on_silence`)."""

    __slots__ = ("last", "response")

    def __init__(
        self,
        exchange: Exchange,
        response: H1Response,
        send: Send,
        idle_timeout: float,
        stall_timeout: float,
    ) -> None:
        super().__init__(exchange, send, idle_timeout, stall_timeout, response)
        self.response = response
        self.immediate = type(None)
        self.last = b""  # the last chunk sent: whether the client is between two events

    async def run(self) -> str | None:
        response = self.response
        content_type = response.headers.get("content-type", "application/json").encode("latin-1")
        complete = False
        try:
            failure = await self.copy(content_type)
            if failure is not None:
                return failure
            complete = True
            await _end_within(self.send, self.immediate, self.stall_timeout)
        except asyncio.CancelledError:
            if self.disconnect.shutting_down():
                return await self.shut_down(content_type)
            if not self.disconnect.client_left():
                raise
            return "client_gone"
        finally:
            await self.close()
            if complete:
                response.release()
            else:
                response.close()
        return None

    async def copy(self, content_type: bytes) -> str | None:
        """The head, then the body to its end; what broke it, else None."""
        send = self.send
        body = self.body
        response = self.response
        awaitable = send(
            self.exchange.start(
                200, [(b"content-type", content_type), (b"cache-control", b"no-cache")]
            )
        )
        sync = _sync_send(awaitable)
        self.immediate = type(awaitable)
        await awaitable
        ticker = self.ticker = _Ticker(self.loop, self.idle_timeout, self.on_silence)
        response.stream(self.push if sync else body.pull, body.end)
        while True:
            await body.wait()
            if body.held is not None:
                try:
                    await body.drain(self.stall_timeout)
                except _Stalled:
                    return "client_stalled"  # dropped: the client sees a broken transfer
                ticker.last = self.loop.time()
                continue
            await self.copy_queued()
            if body.ended and not body.chunks:
                break
        if body.failure is not None:
            if isinstance(body.failure, (H1Error, TimeoutError)):
                # Cut mid-body or silent past the idle timeout: end without the terminator,
                # so the client sees a broken transfer, not a complete one.
                return "timeout_error" if isinstance(body.failure, TimeoutError) else "api_error"
            raise body.failure
        return None

    async def copy_queued(self) -> None:
        """The chunks queued for this task, sent one by one."""
        body = self.body
        if len(body.chunks) >= _MAX_QUEUED_CHUNKS:
            self.response.resume_reading()
        chunks, body.chunks = body.chunks, []
        for chunk in chunks:
            self.ticker.last = self.loop.time()
            self.last = chunk or b""
            await self.send({"type": "http.response.body", "body": chunk, "more_body": True})

    def push(self, chunk: bytes) -> None:
        """One upstream read, from the parser's callback, written as it is."""
        self.ticker.last = self.loop.time()
        self.last = chunk
        try:
            sent = self.send({"type": "http.response.body", "body": chunk, "more_body": True})
        except Exception as exc:
            self.body.end(exc)
            return
        if type(sent) is not self.immediate:  # the client is behind: pause the upstream
            self.body.hold(sent)

    def on_silence(self) -> None:
        """The ticker's call after the idle timeout without an upstream read."""
        if self.body.held is None:  # paused for the client is not silence
            self.body.end(TimeoutError())

    async def shut_down(self, content_type: bytes) -> str:
        """The shutdown's grace ended: the stream's end, when the client is between two
        events (else it is cut: the client sees a broken transfer)."""
        event = closing_event(self.exchange.scope["path"], content_type, self.last)
        if event is None:
            return "overloaded_error"  # mid-event: cut, the client sees a broken transfer
        # An end the client reads as one; the upstream request is dropped below.
        self.send({"type": "http.response.body", "body": event, "more_body": True})
        await _end_within(self.send, self.immediate, _SHUTDOWN_SEND_S)
        return "overloaded_error"
