"""Sending a Plan upstream and answering the client: relay | forward | json.

The one place where an upstream failure before the first byte becomes the client's error.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Protocol

import orjson

from ..config import Settings
from ..errors import ProxyError
from ..upstream_errors import redact, upstream_http_error
from .accounting import account_of
from .asgi import JSON, SSE, Receive, Scope, Send, respond
from .http1 import H1Error, H1Response
from .plan import Plan
from .relay import ClientWatch, forward, relay
from .upstream import Attempt as UpstreamAttempt
from .upstream import Upstream, UpstreamHTTPError, UpstreamUnavailable

_SSE_HEADERS = [(b"content-type", SSE), (b"cache-control", b"no-cache")]
log = logging.getLogger("hydra_proxy.upstream")


# What an upstream failure reports to the exchange: its HTTP status (None: not reached or
# no answer in time), its retry-after, and its error body (which may say the key is bad).
class Report(Protocol):
    def __call__(self, status: int | None, retry_after: str | None, body: bytes = b"") -> None: ...


# After a 429: puts the pool's next resting-free key on the plan and returns the reporter
# for that key, or None when no other key is free.
Rekey = Callable[[Plan], Report | None]


async def _send(
    upstream: Upstream,
    plan: Plan,
    attempt: UpstreamAttempt | None,
    report: Report | None,
    rekey: Rekey | None,
) -> H1Response:
    """POST `plan` (`attempt`: already written) and return the 200 response, reporting each
    try's outcome. A 429 is tried once more with another key when `rekey` gives one: no
    byte of the reply has reached the client yet (at most keep-alive pings), so nothing is
    spliced. Raises UpstreamHTTPError or UpstreamUnavailable."""
    while True:
        try:
            response = await upstream.post(plan.url, plan.headers, plan.body, attempt)
        except UpstreamHTTPError as exc:
            if report is not None:
                report(exc.status, exc.retry_after, exc.body)
            next_report = rekey(plan) if exc.status == 429 and rekey is not None else None
            if next_report is None:
                raise
            log.info("upstream HTTP 429; trying once more with the next key")
            report, rekey, attempt = next_report, None, None  # once: bounded
            continue
        except UpstreamUnavailable:
            if report is not None:
                report(None, None)
            raise
        if report is not None:
            report(200, None)
        return response


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
    return upstream_http_error(
        exc.status,
        exc.body,
        exc.retry_after,
        provider=(plan.provider or None) if plan is not None else None,
        secrets=_secrets(plan),
    )


# Headers that carry a provider key (every dialect's auth header).
_KEY_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "api-key")


def _secrets(plan: Plan | None) -> list[str]:
    """The keys `plan` was sent with: never echoed in an error."""
    if plan is None:
        return []
    out = []
    for name, value in plan.headers.items():
        if name.lower() in _KEY_HEADERS:
            out.append(value[7:] if value[:7].lower() == "bearer " else value)
    return out


def _passes_through(plan: Plan, exc: UpstreamHTTPError, error: ProxyError) -> bool:
    """A same-protocol upstream's error body can reach the client as it is: well-formed in
    the client's protocol, and of the class and status the client would get anyway."""
    try:
        body = orjson.loads(exc.body)
    except orjson.JSONDecodeError:
        return False
    inner = body.get("error") if isinstance(body, dict) else None
    if not isinstance(inner, dict) or not isinstance(inner.get("message"), str):
        return False
    if redact(inner["message"], _secrets(plan)) != inner["message"]:
        return False  # it would echo a key
    if plan.client == "anthropic":
        return (
            body.get("type") == "error"
            and inner.get("type") == error.error_type
            and exc.status == error.status
        )
    return exc.status == error.openai_status


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
    rekey: Rekey | None = None,
) -> None:
    """Send `plan` upstream and answer the client; raises ProxyError before any byte.

    `connected`: the upstream's 200 response, when an earlier step (a fallback chain's
    attempt) already sent the plan; `report`: told the upstream's status (once per try);
    `rekey`: after a 429, another key for one more try (see `_send`)."""
    account = account_of(scope)
    if plan.kind == "relay":
        await _relay(
            plan, upstream, settings, scope, receive, send, http_error, connected, report, rekey
        )
        return
    # Until the reply is there (and read, for json), a client that leaves cancels the
    # upstream request at once: its connection is closed, not pooled.
    watch = ClientWatch(receive)
    try:
        if connected is not None:
            response = connected
        else:
            try:
                response = await _send(upstream, plan, None, report, rekey)
            except UpstreamHTTPError as exc:
                await answer_http_error(plan, exc, scope, send)
                return
            except UpstreamUnavailable as exc:
                raise error_from_upstream(exc, plan) from None
        if plan.kind == "json":
            upstream_reply = await read_json(
                response, settings.max_body_bytes, settings.idle_timeout
            )
    except asyncio.CancelledError:
        if not watch.client_left():
            raise
        if connected is not None:
            connected.close()
        return
    finally:
        await watch.close()
    if plan.kind == "forward":
        if account is not None:
            send = account.tap(send)
        failure = await forward(
            scope,
            response,
            receive,
            send,
            idle_timeout=settings.idle_timeout,
            stall_timeout=settings.send_stall_timeout,
        )
        if account is not None:
            account.error_type = failure
        return
    assert plan.convert is not None
    if account is not None:
        account.note_reply(upstream_reply)
    reply = plan.convert(upstream_reply)
    await respond(scope, send, 200, orjson.dumps(reply))


async def answer_http_error(plan: Plan, exc: UpstreamHTTPError, scope: Scope, send: Send) -> None:
    """An upstream's error status, answered: as it is when a same-protocol upstream (forward)
    sent a well-formed error of the right class, else converted (raises ProxyError)."""
    error = error_from_upstream(exc, plan)
    if plan.kind == "forward" and _passes_through(plan, exc, error):
        account = account_of(scope)  # same protocol: the upstream's own error, as it is
        if account is not None:
            account.error_type = error.error_type
        extra = [(b"retry-after", exc.retry_after.encode())] if exc.retry_after else []
        await respond(scope, send, exc.status, exc.body, JSON, extra)
        return
    raise error from None


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
    rekey: Rekey | None = None,
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
            return await _send(upstream, plan, attempt, report, rekey)
        except (UpstreamHTTPError, UpstreamUnavailable) as exc:
            raise error_from_upstream(exc, plan) from None

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
            stall_timeout=settings.send_stall_timeout,
        )
    finally:
        if connecting.cancelled() and attempt is not None and attempt.response is not None:
            attempt.response.close()  # written, but its attempt never ran
