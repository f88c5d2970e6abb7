"""Relaying an upstream stream through a transducer to the client.

Raw upstream chunks (not lines) go into the transducer; whatever it returns for a chunk is
sent as one ASGI body message, so events are batched as they arrive.

Before the client's response starts, an upstream failure is answered as an HTTP error
(status, retry-after). The response starts as soon as there is something to say, or after
one ping interval of upstream silence (then pings keep the client's connection alive);
past that point a failure becomes an in-stream error event, and so does an upstream that
stays silent past the idle timeout. A client disconnect cancels the upstream request at
once.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import suppress
from typing import Any

import aiohttp

from ..errors import ProxyError, status_for_anthropic_type
from ..transducers import StreamTransducer
from .asgi import Headers, Receive, Send

if sys.version_info >= (3, 11):
    _timeout = asyncio.timeout
else:  # pragma: no cover - exercised on 3.10 only
    from async_timeout import timeout as _timeout


class _Silent(Exception):
    """No upstream bytes within one ping interval."""


async def _read(content: aiohttp.StreamReader, seconds: float) -> bytes:
    try:
        async with _timeout(seconds):
            return await content.readany()
    except TimeoutError:
        raise _Silent from None


async def _watch_disconnect(receive: Receive, task: asyncio.Task[Any], gone: list[bool]) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.append(True)
            task.cancel()
            return


async def relay(
    connect: Coroutine[Any, Any, aiohttp.ClientResponse],
    transducer: StreamTransducer,
    receive: Receive,
    send: Send,
    headers: Headers,
    *,
    ping_interval: float,
    idle_timeout: float,
    http_error: Callable[[ProxyError], Awaitable[None]],
) -> None:
    """Stream the upstream response that `connect` yields to the client via `transducer`.

    `connect` raises ProxyError for an upstream failure; `http_error` answers one before
    the response has started, and also an upstream error event seen before any content.
    """
    task = asyncio.current_task()
    assert task is not None
    gone: list[bool] = []
    watcher = asyncio.ensure_future(_watch_disconnect(receive, task, gone))
    connecting = asyncio.ensure_future(connect)
    response: aiohttp.ClientResponse | None = None
    started = False

    async def emit(out: bytes) -> None:
        nonlocal started
        if not started:
            started = True
            await send({"type": "http.response.start", "status": 200, "headers": headers})
        if out:
            await send({"type": "http.response.body", "body": out, "more_body": True})

    try:
        # 1. The upstream's response headers (upstream.post bounds the wait).
        while not connecting.done():
            await asyncio.wait({connecting}, timeout=ping_interval)
            if not connecting.done():
                await emit(transducer.ping())
        try:
            response = connecting.result()
        except ProxyError as exc:
            if not started:
                await http_error(exc)
                return
            await emit(transducer.fail(exc.error_type, exc.message))
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        content = response.content
        # 2. The body, one raw chunk at a time.
        idle = 0.0
        while not transducer.finished:
            try:
                chunk = await _read(content, ping_interval)
            except _Silent:
                idle += ping_interval
                if idle >= idle_timeout:
                    out = transducer.fail(
                        "timeout_error", f"the upstream sent nothing for {idle_timeout:g} s"
                    )
                else:
                    out = transducer.ping()
            except aiohttp.ClientError:
                out = transducer.finish()  # a cut-off stream ends in an error event
            else:
                idle = 0.0
                out = transducer.feed(chunk) if chunk else transducer.finish()
            if not started and transducer.error is not None and not transducer.has_content:
                error_type, message = transducer.error
                status = status_for_anthropic_type(error_type)
                await http_error(ProxyError(status, message, error_type=error_type))
                return
            await emit(out)
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    except asyncio.CancelledError:
        if not gone:
            raise
        # The client went away: nothing more to send; the upstream request is dropped below.
        if sys.version_info >= (3, 11):
            task.uncancel()
    finally:
        watcher.cancel()
        connecting.cancel()
        with suppress(asyncio.CancelledError):
            await watcher
        if response is not None:
            if transducer.finished:
                response.release()
            else:
                response.close()


async def forward(
    response: aiohttp.ClientResponse, receive: Receive, send: Send, *, idle_timeout: float
) -> None:
    """Pass an upstream 200 response through unchanged (same protocol on both sides).

    An upstream silent past `idle_timeout` is dropped and the response ends without its
    terminator, so the client sees a broken transfer, never a complete one.
    """
    task = asyncio.current_task()
    assert task is not None
    gone: list[bool] = []
    watcher = asyncio.ensure_future(_watch_disconnect(receive, task, gone))
    complete = False
    try:
        content_type = response.headers.get("content-type", "application/json").encode("latin-1")
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", content_type), (b"cache-control", b"no-cache")],
            }
        )
        content = response.content
        while True:
            try:
                chunk = await _read(content, idle_timeout)
            except _Silent:
                return
            if not chunk:
                break
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        complete = True
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    except aiohttp.ClientError:
        # Cut mid-body: end the response without its terminator so the client sees a
        # broken transfer, not a complete one.
        return
    except asyncio.CancelledError:
        if not gone:
            raise
        if sys.version_info >= (3, 11):
            task.uncancel()
    finally:
        watcher.cancel()
        with suppress(asyncio.CancelledError):
            await watcher
        if complete:
            response.release()
        else:
            response.close()
