"""The upstream's answer, to the client: its reply relayed (a translated stream), forwarded
(same protocol on both sides) or converted (a non-streamed JSON reply), and its failure
before the first byte as the client's error.

The attempts module hands over the upstream's response (or, for the last attempt, the
future of it: the relay pings the client while it waits). An upstream's HTTP error is read
once (`UpstreamHTTPError.read`) for everything it decides: the client's error, its
retry-after, and whether a same-protocol body goes to the client as it is.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from functools import partial
from typing import Any

import orjson

from ...errors import ProxyError
from ...upstream_errors import ErrorBody, read_error_body, upstream_http_error
from ..transport.http1 import H1Error, H1Response
from . import accounting
from .exchange import SSE, Exchange, UpstreamUnreachable
from .relay import ClientWatch, forward, relay
from .upstream_kinds import Plan

_SSE_HEADERS = [(b"content-type", SSE), (b"cache-control", b"no-cache")]
log = logging.getLogger("hydra_proxy.upstream")


class UpstreamHTTPError(Exception):
    """The upstream answered with an error status; `body` is its start (bounded by the
    attempts module), `retry_after` its Retry-After header, else its body's."""

    def __init__(self, status: int, body: bytes, retry_after: str | None) -> None:
        super().__init__(f"upstream HTTP {status}")
        self.status = status
        self.body = body
        self.read: ErrorBody = read_error_body(body)
        self.retry_after = retry_after if retry_after is not None else self.read.retry_after


class UpstreamUnavailable(Exception):
    """The upstream could not be reached or did not answer in time."""

    def __init__(self, message: str, *, timeout: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout


def client_error(
    exchange: Exchange, exc: UpstreamHTTPError | UpstreamUnavailable, url: str
) -> ProxyError:
    """An upstream failure before the first byte, as the error the client should see."""
    attempt = exchange.route.attempt
    provider = attempt.provider.name if attempt is not None else None
    if isinstance(exc, UpstreamUnavailable):
        where = f"provider {provider!r} at {url}" if provider else ""
        if exc.timeout:
            text = f"{where}: {exc}" if where else str(exc)
            return ProxyError(504, text, error_type="timeout_error")
        message = f"cannot reach {where}: {exc.__cause__ or exc}" if where else str(exc)
        log.warning("%s", message)
        return UpstreamUnreachable(502, message, error_type="api_error")
    return upstream_http_error(
        exc.status,
        exc.read,
        exc.retry_after,
        provider=provider,
        redact=exchange.redactor().text,
    )


def _passes_through(exchange: Exchange, exc: UpstreamHTTPError, error: ProxyError) -> bool:
    """A same-protocol upstream's error body can reach the client as it is: well-formed in
    the client's protocol, and of the class and status the client would get anyway."""
    read = exc.read
    message = read.inner_message
    if message is None or exchange.redactor().finds(message):
        return False  # not an error object, or it would echo a key
    if exchange.protocol == "anthropic":
        return (
            read.top_type == "error"
            and read.inner_type == error.error_type
            and exc.status == error.status
        )
    return exc.status == error.openai_status


async def answer_http_error(exchange: Exchange, plan: Plan, exc: UpstreamHTTPError) -> None:
    """An upstream's error status, answered: as it is when a same-protocol upstream (forward)
    sent a well-formed error of the right class, else converted (raises ProxyError)."""
    error = client_error(exchange, exc, plan.url)
    if plan.reply == "forward" and _passes_through(exchange, exc, error):
        exchange.outcome.failed(error.error_type)  # same protocol: the upstream's own error
        await exchange.respond_error(exc.status, exc.body, exc.retry_after)
        return
    raise error from None


async def read_json(response: H1Response, limit: int, idle_timeout: float | None = None) -> Any:
    """The body of a non-streamed upstream reply, parsed (a 502 when it is not JSON, a 504
    when the upstream goes silent in it for `idle_timeout`)."""
    try:
        return orjson.loads(await response.read(limit, idle_timeout=idle_timeout))
    except TimeoutError:
        raise ProxyError(
            504,
            f"the upstream's reply stalled: nothing for {idle_timeout:g} s",
            error_type="timeout_error",
        ) from None
    except orjson.JSONDecodeError:
        raise ProxyError(
            502, "the upstream sent a response that is not JSON", error_type="api_error"
        ) from None
    except H1Error as exc:
        raise ProxyError(
            502, f"the upstream's reply broke off: {exc}", error_type="api_error"
        ) from None
    finally:
        response.release()


async def deliver(
    exchange: Exchange,
    plan: Plan,
    upstream: Awaitable[H1Response],
    written: H1Response | None = None,
) -> None:
    """Answer the client with the upstream's reply; raises ProxyError before any byte.

    `upstream`: the upstream's 200 response to come. For a relay it is a future that
    raises ProxyError (the relay pings the client while it waits); else it raises the
    upstream's failure. `written`: the response of a request written before this call,
    dropped if the relay ends before it was waited for. A stream is counted in the usage
    service's open-streams gauge while it runs."""
    usage = exchange.worker.usage
    decision, attempt, asked = exchange.route.decision, exchange.route.attempt, exchange.asked
    if usage is None or decision is None or attempt is None or asked is None or not asked.stream:
        await _deliver(exchange, plan, upstream, written)
        return
    route, provider = decision.route.match, attempt.provider.name
    usage.stream_opened(route, provider)
    try:
        await _deliver(exchange, plan, upstream, written)
    finally:
        usage.stream_closed(route, provider)


async def _deliver(
    exchange: Exchange, plan: Plan, upstream: Awaitable[H1Response], written: H1Response | None
) -> None:
    if plan.reply == "relay":
        assert isinstance(upstream, asyncio.Future)
        await _relay(exchange, plan, upstream, written)
        return
    settings = exchange.worker.settings
    # Until the reply is there (and read, for json), a client that leaves cancels the
    # upstream request at once: its connection is closed, not pooled.
    watch = ClientWatch(exchange.receive)
    response: H1Response | None = None
    try:
        try:
            response = await upstream
        except UpstreamHTTPError as exc:
            await answer_http_error(exchange, plan, exc)
            return
        except UpstreamUnavailable as exc:
            raise client_error(exchange, exc, plan.url) from None
        if plan.reply == "json":
            upstream_reply = await read_json(
                response, settings.max_body_bytes, settings.idle_timeout
            )
    except asyncio.CancelledError:
        if not watch.client_left():
            raise
        if response is not None:
            response.close()
        return
    finally:
        await watch.close()
    if plan.reply == "forward":
        failure = await forward(
            exchange,
            response,
            accounting.tap(exchange, exchange.send, plan.strip),
            idle_timeout=settings.idle_timeout,
            stall_timeout=settings.send_stall_timeout,
        )
        exchange.outcome.failed(failure)
        return
    assert plan.convert is not None
    accounting.note_reply(exchange, upstream_reply)
    reply = plan.convert(upstream_reply)
    if plan.content_type is not None:
        await exchange.respond(200, reply, plan.content_type, _SSE_HEADERS[1:])
        return
    await exchange.respond(200, orjson.dumps(reply))


async def _relay(
    exchange: Exchange,
    plan: Plan,
    connecting: asyncio.Future[H1Response],
    written: H1Response | None,
) -> None:
    assert plan.transducer is not None
    settings = exchange.worker.settings
    try:
        await relay(
            exchange,
            connecting,
            partial(accounting.built_by, exchange, plan.transducer),
            plan.stream_headers or _SSE_HEADERS,
            ping_interval=settings.ping_interval,
            idle_timeout=settings.idle_timeout,
            stall_timeout=settings.send_stall_timeout,
        )
    finally:
        if connecting.cancelled() and written is not None:
            written.close()  # written, but its attempt never ran
