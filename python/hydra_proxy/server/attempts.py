"""A routed request's attempts, in order: fallback chains and key pools.

Each attempt takes a key from its provider's pool, is planned for its provider (kind and
model, through the same ingress function), and is sent. A connect error, a timeout, a 429
or a 5xx moves on to the next attempt, but only before anything reached the client: an
attempt that is not the last is connected (its response head awaited) before its reply is
relayed, so a stream is never spliced. The last (or only) attempt takes the exchange's
usual path: the transducer is built while the upstream works, with pings.

Keys: an attempt whose pool has every key resting (after a 429 or 401/403) is skipped; when
no attempt is left the client gets a 429 with the soonest key's retry-after. A pool of one
key on the last attempt is sent anyway (there is nothing to rotate to). On the last attempt
of a pool of several keys, a 429 is tried once more with the next resting-free key (before
any byte reached the client: never a spliced stream).
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable

from ..config import Attempt, KeyPool, Settings, should_fall_back
from ..config.keys import Key
from ..errors import ProxyError
from ..usage.record import client_key_id
from ..usage.service import UsageService
from . import exchange
from .accounting import account_of
from .admission import Admission
from .admit import Admitted, session_of
from .asgi import Receive, Scope, Send
from .dialects import DIALECTS
from .http1 import H1Response
from .ingress import Routed, usage_target
from .plan import Plan
from .upstream import Upstream, UpstreamHTTPError, UpstreamUnavailable


def _with_key(plan: Plan, attempt: Attempt, key: Key | None) -> Plan:
    """The plan, authenticated with the pool's key (the dialect put the provider's first)."""
    if key is not None:
        dialect = DIALECTS[attempt.provider.kind]
        plan.headers[dialect.auth_header] = dialect.auth_prefix + key.value
    plan.provider = attempt.provider.name
    return plan


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
    """Told how one attempt went: logs it and reports it to the key's pool."""

    def __init__(
        self,
        name: str,
        pool: KeyPool | None,
        key: Key | None,
        tried: list[str],
        log: dict[str, object],
    ) -> None:
        self.name, self.pool, self.key, self.tried, self.log = name, pool, key, tried, log

    def __call__(self, status: int | None, retry_after: str | None, body: bytes = b"") -> None:
        self.tried.append(f"{self.name}:{status if status is not None else 'unreachable'}")
        self.log["attempts"] = ",".join(self.tried)
        if self.pool is not None and self.key is not None:
            self.pool.report(self.key, status, retry_after, time.monotonic(), body)


async def run(
    routed: Routed,
    upstream: Upstream,
    pools: dict[str, KeyPool],
    settings: Settings,
    scope: Scope,
    receive: Receive,
    send: Send,
    http_error: Callable[[ProxyError], Awaitable[None]],
    usage: UsageService | None = None,
    admission: Admission | None = None,
) -> None:
    """Try the attempts in order and answer the client (raises ProxyError before any byte).

    The access log names the route and every attempt as ``provider:status`` (``cooling``:
    every key rested; ``unreachable``: not reached or no answer in time; ``full``: its
    admission bound was reached, server/admit.py)."""
    if admission is None:
        await _run(routed, upstream, pools, settings, scope, receive, send, http_error, usage)
        return
    account = account_of(scope)
    key_id = client_key_id(account.key) if account is not None else None
    admitted = Admitted(admission, session_of(scope, key_id), receive, usage)
    try:
        await admitted.enter_key(key_id, scope.setdefault("hydra.log", {}))
        await _run(
            routed, upstream, pools, settings, scope, receive, send, http_error, usage, admitted
        )
    finally:
        admitted.release()


async def _run(
    routed: Routed,
    upstream: Upstream,
    pools: dict[str, KeyPool],
    settings: Settings,
    scope: Scope,
    receive: Receive,
    send: Send,
    http_error: Callable[[ProxyError], Awaitable[None]],
    usage: UsageService | None,
    admitted: Admitted | None = None,
) -> None:
    decision = routed.decision
    tried: list[str] = []
    log: dict[str, object] = {"route": decision.label, **scope.get("hydra.log", {})}
    scope["hydra.log"] = log
    resting: ProxyError | None = None
    attempts = decision.attempts
    for index, attempt in enumerate(attempts):
        name = attempt.provider.name
        pool = pools.get(name)
        key: Key | None = None
        if pool is not None and len(pool):
            key = pool.acquire(time.monotonic())
            if key is None and len(pool) == 1 and index + 1 == len(attempts):
                # A lone key on the last attempt still goes: nothing else could answer, and
                # the upstream's own 429 (with its retry-after) is the truth.
                key = pool.keys[0]
            if key is None:
                tried.append(f"{name}:cooling")
                log["attempts"] = ",".join(tried)
                resting = _keys_resting(name, pool, time.monotonic())
                continue
        last = index + 1 == len(attempts)
        if admitted is not None and not await admitted.enter(name, log, last=last):
            tried.append(f"{name}:full")
            log["attempts"] = ",".join(tried)
            continue
        plan = _with_key(routed.build(attempt), attempt, key)
        plan.target = usage_target(decision, attempt, stream=routed.stream)
        account = account_of(scope)
        if account is not None:  # the usage record names the attempt that answered
            account.target = plan.target
        plan.log.update(log)
        log = plan.log
        scope["hydra.log"] = log
        report = _Reporter(name, pool, key, tried, log)
        if last:
            rekey = _rekey(attempt, pool, key, tried, log) if pool is not None else None
            await answer(
                plan,
                upstream,
                settings,
                scope,
                receive,
                send,
                http_error,
                usage,
                report=report,
                rekey=rekey,
            )
            return
        try:
            response = await upstream.post(plan.url, plan.headers, plan.body, retries=0)
        except UpstreamHTTPError as exc:
            report(exc.status, exc.retry_after, exc.body)
            if should_fall_back(exc.status):
                continue
            await exchange.answer_http_error(plan, exc, scope, send)
            return
        except UpstreamUnavailable as exc:
            report(None, None)
            exchange.error_from_upstream(exc, plan)  # logged: the next attempt runs
            continue
        report(200, None)
        await answer(
            plan, upstream, settings, scope, receive, send, http_error, usage, connected=response
        )
        return
    assert resting is not None  # only resting keys end the loop without an answer
    raise resting


def _rekey(
    attempt: Attempt, pool: KeyPool, key: Key | None, tried: list[str], log: dict[str, object]
) -> exchange.Rekey | None:
    """For the last attempt of a pool of several keys: after a 429 (which rested `key`), the
    next resting-free key for one more try, so that one busy key is not the client's 429."""
    if key is None or len(pool) < 2:
        return None

    def rekey(plan: Plan) -> exchange.Report | None:
        other = pool.acquire(time.monotonic())
        if other is None or other is key:
            return None
        _with_key(plan, attempt, other)
        return _Reporter(attempt.provider.name, pool, other, tried, log)

    return rekey


async def answer(
    plan: Plan,
    upstream: Upstream,
    settings: Settings,
    scope: Scope,
    receive: Receive,
    send: Send,
    http_error: Callable[[ProxyError], Awaitable[None]],
    usage: UsageService | None,
    *,
    connected: H1Response | None = None,
    report: exchange.Report | None = None,
    rekey: exchange.Rekey | None = None,
) -> None:
    """`exchange.run`, counted in the usage service's open-streams gauge while it streams."""
    target = plan.target
    if usage is None or target is None or not target.stream:
        await exchange.run(
            plan,
            upstream,
            settings,
            scope,
            receive,
            send,
            http_error,
            connected=connected,
            report=report,
            rekey=rekey,
        )
        return
    usage.stream_opened(target.route, target.provider)
    try:
        await exchange.run(
            plan,
            upstream,
            settings,
            scope,
            receive,
            send,
            http_error,
            connected=connected,
            report=report,
            rekey=rekey,
        )
    finally:
        usage.stream_closed(target.route, target.provider)
