"""Relaying an upstream stream to the client: translated (relay) or unchanged (forward).

Raw upstream chunks (not lines) go into the transducer; whatever it returns for one read is
sent as one ASGI body message, so events are batched as they arrive. The per-chunk path is
kept short on purpose: one read, one feed, one send. No timeout context per read: one
watchdog per stream (a timer re-armed only when it fires) interrupts a read that has waited
one ping interval, and the loop answers with a ping, or with an error past the idle timeout.

Before the client's response starts, an upstream failure is answered as an HTTP error
(status, retry-after). The response starts as soon as there is something to say, or after
one ping interval of upstream silence; past that point a failure becomes an in-stream error
event. A client disconnect cancels the upstream request at once.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from contextlib import suppress

import aiohttp

from ..errors import ProxyError, status_for_anthropic_type
from ..transducers import StreamTransducer
from .asgi import Headers, Receive, Scope, Send, start
from .http1 import H1Error, H1Response

_END = {"type": "http.response.body", "body": b"", "more_body": False}


class _Watch:
    """Client disconnect and upstream silence, for one stream, without a per-read cost.

    `last` is bumped by the reader on every chunk; the timer fires at most once per
    `interval` and interrupts the reading task only when nothing came in that long.
    """

    __slots__ = ("gone", "interval", "last", "loop", "silent", "task", "timer", "watcher")

    def __init__(self, receive: Receive, interval: float) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.task = task
        self.loop = asyncio.get_running_loop()
        self.interval = interval
        self.last = self.loop.time()
        self.silent = False
        self.gone = False
        self.timer: asyncio.TimerHandle | None = None
        self.watcher = asyncio.ensure_future(self._watch_disconnect(receive))

    async def _watch_disconnect(self, receive: Receive) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.gone = True
                self.task.cancel()
                return

    def arm(self) -> None:
        self.timer = self.loop.call_at(self.last + self.interval, self._tick)

    def _tick(self) -> None:
        due = self.last + self.interval
        if self.loop.time() >= due:
            self.silent = True
            self.task.cancel()
        else:
            self.timer = self.loop.call_at(due, self._tick)

    def interrupted(self) -> bool:
        """After a CancelledError: True when it was the silence timer (and the cancellation
        is withdrawn), False when the client left or the task is really being cancelled."""
        if not self.silent or self.gone:
            return False
        self.silent = False
        if sys.version_info >= (3, 11):
            self.task.uncancel()
        return True

    def client_left(self) -> bool:
        if self.gone and sys.version_info >= (3, 11):
            self.task.uncancel()
        return self.gone

    async def close(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.watcher.cancel()
        with suppress(asyncio.CancelledError):
            await self.watcher


async def relay(
    scope: Scope,
    connecting: asyncio.Future[aiohttp.ClientResponse],
    make_transducer: Callable[[], StreamTransducer],
    receive: Receive,
    send: Send,
    headers: Headers,
    *,
    ping_interval: float,
    idle_timeout: float,
    http_error: Callable[[ProxyError], Awaitable[None]],
) -> StreamTransducer:
    """Stream the upstream response that `connecting` yields to the client, translated.

    `connecting` raises ProxyError for an upstream failure; `http_error` answers one before
    the response has started, and also an upstream error event seen before any content.
    The transducer is built while the upstream works on the request.
    """
    watch = _Watch(receive, ping_interval)
    response: aiohttp.ClientResponse | None = None
    started = False
    transducer = make_transducer()
    try:
        # 1. The upstream's response headers (upstream.post bounds the wait).
        while not connecting.done():
            await asyncio.wait((connecting,), timeout=ping_interval)
            if not connecting.done():
                if not started:
                    started = True
                    await send(start(scope, 200, headers))
                await send(
                    {"type": "http.response.body", "body": transducer.ping(), "more_body": True}
                )
        try:
            response = connecting.result()
        except ProxyError as exc:
            if not started:
                await http_error(exc)
                return transducer
            out = transducer.fail(exc.error_type, exc.message)
            await send({"type": "http.response.body", "body": out, "more_body": True})
            await send(_END)
            return transducer
        # 2. The body: one read, one feed, one send.
        readany = response.content.readany
        feed = transducer.feed
        loop_time = watch.loop.time
        idle_since = watch.last = loop_time()
        watch.arm()
        while True:
            try:
                chunk = await readany()
            except asyncio.CancelledError:
                if not watch.interrupted():
                    raise
                now = loop_time()
                if now - idle_since >= idle_timeout:
                    out = transducer.fail(
                        "timeout_error", f"the upstream sent nothing for {idle_timeout:g} s"
                    )
                else:
                    out = transducer.ping()
                    watch.last = now
                    watch.arm()
            except aiohttp.ClientError:
                out = transducer.finish()  # a cut-off stream ends in an error event
            else:
                idle_since = watch.last = loop_time()
                out = feed(chunk) if chunk else transducer.finish()
            if not started:
                if transducer.error is not None and not transducer.has_content:
                    error_type, message = transducer.error
                    status = status_for_anthropic_type(error_type)
                    await http_error(ProxyError(status, message, error_type=error_type))
                    return transducer
                if not out and not transducer.finished:
                    continue
                started = True
                await send(start(scope, 200, headers))
            if out:
                await send({"type": "http.response.body", "body": out, "more_body": True})
            if transducer.finished:
                break
        await send(_END)
    except asyncio.CancelledError:
        if not watch.client_left():
            raise
        # The client went away: nothing more to send; the upstream request is dropped below.
    finally:
        await watch.close()
        connecting.cancel()
        if response is not None:
            if transducer.finished:
                response.release()
            else:
                response.close()
    return transducer


async def forward(
    scope: Scope,
    response: aiohttp.ClientResponse,
    receive: Receive,
    send: Send,
    *,
    idle_timeout: float,
) -> None:
    """Pass an upstream 200 response through unchanged (same protocol on both sides).

    An upstream silent past `idle_timeout` is dropped and the response ends without its
    terminator, so the client sees a broken transfer, never a complete one.
    """
    watch = _Watch(receive, idle_timeout)
    complete = False
    try:
        content_type = response.headers.get("content-type", "application/json").encode("latin-1")
        await send(
            start(scope, 200, [(b"content-type", content_type), (b"cache-control", b"no-cache")])
        )
        readany = response.content.readany
        loop_time = watch.loop.time
        watch.arm()
        while True:
            try:
                chunk = await readany()
            except asyncio.CancelledError:
                if watch.interrupted():
                    return
                raise
            if not chunk:
                break
            watch.last = loop_time()
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        complete = True
        await send(_END)
    except aiohttp.ClientError:
        # Cut mid-body: end the response without its terminator so the client sees a
        # broken transfer, not a complete one.
        return
    except asyncio.CancelledError:
        if not watch.client_left():
            raise
    finally:
        await watch.close()
        if complete:
            response.release()
        else:
            response.close()


# -- the lean HTTP/1.1 client: body chunks pushed by the connection's parser -------------


def _sync_send(awaitable: object) -> bool:
    """granian's send acts when called and returns an already-complete awaitable; then a
    parser callback may send directly. Anything else is awaited from the relay task."""
    return type(awaitable).__name__ == "PyEmptyAwaitable"


class _Pushed:
    """Upstream chunks (None: a silence tick) waiting for the relay task, and the end."""

    __slots__ = ("chunks", "ended", "failure", "loop", "waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.chunks: list[bytes | None] = []
        self.ended = False
        self.failure: BaseException | None = None
        self.waiter: asyncio.Future[None] | None = None

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def pull(self, chunk: bytes | None) -> None:
        self.chunks.append(chunk)
        self.wake()

    def end(self, exc: BaseException | None) -> None:
        if not self.ended:
            self.ended = True
            self.failure = exc
        self.wake()

    async def wait(self) -> None:
        if self.chunks or self.ended:
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


class _ClientSide:
    """Whether the client's response has started, and whether its send is synchronous."""

    __slots__ = ("started", "sync")

    def __init__(self) -> None:
        self.started = False
        self.sync = False

    async def start(self, send: Send, message: dict[str, object]) -> None:
        self.started = True
        awaitable = send(message)
        self.sync = _sync_send(awaitable)
        await awaitable


def _finished(transducer: StreamTransducer) -> bool:
    # A call, not the property inline: it changes under the loops that test it.
    return transducer.finished


async def relay_pushed(
    scope: Scope,
    connecting: asyncio.Future[H1Response],
    make_transducer: Callable[[], StreamTransducer],
    receive: Receive,
    send: Send,
    headers: Headers,
    *,
    ping_interval: float,
    idle_timeout: float,
    http_error: Callable[[ProxyError], Awaitable[None]],
) -> StreamTransducer:
    """`relay` for the lean client, with the same answers byte for byte: once the client's
    response has started (and the server's send is synchronous), each upstream chunk is
    fed and sent from the connection's parser callback, with no task switch."""
    watch = _Watch(receive, ping_interval)
    response: H1Response | None = None
    transducer = make_transducer()
    client = _ClientSide()
    ticker: _Ticker | None = None

    async def emit(out: bytes) -> bool:
        """Send `out`, starting the response first; True when an early error was answered
        as an HTTP error instead."""
        if not client.started:
            if transducer.error is not None and not transducer.has_content:
                error_type, message = transducer.error
                status = status_for_anthropic_type(error_type)
                await http_error(ProxyError(status, message, error_type=error_type))
                return True
            if not out and not transducer.finished:
                return False
            await client.start(send, start(scope, 200, headers))
        if out:
            await send({"type": "http.response.body", "body": out, "more_body": True})
        return False

    try:
        # 1. The upstream's response headers, with pings while they take long.
        while not connecting.done():
            await asyncio.wait((connecting,), timeout=ping_interval)
            if not connecting.done():
                if not client.started:
                    await client.start(send, start(scope, 200, headers))
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
        loop = watch.loop
        body = _Pushed(loop)
        last_bytes = loop.time()
        pushing = False
        feed = transducer.feed

        def silence_out() -> bytes:
            if loop.time() - last_bytes >= idle_timeout:
                return transducer.fail(
                    "timeout_error", f"the upstream sent nothing for {idle_timeout:g} s"
                )
            return transducer.ping()

        def send_now(out: bytes) -> None:
            try:
                send({"type": "http.response.body", "body": out, "more_body": True})
            except Exception as exc:  # the client's side broke: the task re-raises it
                body.end(exc)
                return
            if transducer.finished:
                body.end(None)

        def on_silence() -> None:
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
            if body.chunks:
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
                    response.sink = push
                continue
            if body.failure is not None and not isinstance(body.failure, H1Error):
                raise body.failure
            # The upstream's body ended (or broke) before the stream's end: finish() says
            # so with an error event.
            if not _finished(transducer) and await emit(transducer.finish()):
                return transducer
        await send(_END)
    except asyncio.CancelledError:
        if not watch.client_left():
            raise
    finally:
        if ticker is not None:
            ticker.cancel()
        await watch.close()
        connecting.cancel()
        if response is not None:
            if transducer.finished:
                response.release()
            else:
                response.close()
    return transducer


async def forward_pushed(
    scope: Scope,
    response: H1Response,
    receive: Receive,
    send: Send,
    *,
    idle_timeout: float,
) -> None:
    """`forward` for the lean client: the upstream's bytes, unchanged, sent from the
    parser's callback (no task switch per chunk)."""
    watch = _Watch(receive, idle_timeout)
    loop = watch.loop
    body = _Pushed(loop)
    complete = False
    ticker: _Ticker | None = None
    try:
        content_type = response.headers.get("content-type", "application/json").encode("latin-1")
        awaitable = send(
            start(scope, 200, [(b"content-type", content_type), (b"cache-control", b"no-cache")])
        )
        sync = _sync_send(awaitable)
        await awaitable

        def push(chunk: bytes) -> None:
            ticker_.last = loop.time()
            try:
                send({"type": "http.response.body", "body": chunk, "more_body": True})
            except Exception as exc:
                body.end(exc)

        ticker = ticker_ = _Ticker(loop, idle_timeout, lambda: body.end(TimeoutError()))
        response.stream(push if sync else body.pull, body.end)
        while True:
            await body.wait()
            chunks, body.chunks = body.chunks, []
            for chunk in chunks:
                ticker.last = loop.time()
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if body.ended and not body.chunks:
                break
        if body.failure is not None:
            if isinstance(body.failure, (H1Error, TimeoutError)):
                # Cut mid-body or silent past the idle timeout: end without the terminator,
                # so the client sees a broken transfer, not a complete one.
                return
            raise body.failure
        complete = True
        await send(_END)
    except asyncio.CancelledError:
        if not watch.client_left():
            raise
    finally:
        if ticker is not None:
            ticker.cancel()
        await watch.close()
        if complete:
            response.release()
        else:
            response.close()
