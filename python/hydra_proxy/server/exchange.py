"""Sending a Plan upstream and answering the client: relay | forward | json.

The one place where an upstream failure before the first byte becomes the client's error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import orjson

from ..config import Settings
from ..errors import ProxyError, anthropic_error_type, status_for_anthropic_type, upstream_error
from .accounting import account_of
from .asgi import JSON, SSE, Receive, Scope, Send, respond
from .http1 import H1Error, H1Response
from .plan import Plan
from .relay import forward, relay
from .upstream import Upstream, UpstreamHTTPError, UpstreamUnavailable

_SSE_HEADERS = [(b"content-type", SSE), (b"cache-control", b"no-cache")]


def error_from_upstream(exc: UpstreamHTTPError | UpstreamUnavailable) -> ProxyError:
    """An upstream failure before the first byte, as the error the client should see."""
    if isinstance(exc, UpstreamUnavailable):
        if exc.timeout:
            return ProxyError(504, str(exc), error_type="timeout_error")
        return ProxyError(529, str(exc), error_type="overloaded_error")
    try:
        payload: object = orjson.loads(exc.body)
    except orjson.JSONDecodeError:
        payload = exc.body.decode("utf-8", "replace").strip() or None
    kind: str | None = None
    if isinstance(payload, dict):
        err = payload.get("error")
        if isinstance(err, dict):
            raw = err.get("type") if isinstance(err.get("type"), str) else err.get("code")
            kind = raw if isinstance(raw, str) else None
    _, message = upstream_error(payload)
    error_type = anthropic_error_type(exc.status, kind)
    return ProxyError(
        status_for_anthropic_type(error_type),
        f"upstream error (HTTP {exc.status}): {message}",
        error_type=error_type,
        retry_after=exc.retry_after,
    )


async def read_json(response: H1Response, limit: int) -> Any:
    """The body of a non-streamed upstream reply, parsed (a 502 when it is not JSON)."""
    try:
        return orjson.loads(await response.read(limit))
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


async def run(
    plan: Plan,
    upstream: Upstream,
    settings: Settings,
    scope: Scope,
    receive: Receive,
    send: Send,
    http_error: Callable[[ProxyError], Awaitable[None]],
) -> None:
    """Send `plan` upstream and answer the client; raises ProxyError before any byte."""
    account = account_of(scope)
    if plan.kind == "relay":
        await _relay(plan, upstream, settings, scope, receive, send, http_error)
        return
    try:
        response = await upstream.post(plan.url, plan.headers, plan.body)
    except UpstreamHTTPError as exc:
        if plan.kind == "forward":  # same protocol: the upstream's own error, as it is
            if account is not None:
                account.error_type = error_from_upstream(exc).error_type
            extra = [(b"retry-after", exc.retry_after.encode())] if exc.retry_after else []
            await respond(scope, send, exc.status, exc.body or b"{}", JSON, extra)
            return
        raise error_from_upstream(exc) from None
    except UpstreamUnavailable as exc:
        raise error_from_upstream(exc) from None
    if plan.kind == "forward":
        if account is not None:
            send = account.tap(send)
        failure = await forward(scope, response, receive, send, idle_timeout=settings.idle_timeout)
        if account is not None:
            account.error_type = failure
        return
    assert plan.convert is not None
    upstream_reply = await read_json(response, settings.max_body_bytes)
    if account is not None and isinstance(upstream_reply, dict):
        usage = upstream_reply.get("usage")
        account.reply_usage = usage if isinstance(usage, dict) else None
    reply = plan.convert(upstream_reply)
    await respond(scope, send, 200, orjson.dumps(reply))


async def _relay(
    plan: Plan,
    upstream: Upstream,
    settings: Settings,
    scope: Scope,
    receive: Receive,
    send: Send,
    http_error: Callable[[ProxyError], Awaitable[None]],
) -> None:
    try:
        attempt = upstream.start(plan.url, plan.headers, plan.body)
    except UpstreamUnavailable as exc:
        raise error_from_upstream(exc) from None

    async def connect() -> H1Response:
        try:
            return await upstream.post(plan.url, plan.headers, plan.body, attempt)
        except (UpstreamHTTPError, UpstreamUnavailable) as exc:
            raise error_from_upstream(exc) from None

    # The request goes out first (already written when a kept-alive connection was free);
    # the transducer, and its token estimate, is built while the upstream works on it.
    connecting = asyncio.ensure_future(connect())
    if attempt.response is None:
        try:
            await asyncio.sleep(0)  # lets a new connection start
        except asyncio.CancelledError:
            connecting.cancel()
            raise
    assert plan.transducer is not None
    make_transducer = plan.transducer
    account = account_of(scope)
    if account is not None:
        make_transducer = partial(account.built_by, plan.transducer)
    try:
        await relay(
            scope,
            connecting,
            make_transducer,
            receive,
            send,
            _SSE_HEADERS,
            ping_interval=settings.ping_interval,
            idle_timeout=settings.idle_timeout,
            http_error=http_error,
        )
    finally:
        if connecting.cancelled() and attempt.response is not None:
            attempt.response.close()  # written, but its attempt never ran
