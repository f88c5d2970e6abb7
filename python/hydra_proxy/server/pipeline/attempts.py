"""Until an upstream answers: a routed request's attempts in order, each with its key, its
admission slot and its retries; then the reply module answers the client.

Each attempt takes a key from its provider's pool, is planned for its provider (kind and
model, through the client's ingress) and is sent. A connect error, a timeout, a 429 or a
5xx moves on to the next attempt, but only before anything reached the client: an attempt
that is not the last is connected (its response head awaited) before its reply is
relayed, so a stream is never spliced. The last (or only) attempt is written at once and
its reply relayed while the upstream works: the transducer is built meanwhile, with pings.

Keys: a request whose client names its session (server.pipeline.sessions) keeps the key its session
had until that key rests; others take the pool's keys in turn. An attempt whose pool has
every key resting (after a 429 or 401/403) is skipped; when
no attempt is left the client gets a 429 with the soonest key's retry-after. A pool of one
key on the last attempt is sent anyway (there is nothing to rotate to). On the last attempt
of a pool of several keys, a 429 is tried once more with the next resting-free key (before
any byte reached the client: never a spliced stream).

Retries (the last attempt only: a chain's earlier ones fall back instead): a connection
failure or a retryable status is tried again with backoff, at most `retries` times. A
retry-after longer than MAX_RETRY_AFTER is passed to the client rather than waited out. A
kept-alive connection the upstream had closed is replaced, which is no retry. The head
must come within `first_byte_timeout`; an error body is kept to MAX_ERROR_BODY bytes.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from ...config.keys import Key, KeyPool
from ...config.routes import Attempt, should_fall_back
from ...config.settings import Settings
from ...errors import ProxyError
from ...upstream_errors import ErrorBody
from ...usage.record import client_key_id
from ..checks.admission import Admitted, session_of
from ..transport.http1 import H1Client, H1Error, H1Response, Request
from . import reply
from .exchange import ClientRequest, Exchange
from .left_out import NOTICES
from .refusals import REFUSALS, refused_param, without
from .reply import UpstreamHTTPError, UpstreamUnavailable
from .sessions import session_id
from .upstream_kinds import Plan, with_provider_key

if sys.version_info >= (3, 11):
    _timeout = asyncio.timeout
else:  # pragma: no cover - exercised on 3.10 only
    from async_timeout import timeout as _timeout

log = logging.getLogger("hydra_proxy.upstream")

# Statuses worth another try before anything was sent to the client.
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504, 529})
MAX_ERROR_BODY = 64 * 1024
# A longer retry-after (the Retry-After header, or a Gemini body's RetryInfo) is passed to
# the client rather than waited out here.
MAX_RETRY_AFTER = 5.0


# What an upstream failure reports to its key's pool and the access log: its HTTP status
# (None: not reached or no answer in time), its retry-after, and its error body (which may
# say whether the key or only the request was refused).
class Report(Protocol):
    def __call__(
        self, status: int | None, retry_after: str | None, body: ErrorBody | None = None
    ) -> None: ...


# After a 429: puts the pool's next resting-free key on the plan and returns the reporter
# for that key, or None when no other key is free.
Rekey = Callable[[Plan], Report | None]


# -- one request on the wire -----------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One upstream request: its bytes, and its response when already written."""

    request: Request
    response: H1Response | None
    """Written at once: a kept-alive connection was free."""


def start(http: H1Client, url: str, headers: Mapping[str, str], body: bytes) -> Call:
    """The request, written at once when a kept-alive connection is free: what runs next
    overlaps with the upstream's work. `post` then awaits its response."""
    try:
        request = http.prepare(url, headers, body)
    except H1Error as exc:
        raise UpstreamUnavailable(f"cannot reach the upstream: {exc}") from exc
    return Call(request, http.send_now(request))


def _retry_delay(attempt: int, retry_after: str | None) -> float | None:
    """Seconds to wait before the next try, or None when it is not worth waiting."""
    if retry_after is not None:
        try:
            seconds: float = float(retry_after)
        except ValueError:
            return None
        return seconds if 0 <= seconds <= MAX_RETRY_AFTER else None
    backoff: float = min(0.25 * (2**attempt), 2.0) * (0.5 + random.random() / 2)
    return backoff


def _local_refusal(request: Request, exc: H1Error) -> bool:
    """A connection refused on this machine: a local server (Ollama, vLLM) that is not
    running, a configuration error that no retry fixes."""
    if not isinstance(exc.__cause__, ConnectionRefusedError):
        return False
    host = request.host
    return host == "localhost" or host.startswith("127.") or host == "::1"


async def post(
    http: H1Client, settings: Settings, call: Call, *, retries: int | None = None
) -> H1Response:
    """The 200 response to `call`, its body still to come, after at most `retries` more
    tries (default: the settings'). Raises UpstreamHTTPError or UpstreamUnavailable."""
    retries = settings.retries if retries is None else retries
    request, first = call.request, call.response
    tries = 0
    while True:
        response: H1Response | None = first
        first = None
        try:
            if response is None:
                response = await http.send(request)
            async with _timeout(settings.first_byte_timeout):
                await response.head
        except TimeoutError as exc:
            if response is not None:
                response.close()
            raise UpstreamUnavailable(
                f"the upstream did not answer within {settings.first_byte_timeout:g} s",
                timeout=True,
            ) from exc
        except H1Error as exc:
            if response is not None and response.reused:
                continue  # a kept-alive connection the upstream had closed: not a try
            if tries < retries and not _local_refusal(request, exc):
                backoff = _retry_delay(tries, None) or 0.0
                log.info("upstream connection failed (%s); retrying in %.2fs", exc, backoff)
                tries += 1
                await asyncio.sleep(backoff)
                continue
            raise UpstreamUnavailable(f"cannot reach the upstream: {exc}") from exc
        except BaseException:
            if response is not None:
                response.close()
            raise
        if response.status == 200:
            return response
        error = await _http_error(response, settings.idle_timeout)
        if error.status in RETRY_STATUSES and tries < retries:
            delay = _retry_delay(tries, error.retry_after)
            if delay is not None:  # else the client gets the status and retry-after
                log.info("upstream HTTP %d; retrying in %.2fs", error.status, delay)
                tries += 1
                await asyncio.sleep(delay)
                continue
        raise error


async def _http_error(response: H1Response, idle_timeout: float | None) -> UpstreamHTTPError:
    """An error status, with the start of its body (MAX_ERROR_BODY bytes; the connection
    is released)."""
    try:
        body = await response.read(MAX_ERROR_BODY, partial=True, idle_timeout=idle_timeout)
    except (H1Error, TimeoutError):  # cut, or stalled: the status still tells
        body = b""
    finally:
        response.release()
    return UpstreamHTTPError(response.status, body, response.headers.get("retry-after"))


# -- the attempts ------------------------------------------------------------------------


def _keys_resting(name: str, pool: KeyPool, now: float) -> ProxyError:
    soonest = pool.soonest(now)
    seconds = max(1, math.ceil(soonest[1])) if soonest else 1
    return ProxyError(
        429,
        f"every key of provider {name!r} is resting after rate limits; retry in {seconds} s",
        error_type="rate_limit_error",
        retry_after=str(seconds),
    )


class _Reporter:
    """Told how one try went: logs it and reports it to the key's pool."""

    def __init__(
        self,
        name: str,
        pool: KeyPool | None,
        key: Key | None,
        tried: list[str],
        log: dict[str, object],
    ) -> None:
        self.name, self.pool, self.key, self.tried, self.log = name, pool, key, tried, log

    def __call__(
        self, status: int | None, retry_after: str | None, body: ErrorBody | None = None
    ) -> None:
        self.tried.append(f"{self.name}:{status if status is not None else 'unreachable'}")
        self.log["attempts"] = ",".join(self.tried)
        if self.pool is not None and self.key is not None:
            self.pool.report(self.key, status, retry_after, time.monotonic(), body or b"")


async def try_route(exchange: Exchange, request: ClientRequest) -> None:
    """Try the attempts of the exchange's route in order and answer the client (raises
    ProxyError before any byte).

    The access log names the route and every attempt as ``provider:status`` (``cooling``:
    every key rested; ``unreachable``: not reached or no answer in time; ``full``: its
    admission bound was reached, server/checks/admission.py)."""
    worker = exchange.worker
    admission = worker.admission
    if admission is None:
        await _attempts(exchange, request, None)
        return
    key_id = client_key_id(exchange.caller.client_key)
    admitted = Admitted(
        admission, session_of(exchange.scope, key_id), exchange.receive, worker.usage
    )
    try:
        await admitted.enter_key(key_id, exchange.log)
        await _attempts(exchange, request, admitted)
    finally:
        admitted.release()


async def _attempts(exchange: Exchange, request: ClientRequest, admitted: Admitted | None) -> None:
    worker = exchange.worker
    decision = exchange.route.decision
    assert decision is not None
    tried: list[str] = []
    log = exchange.log
    _put_first(log, {"route": decision.label})
    resting: ProxyError | None = None
    attempts = decision.attempts
    # A session keeps its pool key until the key rests (the upstream's state is per key).
    session: str | None = None
    if any(len(worker.pools.get(a.provider.name) or ()) > 1 for a in attempts):
        session = session_id(exchange.header)
    for index, attempt in enumerate(attempts):
        name = attempt.provider.name
        pool = worker.pools.get(name)
        last = index + 1 == len(attempts)
        key: Key | None = None
        if pool is not None and len(pool):
            key = _take_key(pool, session, last=last)
            if key is None:
                tried.append(f"{name}:cooling")
                log["attempts"] = ",".join(tried)
                resting = _keys_resting(name, pool, time.monotonic())
                continue
        if admitted is not None and not await admitted.enter(name, log, last=last):
            tried.append(f"{name}:full")
            log["attempts"] = ",".join(tried)
            continue
        plan = _plan(exchange, request, attempt)
        # The pool's key, or in key-passthrough mode the client's own (there are no pools).
        with_provider_key(
            plan,
            attempt.provider.kind,
            key.value if key is not None else exchange.caller.provider_key,
        )
        exchange.route.sending(attempt)  # the usage record names the attempt that answered
        _put_first(log, plan.log)
        plan.log = log  # what the plan notes from now on goes to the access log
        report = _Reporter(name, pool, key, tried, log)
        if last:
            rekey = _rekey(attempt, pool, key, tried, log, session) if pool is not None else None
            await _last(exchange, plan, report, rekey)
            return
        if await _before_last(exchange, plan, report):
            return
    assert resting is not None  # only resting keys end the loop without an answer
    raise resting


def _put_first(log: dict[str, object], details: dict[str, object]) -> None:
    """The access-log details with `details` first, then what was noted so far (the same
    dict: what holds it goes on adding to it)."""
    if not log:
        log.update(details)
        return
    noted = {**details, **log}
    log.clear()
    log.update(noted)


def _take_key(pool: KeyPool, session: str | None, *, last: bool) -> Key | None:
    """The attempt's key from its pool (the session's own while it is not resting), None
    when every key rests. A lone key on the last attempt still goes: nothing else could
    answer, and the upstream's own 429 (with its retry-after) is the truth."""
    key = pool.acquire(time.monotonic(), session)
    if key is None and len(pool) == 1 and last:
        key = pool.keys[0]
    return key


def _plan(exchange: Exchange, request: ClientRequest, attempt: Attempt) -> Plan:
    """The attempt's plan, translated without what its model refused before; what it left
    out for its upstream (images, a web search, output tokens) is told to the session once
    (server/pipeline/left_out.py)."""
    decision = exchange.route.decision
    assert decision is not None
    name = attempt.provider.name
    plan = request.plan(decision, attempt)
    if plan.reply != "forward":  # translated: what this model refused stays out
        refused = REFUSALS.by_model.get((name, attempt.model))
        if refused:
            plan.body = without(plan.body, refused) or plan.body
    left_out = plan.log.get("images_left_out")
    searches_left_out = "web_search_left_out" in plan.log
    lowered = plan.log.get("max_tokens_lowered")
    if isinstance(left_out, int) or searches_left_out or isinstance(lowered, str):
        session = session_of(exchange.scope, client_key_id(exchange.caller.client_key))
        if isinstance(left_out, int):
            NOTICES.images(session, name, left_out)
        if searches_left_out:
            NOTICES.web_search(session, name)
        if isinstance(lowered, str):
            asked, _, limit = lowered.partition("->")
            NOTICES.output_limit(session, name, int(asked), int(limit))
    return plan


async def _before_last(exchange: Exchange, plan: Plan, report: Report) -> bool:
    """An attempt before the last, connected before its reply is relayed: whether it
    answered the client (False: the next attempt runs). Its failures fall back, but an
    error status that says the request itself is wrong, which is answered."""
    worker = exchange.worker
    try:
        try:
            call = start(worker.http, plan.url, plan.headers, plan.body)
            response = await post(worker.http, worker.settings, call, retries=0)
        except UpstreamHTTPError as exc:
            if not _without_refused(exchange, plan, exc):
                raise
            report(exc.status, exc.retry_after, exc.read)
            call = start(worker.http, plan.url, plan.headers, plan.body)
            response = await post(worker.http, worker.settings, call, retries=0)
    except UpstreamHTTPError as exc:
        report(exc.status, exc.retry_after, exc.read)
        if should_fall_back(exc.status):
            return False
        await reply.answer_http_error(exchange, plan, exc)
        return True
    except UpstreamUnavailable as exc:
        report(None, None)
        reply.client_error(exchange, exc, plan.url)  # logged: the next attempt runs
        return False
    report(200, None)
    connected: asyncio.Future[H1Response] = asyncio.get_running_loop().create_future()
    connected.set_result(response)
    await reply.deliver(exchange, plan, connected)
    return True


def _rekey(
    attempt: Attempt,
    pool: KeyPool,
    key: Key | None,
    tried: list[str],
    log: dict[str, object],
    session: str | None = None,
) -> Rekey | None:
    """For the last attempt of a pool of several keys: after a 429 (which rested `key`), the
    next resting-free key for one more try, so that one busy key is not the client's 429."""
    if key is None or len(pool) < 2:
        return None

    def rekey(plan: Plan) -> Report | None:
        other = pool.acquire(time.monotonic(), session)
        if other is None or other is key:
            return None
        with_provider_key(plan, attempt.provider.kind, other.value)
        return _Reporter(attempt.provider.name, pool, other, tried, log)

    return rekey


async def _send(
    exchange: Exchange, plan: Plan, call: Call | None, report: Report, rekey: Rekey | None
) -> H1Response:
    """POST `plan` (`call`: already started) and return the 200 response, reporting each
    try's outcome. A 429 is tried once more with another key when `rekey` gives one: no
    byte of the reply has reached the client yet (at most keep-alive pings), so nothing is
    spliced. Raises UpstreamHTTPError or UpstreamUnavailable."""
    worker = exchange.worker
    refusal_retried = False
    while True:
        try:
            if call is None:
                call = start(worker.http, plan.url, plan.headers, plan.body)
            response = await post(worker.http, worker.settings, call)
        except UpstreamHTTPError as exc:
            report(exc.status, exc.retry_after, exc.read)
            if not refusal_retried and _without_refused(exchange, plan, exc):
                refusal_retried, call = True, None  # once: bounded
                continue
            next_report = rekey(plan) if exc.status == 429 and rekey is not None else None
            if next_report is None:
                raise
            log.info("upstream HTTP 429; trying once more with the next key")
            report, rekey, call = next_report, None, None  # once: bounded
            continue
        except UpstreamUnavailable:
            report(None, None)
            raise
        report(200, None)
        return response


def _without_refused(exchange: Exchange, plan: Plan, exc: UpstreamHTTPError) -> bool:
    """Whether the upstream refused a field the translated request may go without: then it
    is remembered for the model and `plan` no longer carries it (server/pipeline/refusals.py)."""
    attempt = exchange.route.attempt
    if plan.reply == "forward" or attempt is None:
        return False
    name = refused_param(exc.status, exc.read)
    if name is None:
        return False
    body = without(plan.body, {name})
    if body is None:
        return False
    REFUSALS.learn(attempt.provider.name, attempt.model, name, exc.read.message)
    plan.body = body
    plan.log["refused"] = name
    return True


async def _last(exchange: Exchange, plan: Plan, report: Report, rekey: Rekey | None) -> None:
    """The last attempt: a relay's request is written now and its reply relayed while the
    upstream works; another reply is awaited, then answered."""
    if plan.reply != "relay":
        await reply.deliver(exchange, plan, _send(exchange, plan, None, report, rekey))
        return
    try:
        call = start(exchange.worker.http, plan.url, plan.headers, plan.body)
    except UpstreamUnavailable as exc:
        report(None, None)
        raise reply.client_error(exchange, exc, plan.url) from None

    async def connect() -> H1Response:
        try:
            return await _send(exchange, plan, call, report, rekey)
        except (UpstreamHTTPError, UpstreamUnavailable) as exc:
            raise reply.client_error(exchange, exc, plan.url) from None

    # The request goes out first (already written when a kept-alive connection was free);
    # the transducer, and its token estimate, is built while the upstream works on it.
    connecting = asyncio.ensure_future(connect())
    if call.response is None:
        try:
            await asyncio.sleep(0)  # lets a new connection start
        except asyncio.CancelledError:
            connecting.cancel()
            raise
    await reply.deliver(exchange, plan, connecting, call.response)
