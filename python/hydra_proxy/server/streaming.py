"""Pumping an upstream body through a transducer to the client.

Raw upstream chunks (not lines) go into the transducer; whatever it returns for a chunk is
sent as one ASGI body message, so events are batched as they arrive. While the upstream is
silent the client gets keepalive pings; past the idle timeout the stream ends with an error
event. A client disconnect cancels the upstream request at once.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from contextlib import suppress

import aiohttp

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


async def _watch_disconnect(receive: Receive, task: asyncio.Task[None], gone: list[bool]) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.append(True)
            task.cancel()
            return


async def pump(
    response: aiohttp.ClientResponse,
    transducer: StreamTransducer,
    receive: Receive,
    send: Send,
    headers: Headers,
    *,
    ping_interval: float,
    idle_timeout: float,
    early_error: Callable[[StreamTransducer], Awaitable[bool]],
) -> None:
    """Stream `response` to the client through `transducer`.

    Before the client's response starts, the first upstream chunk is awaited (up to one ping
    interval): if it is already an error, `early_error` may answer with an HTTP error
    instead (returns True when it did).
    """
    task = asyncio.current_task()
    assert task is not None
    gone: list[bool] = []
    watcher = asyncio.ensure_future(_watch_disconnect(receive, task, gone))
    content = response.content
    try:
        first = b""
        try:
            chunk = await _read(content, ping_interval)
            first = transducer.feed(chunk) if chunk else transducer.finish()
        except _Silent:
            first = transducer.ping()
        except aiohttp.ClientError:
            first = transducer.finish()
        if (
            transducer.error is not None
            and not transducer.has_content
            and await early_error(transducer)
        ):
            return
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": first, "more_body": True})
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
            if out:
                await send({"type": "http.response.body", "body": out, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    except asyncio.CancelledError:
        if not gone:
            raise
        if sys.version_info >= (3, 11):
            task.uncancel()
        # The client went away: nothing more to send; the upstream request is dropped below.
    finally:
        watcher.cancel()
        with suppress(asyncio.CancelledError):
            await watcher
        if transducer.finished:
            response.release()
        else:
            response.close()
