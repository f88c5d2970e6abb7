"""Sending a Plan upstream and answering the client: relay | forward | json.

The one place where an upstream failure before the first byte becomes the client's error.
"""

from __future__ import annotations

import asyncio
import logging
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
from .upstream import Attempt as UpstreamAttempt
from .upstream import Upstream, UpstreamHTTPError, UpstreamUnavailable

_SSE_HEADERS = [(b"content-type", SSE), (b"cache-control", b"no-cache")]
log = logging.getLogger("hydra_proxy.upstream")

# What an upstream failure reports to the exchange: its HTTP status (None: not reached or
# no answer in time) and its retry-after.
Report = Callable[[int | None, str | None], None]


class UpstreamUnreachable(ProxyError):
    """An upstream that cannot be reached at all: a configuration error (a local server not
    started, a wrong base_url), not overload. Answered with ``x-should-retry: false`` so that
    SDK clients (the Anthropic and OpenAI SDKs, Claude Code) do not retry it for minutes."""


def error_from_upstream(
    exc: UpstreamHTTPError | UpstreamUnavailable, plan: Plan | None = None
) -> ProxyError:
    """An upstream failure before the first byte, as the error the client should see."""
    if isinstance(exc, UpstreamUnavailable):
        where = f"provider {plan.provider!r} at {plan.url}" if plan and plan.provider else ""
        if exc.timeout:
            text = f"{where}: {exc}" if where else str(exc)
            return ProxyError(504, text, error_type="timeout_error")
        message = f"cannot reach {where}: {exc.__cause__ or exc}" if where else str(exc)
        log.warning("%s", message)
        return UpstreamUnreachable(502, message, error_type="api_error")
    if plan is not None and plan.read_error is not None:
        return plan.read_error(exc.status, exc.body, exc.retry_after)
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
    *,
    connected: H1Response | None = None,
    report: Report | None = None,
) -> None:
    """Send `plan` upstream and answer the client; raises ProxyError before any byte.

    `connected`: the upstream's 200 response, when an earlier step (a fallback chain's
    attempt) already sent the plan; `report`: told the upstream's status (once)."""
    account = account_of(scope)
    if plan.kind == "relay":
        await _relay(plan, upstream, settings, scope, receive, send, http_error, connected, report)
        return
    if connected is not None:
        response = connected
    else:
        try:
            response = await upstream.post(plan.url, plan.headers, plan.body)
        except UpstreamHTTPError as exc:
            if report is not None:
                report(exc.status, exc.retry_after)
            await answer_http_error(plan, exc, scope, send)
            return
        except UpstreamUnavailable as exc:
            if report is not None:
                report(None, None)
            raise error_from_upstream(exc, plan) from None
        if report is not None:
            report(200, None)
    if plan.kind == "forward":
        if account is not None:
            send = account.tap(send)
        failure = await forward(scope, response, receive, send, idle_timeout=settings.idle_timeout)
        if account is not None:
            account.error_type = failure
        return
    assert plan.convert is not None
    upstream_reply = await read_json(response, settings.max_body_bytes)
    if account is not None:
        account.note_reply(upstream_reply)
    reply = plan.convert(upstream_reply)
    await respond(scope, send, 200, orjson.dumps(reply))


async def answer_http_error(plan: Plan, exc: UpstreamHTTPError, scope: Scope, send: Send) -> None:
    """An upstream's error status, answered: as it is on the same protocol (forward), else
    converted (raises ProxyError)."""
    if plan.kind == "forward":  # same protocol: the upstream's own error, as it is
        account = account_of(scope)
        if account is not None:
            account.error_type = error_from_upstream(exc, plan).error_type
        extra = [(b"retry-after", exc.retry_after.encode())] if exc.retry_after else []
        await respond(scope, send, exc.status, exc.body or b"{}", JSON, extra)
        return
    raise error_from_upstream(exc, plan) from None


async def _relay(
    plan: Plan,
    upstream: Upstream,
    settings: Settings,
    scope: Scope,
    receive: Receive,
    send: Send,
    http_error: Callable[[ProxyError], Awaitable[None]],
    connected: H1Response | None = None,
    report: Report | None = None,
) -> None:
    if connected is not None:
        done: asyncio.Future[H1Response] = asyncio.get_running_loop().create_future()
        done.set_result(connected)
        await _relay_from(plan, done, None, settings, scope, receive, send, http_error)
        return
    try:
        attempt = upstream.start(plan.url, plan.headers, plan.body)
    except UpstreamUnavailable as exc:
        if report is not None:
            report(None, None)
        raise error_from_upstream(exc, plan) from None

    async def connect() -> H1Response:
        try:
            response = await upstream.post(plan.url, plan.headers, plan.body, attempt)
        except UpstreamHTTPError as exc:
            if report is not None:
                report(exc.status, exc.retry_after)
            raise error_from_upstream(exc, plan) from None
        except UpstreamUnavailable as exc:
            if report is not None:
                report(None, None)
            raise error_from_upstream(exc, plan) from None
        if report is not None:
            report(200, None)
        return response

    # The request goes out first (already written when a kept-alive connection was free);
    # the transducer, and its token estimate, is built while the upstream works on it.
    connecting = asyncio.ensure_future(connect())
    await _relay_from(plan, connecting, attempt, settings, scope, receive, send, http_error)


async def _relay_from(
    plan: Plan,
    connecting: asyncio.Future[H1Response],
    attempt: UpstreamAttempt | None,
    settings: Settings,
    scope: Scope,
    receive: Receive,
    send: Send,
    http_error: Callable[[ProxyError], Awaitable[None]],
) -> None:
    if attempt is not None and attempt.response is None:
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
        if connecting.cancelled() and attempt is not None and attempt.response is not None:
            attempt.response.close()  # written, but its attempt never ran
