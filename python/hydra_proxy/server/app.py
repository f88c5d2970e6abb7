"""The ASGI application: routing, authentication, errors in the client's protocol.

Every request runs the same pipeline: parse -> decide the route (the ingress modules, no
I/O) -> each attempt in order (the attempts module: fallback chains, key pools) -> send ->
relay | forward | json (the exchange module).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import logging
import os
import time
from collections.abc import Callable
from typing import Any

import orjson

from .. import __version__, ids, tokens
from ..config import Settings, client_keys, key_pools, models_listing, request_traits
from ..errors import ProxyError, invalid_request
from ..signing_key import for_client, load_signing_key
from ..tokens import estimate_input_tokens
from ..transducers import select
from ..usage.dashboard import AUTHENTICATE, basic_auth_key
from ..usage.record import Protocol
from ..usage.service import UsageService
from . import attempts, browser_guard
from .accounting import SCOPE_KEY, Account, account_of
from .admission import Admission, limits_of
from .asgi import JSON, ClientGone, Receive, Scope, Send, header, respond
from .dialects import DIALECTS
from .exchange import UpstreamUnreachable
from .ingress import Context, Routed, chat, decide, messages, parse_request, responses
from .limits import check_content_type, closes_connection, read_json_body, read_telemetry
from .plan import Plan
from .secrets import SCOPE_KEY as REDACT_KEY
from .secrets import provider_secrets, redactor
from .shutdown import SCOPE_KEY as SHUTDOWN_KEY
from .shutdown import Shutdown, refusal
from .upstream import Upstream

log = logging.getLogger("hydra_proxy")
access_log = logging.getLogger("hydra_proxy.access")

# The client endpoints that take a model request, and the ingress that plans each.
_INGRESS: dict[str, Callable[[Context, Scope, bytes], Routed | Plan]] = {
    "/v1/messages": messages.plan,
    "/v1/chat/completions": chat.plan,
    "/v1/responses": responses.plan,
}
# The client protocol of each, as usage records name it.
_PROTOCOL: dict[str, Protocol] = {
    "/v1/messages": "anthropic",
    "/v1/chat/completions": "chat",
    "/v1/responses": "responses",
}


def _anthropic_client(scope: Scope) -> bool:
    path: str = scope["path"]
    return path.startswith("/v1/messages") or header(scope, b"anthropic-version") is not None


class App:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.upstream = Upstream(settings)
        # Key passthrough: each request carries its own provider key, so no pools.
        self.pools = {} if settings.key_passthrough else key_pools(settings.providers)
        self.impl = select(settings.implementation)
        self.signing_key = load_signing_key(settings.signing_key_file)
        self.context = Context(settings, self.impl, self.signing_key)
        self.proxy_keys = client_keys(os.environ)  # checked at start: no empty entries
        self.browser = browser_guard.Policy.for_settings(
            settings, client_keys=bool(self.proxy_keys) or settings.key_passthrough
        )
        self.started = time.time()
        self.usage: UsageService | None = None
        admission = Admission(limits_of(settings))
        self.admission = admission if admission.active else None
        self.shutdown = Shutdown(settings.shutdown_grace)
        self.redact = redactor(provider_secrets(settings.providers.values()))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self.http(scope, receive, send)
        elif kind == "lifespan":
            await self.lifespan(receive, send)

    async def lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                self.shutdown.install(asyncio.get_running_loop())
                try:
                    # The tokenizer loads in ~0.4 s: not on the event loop of a first request.
                    await asyncio.to_thread(tokens.warm_up)
                    self.usage = await asyncio.to_thread(start_usage, self.settings)
                except Exception as exc:
                    # Said as a failed startup: an exception out of the lifespan would make
                    # granian serve on "without lifespan", this worker counting nothing.
                    log.exception("worker startup failed")
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                log.info(
                    "hydra-proxy %s worker ready (transducers: %s)", __version__, self.impl.name
                )
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                self.upstream.close()
                if self.usage is not None:  # writes every queued record
                    await asyncio.to_thread(self.usage.close)
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Route the request (its response is tagged with a request id where it starts, see
        asgi.start) and write one access-log line."""
        request_id = ids.request_id()
        started = time.monotonic()
        scope["hydra.request_id"] = request_id
        scope[SHUTDOWN_KEY] = self.shutdown
        scope[REDACT_KEY] = self.redact
        protocol = _PROTOCOL.get(scope["path"]) if scope["method"] == "POST" else None
        account = None
        if protocol is not None:
            account = scope[SCOPE_KEY] = Account(protocol)
            send = account.watch(send)
        try:
            await self.route(scope, receive, send)
        finally:
            details = scope.get("hydra.log")
            if account is not None:
                details = {
                    **(details or {}),
                    **account.close(self.usage, scope.get("hydra.status", 0), request_id),
                }
            if access_log.isEnabledFor(logging.INFO):
                access_log.info(
                    "%s %s %d %.1fms id=%s%s",
                    scope["method"],
                    scope["path"],
                    scope.get("hydra.status", 0),
                    (time.monotonic() - started) * 1000,
                    request_id,
                    "".join(f" {k}={v}" for k, v in details.items()) if details else "",
                )

    async def route(self, scope: Scope, receive: Receive, send: Send) -> None:
        method: str = scope["method"]
        path: str = scope["path"]
        try:
            send = browser_guard.check(self.browser, scope, send)  # Host, Origin, CORS
            if method == "POST":
                ingress = _INGRESS.get(path)
                if ingress is not None and self.shutdown.draining:
                    raise refusal()
                if ingress is not None:
                    key = self.authorize(scope)
                    account = account_of(scope)
                    if account is not None and not self.settings.key_passthrough:
                        account.key = key  # a proxy key (its id is recorded, never itself)
                    body = await self.read_json(scope, receive)
                    routed = ingress(self.context_for(key), scope, body)
                    if self.settings.key_passthrough:
                        assert key is not None
                        routed = with_client_key(routed, key)
                    await self.exchange(routed, scope, receive, send)
                elif path == "/v1/messages/count_tokens":
                    self.authorize(scope)
                    body = await self.read_json(scope, receive)
                    await self.count_tokens(scope, send, body)
                elif path == "/api/event_logging/batch":
                    # Claude Code telemetry: accepted and dropped (read within its bound).
                    if self.proxy_keys:
                        self.authorize(scope)
                    await read_telemetry(scope, receive, self.settings.body_timeout)
                    await respond(scope, send, 200, b"{}")
                else:
                    raise ProxyError(404, f"no endpoint POST {path}", error_type="not_found_error")
            elif method in ("GET", "HEAD"):
                if path == "/health":
                    await respond(scope, send, 200, b'{"status":"ok"}')
                elif path in ("/", "/api/hello"):
                    # Claude Code probes HEAD /api/hello for connectivity.
                    body = b"" if method == "HEAD" else b'{"name":"hydra-proxy"}'
                    await respond(scope, send, 200, body)
                elif path == "/v1/models":
                    self.authorize(scope)
                    await respond(scope, send, 200, self.models(scope))
                elif path == "/metrics":
                    self.authorize(scope)
                    await self.metrics(scope, send)
                elif path == "/dashboard" or path.startswith("/dashboard/"):
                    await self.dashboard(scope, send)
                else:
                    raise ProxyError(
                        404, f"no endpoint {method} {path}", error_type="not_found_error"
                    )
            elif method == "OPTIONS" and await browser_guard.preflight(self.browser, scope, send):
                return
            else:
                raise ProxyError(
                    405, f"method {method} not allowed", error_type="invalid_request_error"
                )
        except ProxyError as exc:
            await self.error(scope, send, exc)
        except ClientGone:
            return

    async def exchange(
        self, routed: Routed | Plan, scope: Scope, receive: Receive, send: Send
    ) -> None:
        async def http_error(exc: ProxyError) -> None:
            await self.error(scope, send, exc)

        if isinstance(routed, Plan):  # an ingress that plans one upstream itself (resolve)
            account = account_of(scope)
            if account is not None:
                account.target = routed.target
            if routed.log:
                scope["hydra.log"] = routed.log
            await attempts.answer(
                routed, self.upstream, self.settings, scope, receive, send, http_error, self.usage
            )
            return
        await attempts.run(
            routed,
            self.upstream,
            self.pools,
            self.settings,
            scope,
            receive,
            send,
            http_error,
            self.usage,
            self.admission,
        )

    async def read_json(self, scope: Scope, receive: Receive) -> bytes:
        """The request body, checked against the limits (server/limits.py)."""
        check_content_type(scope)
        return await read_json_body(
            scope, receive, self.settings.max_body_bytes, self.settings.body_timeout
        )

    def context_for(self, key: bytes | None) -> Context:
        """With client keys, the context whose signing key is that client's own."""
        if not self.proxy_keys or key is None:
            return self.context
        return dataclasses.replace(self.context, signing_key=for_client(self.signing_key, key))

    def authorize(self, scope: Scope) -> bytes | None:
        """With HYDRA_PROXY_KEYS set, a client must present one of them (returned); in
        key-passthrough mode it must present a key (returned: it goes upstream)."""
        presented = presented_key(scope)
        if self.settings.key_passthrough:
            if presented:
                return presented
            raise ProxyError(
                401,
                "key passthrough is on: send your provider API key in x-api-key or "
                "Authorization: Bearer",
                error_type="authentication_error",
            )
        if not self.proxy_keys:
            return None
        if presented is not None and self.is_proxy_key(presented):
            return presented
        raise ProxyError(401, "invalid or missing proxy API key", error_type="authentication_error")

    def is_proxy_key(self, presented: bytes) -> bool:
        """Whether `presented` is a proxy key: compared with every key in constant time,
        with no early exit (the time does not say which key, or how much of one, matched)."""
        found = False
        for key in self.proxy_keys:
            found |= hmac.compare_digest(presented, key)
        return found

    async def metrics(self, scope: Scope, send: Send) -> None:
        if self.usage is None:
            raise ProxyError(404, "usage accounting is off", error_type="not_found_error")
        status, content_type, body = await asyncio.to_thread(self.usage.metrics_response)
        await respond(scope, send, status, body, content_type.encode())

    async def dashboard(self, scope: Scope, send: Send) -> None:
        """The usage page, behind the proxy keys (HTTP Basic: the key is the password, so
        a browser asks for it)."""
        if self.proxy_keys:
            presented = basic_auth_key(header(scope, b"authorization"))
            if presented is None or not self.is_proxy_key(presented):
                await respond(
                    scope,
                    send,
                    401,
                    b"the usage page needs a proxy key as the password\n",
                    b"text/plain; charset=utf-8",
                    [AUTHENTICATE],
                )
                return
        if self.usage is None:
            raise ProxyError(404, "usage accounting is off", error_type="not_found_error")
        query = scope.get("query_string", b"").decode("latin-1")
        status, content_type, body = await asyncio.to_thread(
            self.usage.dashboard, scope["path"], query
        )
        await respond(scope, send, status, body, content_type.encode())

    async def error(self, scope: Scope, send: Send, exc: ProxyError) -> None:
        account = account_of(scope)
        if account is not None:
            account.error_type = exc.error_type
        headers = []
        if exc.retry_after:
            headers.append((b"retry-after", exc.retry_after.encode()))
        if isinstance(exc, UpstreamUnreachable):
            headers.append((b"x-should-retry", b"false"))
        if closes_connection(exc) or self.shutdown.draining:
            # The body was left unread, or the worker stops: this connection is done.
            headers.append((b"connection", b"close"))
        if _anthropic_client(scope):
            status, body = exc.status, exc.anthropic_body(scope.get("hydra.request_id"))
        else:
            status, body = exc.openai_status, exc.openai_body()
        await respond(scope, send, status, body, JSON, headers)

    async def count_tokens(self, scope: Scope, send: Send, body: bytes) -> None:
        request = parse_request(body, self.settings.max_json_depth)
        decide(self.settings, request_traits(request, headers=scope["headers"]))
        if not isinstance(request.get("messages"), list):
            raise invalid_request("messages: a list of messages is required", "messages")
        count = estimate_input_tokens(request)
        await respond(scope, send, 200, orjson.dumps({"input_tokens": count}))

    def models(self, scope: Scope) -> bytes:
        """Every routable name (models_listing), in the client's shape: Anthropic's when
        the request has anthropic-version, else OpenAI's; context window and max output
        where known."""
        listing = models_listing(self.settings)
        if header(scope, b"anthropic-version") is not None:
            data: list[dict[str, Any]] = []
            for m in listing:
                item: dict[str, Any] = {
                    "type": "model",
                    "id": m.id,
                    "display_name": m.id,
                    "created_at": "1970-01-01T00:00:00Z",
                }
                if m.context_window is not None:
                    item["max_input_tokens"] = m.context_window
                if m.max_output is not None:
                    item["max_tokens"] = m.max_output
                data.append(item)
            return orjson.dumps(
                {
                    "data": data,
                    "has_more": False,
                    "first_id": listing[0].id if listing else None,
                    "last_id": listing[-1].id if listing else None,
                }
            )
        created = int(self.started)
        rows: list[dict[str, Any]] = []
        for m in listing:
            row: dict[str, Any] = {
                "id": m.id,
                "object": "model",
                "created": created,
                "owned_by": m.provider,
            }
            if m.context_window is not None:
                row["context_window"] = m.context_window
            if m.max_output is not None:
                row["max_output_tokens"] = m.max_output
            rows.append(row)
        return orjson.dumps({"object": "list", "data": rows})


def presented_key(scope: Scope) -> bytes | None:
    """The key a client sent: x-api-key, else an Authorization bearer token."""
    presented = header(scope, b"x-api-key")
    if presented is None:
        bearer = header(scope, b"authorization") or b""
        presented = bearer[7:].strip() if bearer[:7].lower() == b"bearer " else None
    return presented


def with_client_key(routed: Routed | Plan, key: bytes) -> Routed | Plan:
    """Key passthrough: every attempt authenticated with the client's own key, in the
    header its upstream's protocol takes (the provider's key, if any, is replaced)."""
    value = key.decode("latin-1")

    def authenticate(plan: Plan, kind: str | None) -> Plan:
        for dialect in DIALECTS.values():  # whichever header the provider's key went in
            plan.headers.pop(dialect.auth_header, None)
        if kind in DIALECTS:
            dialect = DIALECTS[kind]
            plan.headers[dialect.auth_header] = dialect.auth_prefix + value
        return plan

    if isinstance(routed, Plan):
        return authenticate(routed, routed.target.upstream if routed.target else None)
    build = routed.build
    return dataclasses.replace(
        routed, build=lambda attempt: authenticate(build(attempt), attempt.provider.kind)
    )


def start_usage(settings: Settings) -> UsageService | None:
    """The worker's usage accounting: the ledger, metrics, prices, traces (None: all off)."""
    if not (settings.usage_ledger or settings.usage_metrics or settings.usage_tracing):
        return None
    routes = settings.routes
    return UsageService.start(
        ledger_url=settings.usage_ledger,
        pricing_overrides=settings.pricing,
        metrics=settings.usage_metrics,
        tracing=settings.usage_tracing,
        known_models=[m for r in routes for m in (r.model, r.match) if m and "*" not in m]
        + ([settings.target_model] if settings.target_model else []),
        known_routes=[r.match for r in routes],
        known_providers=list(settings.providers),
    )
