"""The ASGI application: the route table and the worker's lifecycle.

Every request gets an Exchange (server/exchange.py) and the handler its method and path
name in `ROUTES`, else the 404/405 fallback; a ProxyError out of a handler is answered in
the client's protocol, and every request ends with one access-log line (and, for a model
request, one usage record). A model request runs the same pipeline whatever its protocol:
read -> the ingress's ClientRequest (no I/O) -> the route decision -> each attempt in order
(server/attempts.py) -> relay | forward | json (server/reply.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from .. import __version__, tokens
from ..config import Settings
from ..config.routes import ClientProtocol
from ..errors import ProxyError
from . import accounting, attempts, browser_guard, endpoints, gemini_api
from .exchange import (
    ClientGone,
    ClientRequest,
    Exchange,
    Receive,
    Scope,
    Send,
)
from .ingress import chat, messages, responses
from .limits import (
    check_content_type,
    closes_connection,
    parse_request,
    read_json_body,
    require_model,
)
from .shutdown import refusal
from .worker import Worker, start_team, start_usage

log = logging.getLogger("hydra_proxy")
access_log = logging.getLogger("hydra_proxy.access")

Handler = Callable[[Exchange], Awaitable[None]]
Ingress = Callable[[Exchange, dict[str, Any], bytes], ClientRequest]


async def model_request(protocol: ClientProtocol, ingress: Ingress, exchange: Exchange) -> None:
    """A model request of any client protocol: read, routed, and answered by its attempts."""
    worker = exchange.worker
    exchange.account(protocol)
    if worker.shutdown.draining:
        raise refusal()
    exchange.authorize()
    settings = worker.settings
    check_content_type(exchange.scope)
    body = await read_json_body(
        exchange.scope, exchange.receive, settings.max_body_bytes, settings.body_timeout
    )
    parsed, exchange.turn = parse_request(
        body, settings.max_json_depth, worker.turns, exchange.session
    )
    if exchange.turn is not None and exchange.turn.reused:
        exchange.log["messages_reused"] = exchange.turn.reused
    request = ingress(exchange, require_model(parsed), body)
    param = None if protocol == "anthropic" else "model"
    exchange.decision = exchange.decide(request.traits, param=param)
    exchange.stream = request.stream
    if exchange.member is not None:  # a named key: its rights, limits and budget
        await admit(exchange, request)
    await attempts.answer(exchange, request)


async def admit(exchange: Exchange, request: ClientRequest) -> None:
    """A named key's checks after routing (hydra_proxy.team.checks); what they hold is
    given back when the request ends (`App.http`)."""
    team, member, decision = exchange.worker.team, exchange.member, exchange.decision
    assert team is not None and member is not None and decision is not None
    checks = team.checks
    exchange.log["key"] = member.key.name
    exchange.log["model"] = decision.requested_model
    exchange.decision = decision = checks.rights(member.key, decision)
    exchange.held = await checks.admit(
        member.key, member.team, decision, request.traits, exchange.request_id, time.time()
    )


# Every endpoint, by method and path (a dashboard page by its prefix); each page that GET
# reads answers HEAD too.
_PAGES: dict[str, Handler] = {
    "/health": endpoints.health,
    "/": endpoints.hello,
    "/api/hello": endpoints.hello,
    "/v1/models": endpoints.models,
    "/metrics": endpoints.metrics,
    endpoints.DASHBOARD: endpoints.dashboard,
}
ROUTES: dict[tuple[str, str], Handler] = {
    ("POST", "/v1/messages"): partial(model_request, "anthropic", messages.read),
    ("POST", "/v1/chat/completions"): partial(model_request, "chat", chat.read),
    ("POST", "/v1/responses"): partial(model_request, "responses", responses.read),
    ("POST", "/v1/responses/compact"): partial(model_request, "responses", responses.read_compact),
    ("POST", "/v1/messages/count_tokens"): endpoints.count_tokens,
    ("POST", "/api/event_logging/batch"): endpoints.event_logging,
    **{(method, path): page for path, page in _PAGES.items() for method in ("GET", "HEAD")},
}
ADMIN = "/admin/"


def handler_for(method: str, path: str) -> Handler:
    if method == "OPTIONS":  # a CORS preflight, for any path
        return endpoints.preflight
    handler = ROUTES.get((method, path))
    if handler is None and gemini_api.is_gemini_path(path):  # the model is in the path
        return gemini_api.handle
    if handler is None and method in ("GET", "HEAD") and path.startswith(endpoints.MODELS_PREFIX):
        return endpoints.model
    if handler is None and (method, "/v1" + path) in ROUTES:
        return endpoints.missing_v1
    if handler is None and path.startswith(endpoints.DASHBOARD + "/"):
        handler = ROUTES.get((method, endpoints.DASHBOARD))
    if handler is None and path.startswith(ADMIN):
        from ..team import admin

        handler = admin.handler_for(path)
    return handler or endpoints.not_found


class App:
    def __init__(self, settings: Settings) -> None:
        self.worker = Worker.create(settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http":
            await self.http(scope, receive, send)
        elif kind == "websocket":
            await self.websocket(scope, receive, send)
        elif kind == "lifespan":
            await self.lifespan(receive, send)

    async def http(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer through the endpoint's handler and write one access-log line."""
        exchange = Exchange(self.worker, scope, receive, send)
        try:
            # Host and Origin first (a web page must not drive the proxy), for every endpoint.
            exchange.send = browser_guard.check(self.worker.browser, scope, send)
            await handler_for(scope["method"], scope["path"])(exchange)
        except ProxyError as exc:
            await exchange.fail(exc, close=closes_connection(exc))
        except ClientGone:
            pass
        finally:
            details = exchange.log
            if exchange.protocol is not None:
                details = {**details, **accounting.close(exchange, self.worker.usage)}
            held = exchange.held
            if held is not None and self.worker.team is not None:
                attempt = exchange.attempt
                await self.worker.team.settle(
                    held, attempt.model if attempt is not None else None, exchange.counts
                )
            if access_log.isEnabledFor(logging.INFO):
                access_log.info(
                    "%s %s %d %.1fms id=%s%s",
                    scope["method"],
                    scope["path"],
                    exchange.status,
                    (time.monotonic() - exchange.started) * 1000,
                    exchange.request_id,
                    "".join(f" {k}={v}" for k, v in details.items()) if details else "",
                )

    async def websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A WebSocket upgrade (Codex tries its Responses transport first): refused with 426
        Upgrade Required, which clients take as "use HTTP" at once, where a bare refusal
        makes them retry for seconds; logged like any request."""
        started = time.monotonic()
        message = await receive()
        if message["type"] != "websocket.connect":
            return
        body = (
            b'{"error":{"message":"this proxy serves the Responses API over HTTP (server-sent '
            b'events), not WebSocket","type":"invalid_request_error","param":null,'
            b'"code":"upgrade_required"}}'
        )
        if "websocket.http.response" in scope.get("extensions", {}):
            headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
            await send({"type": "websocket.http.response.start", "status": 426, "headers": headers})
            await send({"type": "websocket.http.response.body", "body": body})
            status = 426
        else:  # the server cannot answer with a status: it refuses the upgrade (403)
            await send({"type": "websocket.close", "code": 1008})
            status = 403
        access_log.info(
            "GET %s %d %.1fms websocket=refused",
            scope["path"],
            status,
            (time.monotonic() - started) * 1000,
        )

    async def lifespan(self, receive: Receive, send: Send) -> None:
        worker = self.worker
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                worker.shutdown.install(asyncio.get_running_loop())
                try:
                    # The tokenizer loads in ~0.4 s: not on the event loop of a first request.
                    await asyncio.to_thread(tokens.warm_up)
                    worker.usage = await asyncio.to_thread(start_usage, worker.settings)
                    if worker.cluster is not None:
                        usage = worker.usage
                        await worker.cluster.start(usage.metrics if usage is not None else None)
                    worker.team = await asyncio.to_thread(start_team, worker)
                    if worker.team is not None:
                        worker.team.start_refresh()
                except Exception as exc:
                    # Said as a failed startup: an exception out of the lifespan would make
                    # granian serve on "without lifespan", this worker counting nothing.
                    log.exception("worker startup failed")
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                log.info(
                    "hydra-proxy %s worker ready (transducers: %s)", __version__, worker.impl.name
                )
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                worker.http.close()
                if worker.team is not None:
                    await worker.team.close()
                if worker.cluster is not None:
                    await worker.cluster.close()
                if worker.usage is not None:  # writes every queued record
                    await asyncio.to_thread(worker.usage.close)
                await send({"type": "lifespan.shutdown.complete"})
                return
