"""The ASGI application: routing, authentication, errors in the client's protocol.

Every request runs the same pipeline: parse -> decide the route (the ingress modules, no
I/O) -> each attempt in order (the attempts module: fallback chains, key pools) -> send ->
relay | forward | json (the exchange module).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import time
from collections.abc import Callable
from typing import Any

import orjson

from .. import __version__, ids, tokens
from ..config import Settings, key_pools, models_listing, request_traits
from ..errors import ProxyError, invalid_request
from ..signing_key import load_signing_key
from ..tokens import estimate_input_tokens
from ..transducers import select
from ..usage.dashboard import AUTHENTICATE, basic_auth_key
from ..usage.record import Protocol
from ..usage.service import UsageService
from . import attempts
from .accounting import SCOPE_KEY, Account, account_of
from .asgi import (
    JSON,
    BodyTooLarge,
    ClientGone,
    Receive,
    Scope,
    Send,
    header,
    read_body,
    respond,
)
from .exchange import UpstreamUnreachable
from .ingress import Context, Routed, chat, decide, messages, parse_request, responses
from .plan import Plan
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
        self.pools = key_pools(settings.providers)
        self.impl = select(settings.implementation)
        self.signing_key = load_signing_key(settings.signing_key_file)
        self.context = Context(settings, self.impl, self.signing_key)
        self.proxy_keys = tuple(
            k.strip().encode()
            for k in os.environ.get("HYDRA_PROXY_KEYS", "").split(",")
            if k.strip()
        )
        self.started = time.time()
        self.usage: UsageService | None = None

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
                # The tokenizer loads in ~0.4 s: not on the event loop of a first request.
                await asyncio.to_thread(tokens.warm_up)
                self.usage = await asyncio.to_thread(start_usage, self.settings)
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
            if method == "POST":
                ingress = _INGRESS.get(path)
                if ingress is not None:
                    key = self.authorize(scope)
                    account = account_of(scope)
                    if account is not None:
                        account.key = key
                    body = await read_body(receive, self.settings.max_body_bytes)
                    await self.exchange(ingress(self.context, scope, body), scope, receive, send)
                elif path == "/v1/messages/count_tokens":
                    self.authorize(scope)
                    body = await read_body(receive, self.settings.max_body_bytes)
                    await self.count_tokens(scope, send, body)
                elif path == "/api/event_logging/batch":
                    # Claude Code telemetry: accepted and dropped.
                    await read_body(receive, self.settings.max_body_bytes)
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
            else:
                raise ProxyError(
                    405, f"method {method} not allowed", error_type="invalid_request_error"
                )
        except ProxyError as exc:
            await self.error(scope, send, exc)
        except BodyTooLarge:
            await self.error(
                scope,
                send,
                ProxyError(
                    413,
                    f"request body exceeds {self.settings.max_body_bytes} bytes",
                    error_type="request_too_large",
                ),
            )
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
        )

    def authorize(self, scope: Scope) -> bytes | None:
        """With HYDRA_PROXY_KEYS set, a client must present one of them (returned)."""
        if not self.proxy_keys:
            return None
        presented = header(scope, b"x-api-key")
        if presented is None:
            bearer = header(scope, b"authorization") or b""
            presented = bearer[7:] if bearer[:7].lower() == b"bearer " else None
        if presented is not None and self.is_proxy_key(presented):
            return presented
        raise ProxyError(401, "invalid or missing proxy API key", error_type="authentication_error")

    def is_proxy_key(self, presented: bytes) -> bool:
        # Every key compared, in constant time each.
        return any([hmac.compare_digest(presented, k) for k in self.proxy_keys])

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
        if _anthropic_client(scope):
            body = exc.anthropic_body(scope.get("hydra.request_id"))
        else:
            body = exc.openai_body()
        await respond(scope, send, exc.status, body, JSON, headers)

    async def count_tokens(self, scope: Scope, send: Send, body: bytes) -> None:
        request = parse_request(body)
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
