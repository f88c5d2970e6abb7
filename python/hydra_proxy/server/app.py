"""The ASGI application: the route table and the worker's lifecycle.

Every request gets an Exchange (server/pipeline/exchange.py) and the handler its method and path
name in `ROUTES`, else the 404/405 fallback; a ProxyError out of a handler is answered in
the client's protocol, and every request ends with one access-log line (and, for a model
request, one usage record). A model request runs the same pipeline whatever its entry
(`MODEL_ENTRIES`: every way in, Gemini's path-named models included; tests are
parametrised over it): the client key checked -> read and parse (the session's previous turn reused;
a big body in a thread) -> the ingress's ClientRequest (no I/O) -> the route decision ->
a named key's checks (server/checks/member_checks.py) -> each attempt in order
(server/pipeline/attempts.py) -> relay | forward | json (server/pipeline/reply.py) ->
the settlement.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from .. import __version__, tokens
from ..config import Settings
from ..config.protocols import ProtocolName
from ..config.routes import Attempt, RequestTraits, RouteDecision
from ..errors import ProxyError
from .checks import browser_guard, member_checks
from .checks.limits import (
    closes_connection,
    parse_request,
    read_json_body,
    require_model,
)
from .endpoints import gemini_api, handlers
from .ingress import anthropic, chat, gemini, responses
from .pipeline import accounting, attempts
from .pipeline.exchange import (
    Asked,
    ClientGone,
    ClientRequest,
    Exchange,
    Receive,
    Scope,
    Send,
)
from .pipeline.routing import decide_route
from .pipeline.upstream_kinds import Plan
from .transport.shutdown import refusal
from .transport.worker import Worker, keys_refresh, start_team, start_usage

log = logging.getLogger("hydra_proxy")
access_log = logging.getLogger("hydra_proxy.access")

Handler = Callable[[Exchange], Awaitable[None]]
Ingress = Callable[[Exchange, dict[str, Any], bytes], ClientRequest]


@dataclass(frozen=True)
class ModelEntry:
    """One way in for a model request: every entry runs `model_request`, and every rule that
    holds for model requests is tested over `MODEL_ENTRIES`."""

    method: str
    path: str
    """The exact path, or a pattern whose ``{model}`` the client fills (the Gemini API)."""
    protocol: ProtocolName
    read: Ingress
    example: Mapping[str, Any] = field(repr=False)
    """A minimal valid body (its model and stream set by `request`)."""
    conversation: bytes = b"messages"
    """The body's member holding the conversation (its turns are reused: previous_turn)."""
    streams: bool | None = None
    """The path says whether the reply streams (None: the body's ``stream`` says)."""

    @property
    def model_in_path(self) -> bool:
        return "{model}" in self.path

    def request(self, model: str, *, stream: bool = False) -> tuple[str, dict[str, Any]]:
        """A concrete path and body of this entry for `model` (a test's request)."""
        body = dict(self.example)
        if self.model_in_path:
            path = self.path.replace("{model}", model)
            return (path + "?alt=sse" if self.streams else path), body
        body["model"] = model
        if stream:
            body["stream"] = True
        return self.path, body


async def model_request(entry: ModelEntry, exchange: Exchange, path_model: str = "") -> None:
    """A model request of any entry: authorized, read and parsed (reusing the session's
    previous turn), read by its ingress, routed, admitted (a named key's rights, limits and
    budget), and answered by its attempts; settled when it ends (`App.http`)."""
    worker = exchange.worker
    exchange.account(entry.protocol)
    if worker.shutdown.draining:
        raise refusal()
    exchange.authenticate_client()
    settings = worker.settings
    # Its Content-Type was checked by the browser guard, as every POST's is (App.http).
    body = await read_json_body(
        exchange.scope, exchange.receive, settings.max_body_bytes, settings.body_timeout
    )
    big = len(body) >= OFFLOAD_BYTES
    if big:
        request = await asyncio.to_thread(_without_gc, _read_big, entry, exchange, body, path_model)
    else:
        request = _read(entry, exchange, body, path_model)
    kept = exchange.kept
    if kept is not None and kept.reused:
        exchange.log["messages_reused"] = kept.reused
    exchange.read_as(Asked(request.traits, request.stream))
    param = None if entry.protocol == "anthropic" else "model"
    exchange.route.decided(decide_route(worker, request.traits, param=param))
    if exchange.caller.member is not None:  # a named key: its rights, limits and budget
        await member_checks.admit(exchange, request.traits)
    if not big:
        await attempts.try_route(exchange, request)
        return
    request = await asyncio.to_thread(_without_gc, _planned, request, exchange.route.decision)
    try:
        await attempts.try_route(exchange, request)
    finally:
        # Freeing a big request's millions of objects holds the GIL as long as making them
        # did: the last references are dropped in a thread, not on the event loop.
        held: list[object] = [request, request.traits]
        stream = request.stream
        del request
        exchange.read_as(Asked(await asyncio.to_thread(_let_go, held), stream))


# A body at least this large is parsed, read by its ingress and its first attempt planned
# in a thread (CPU-bound: ~0.1-0.6 s per MB), so that the worker's event loop goes on
# answering its other requests (the GIL passes to it every few milliseconds).
OFFLOAD_BYTES = 1 << 20


_gc_pauses = 0
_gc_lock = threading.Lock()


def _without_gc(work: Callable[..., ClientRequest], *args: Any) -> ClientRequest:
    """`work` with the cyclic collector paused: a big body makes millions of objects, and
    each full collection, walking them all with the GIL held, would stall the event loop
    longer and longer (0.2 s growing past 1 s on a 30 MB body). Nothing the work makes
    is a cycle; the collector runs again when the last big body's work is done."""
    global _gc_pauses
    with _gc_lock:
        _gc_pauses += 1
        gc.disable()
    try:
        return work(*args)
    finally:
        with _gc_lock:
            _gc_pauses -= 1
            if _gc_pauses == 0:
                gc.enable()


def _let_go(held: list[Any]) -> RequestTraits:
    """The traits of `held` (a big request and its traits) without the request behind them,
    and the request's objects freed (in this thread)."""
    traits: RequestTraits = held[1]
    counted = traits.input_tokens  # the usage record may need it (server/pipeline/accounting.py)
    light = dataclasses.replace(traits, estimate=lambda: counted, bound=None)
    held.clear()
    return light


def _read(entry: ModelEntry, exchange: Exchange, body: bytes, path_model: str) -> ClientRequest:
    """The body parsed (reusing the session's previous turn) and read by the ingress."""
    settings = exchange.worker.settings
    parsed, kept = parse_request(
        body, settings.max_json_depth, exchange.worker.turns, exchange.session, entry.conversation
    )
    exchange.keep(kept)
    if entry.model_in_path:  # the path names the model, the body does not
        parsed["model"] = path_model
    return entry.read(exchange, require_model(parsed), body)


def _read_big(entry: ModelEntry, exchange: Exchange, body: bytes, path_model: str) -> ClientRequest:
    """`_read`, and the counts the request will need later (memoized by the ingress), here
    in the thread rather than on the event loop."""
    request = _read(entry, exchange, body, path_model)
    if exchange.caller.member is not None:
        _ = request.traits.input_bound  # a named key's limits reserve it
    elif entry.protocol == "anthropic":
        _ = request.traits.input_tokens  # message_start carries it
    return request


def _planned(request: ClientRequest, decision: RouteDecision | None) -> ClientRequest:
    """`request` with its first attempt's plan made now (a failure raised when the
    attempts ask for it, as it would have been)."""
    if decision is None or not decision.attempts:
        return request
    first = decision.attempts[0]
    made: list[Plan | ProxyError] = []
    try:
        made.append(request.plan(decision, first))
    except ProxyError as exc:
        made.append(exc)

    def plan(decision: RouteDecision, attempt: Attempt) -> Plan:
        if attempt is first and made:
            found = made.pop()
            if isinstance(found, ProxyError):
                raise found
            return found
        return request.plan(decision, attempt)

    return ClientRequest(request.traits, request.stream, plan)


_GEMINI_EXAMPLE = {
    "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
    "generationConfig": {"maxOutputTokens": 16},
}
MODEL_ENTRIES: tuple[ModelEntry, ...] = (
    ModelEntry(
        "POST",
        "/v1/messages",
        "anthropic",
        anthropic.read,
        {"max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]},
    ),
    ModelEntry(
        "POST",
        "/v1/chat/completions",
        "chat",
        chat.read,
        {"max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]},
    ),
    ModelEntry(
        "POST",
        "/v1/responses",
        "responses",
        responses.read,
        {"max_output_tokens": 16, "store": False, "input": "hi"},
        conversation=b"input",
    ),
    *(
        ModelEntry(
            "POST",
            f"{prefix}/{{model}}:{method}",
            "gemini",
            gemini.reader(streams),
            _GEMINI_EXAMPLE,
            conversation=b"contents",
            streams=streams,
        )
        for prefix in (gemini_api.PREFIX, gemini_api.V1_PREFIX.rstrip("/"))
        for method, streams in gemini_api.MODEL_METHODS.items()
    ),
)
"""Every model-request entry of the app."""
# Codex's older compaction form: the history in, the new history out (never streamed). It
# runs the same pipeline as /v1/responses (the same protocol, reader and checks); it is
# kept out of MODEL_ENTRIES because every request carries the proxy's own summary prompt,
# which the per-entry limit tests' token and budget figures do not allow for.
COMPACT_ENTRY = ModelEntry(
    "POST",
    "/v1/responses/compact",
    "responses",
    responses.read_compact,
    {"max_output_tokens": 16, "input": "hi"},
    conversation=b"input",
    streams=False,
)
_BY_METHOD = {
    (e.path.split("{model}")[0], e.path.rsplit(":", 1)[1]): e
    for e in MODEL_ENTRIES
    if e.model_in_path
}


# Every endpoint, by method and path (a dashboard page by its prefix); each page that GET
# reads answers HEAD too.
_PAGES: dict[str, Handler] = {
    "/health": handlers.health,
    "/": handlers.hello,
    "/api/hello": handlers.hello,
    "/v1/models": handlers.models,
    "/metrics": handlers.metrics,
    handlers.DASHBOARD: handlers.dashboard,
}
ROUTES: dict[tuple[str, str], Handler] = {
    **{(e.method, e.path): partial(model_request, e) for e in MODEL_ENTRIES if not e.model_in_path},
    (COMPACT_ENTRY.method, COMPACT_ENTRY.path): partial(model_request, COMPACT_ENTRY),
    ("POST", "/v1/messages/count_tokens"): handlers.count_tokens,
    ("POST", "/api/event_logging/batch"): handlers.event_logging,
    **{(method, path): page for path, page in _PAGES.items() for method in ("GET", "HEAD")},
    # The console signs in and out (POST, DELETE /dashboard/session).
    **{(method, handlers.DASHBOARD): handlers.dashboard for method in ("POST", "DELETE")},
}
ADMIN = "/admin/"


def handler_for(method: str, path: str) -> Handler:
    if method == "OPTIONS":  # a CORS preflight, for any path
        return handlers.preflight
    handler = ROUTES.get((method, path))
    if handler is None and gemini_api.is_gemini_path(path):  # the model is in the path
        return _gemini_handler(method, path)
    if handler is None and method in ("GET", "HEAD") and path.startswith(handlers.MODELS_PREFIX):
        return handlers.model
    if handler is None and (method, "/v1" + path) in ROUTES:
        return handlers.missing_v1
    if handler is None and path.startswith(handlers.DASHBOARD + "/"):
        handler = ROUTES.get((method, handlers.DASHBOARD))
    if handler is None and path.startswith(ADMIN):
        from ..team import admin

        handler = admin.handler_for(path)
    return handler or handlers.not_found


def _gemini_handler(method: str, path: str) -> Handler:
    """A Gemini API path: a model method of `MODEL_ENTRIES`, else the listing, a model or
    countTokens (server/endpoints/gemini_api.py)."""
    found = gemini_api.model_method(path) if method == "POST" else None
    if found is not None:
        prefix, model, action = found
        entry = _BY_METHOD.get((prefix, action))
        if entry is not None:
            return partial(model_request, entry, path_model=model)
    return gemini_api.handle


async def _first_key(worker: Worker, every: float) -> None:
    """A worker serving without keys looks for the first named key every `every` seconds
    (the keyring's refresh): once the store holds one, every request needs a key."""
    from ..team.service import store_place

    while worker.team is None:
        await asyncio.sleep(every)
        try:
            team = await asyncio.to_thread(start_team, worker)
        except Exception as exc:  # a store away: the next look may find it
            log.debug("looking for named keys failed: %s", exc)
            continue
        if team is not None:
            worker.team = team
            team.start_refresh()
            log.warning(
                "named keys found in %s: from now on every request needs a key",
                store_place(worker.settings.usage_ledger),
            )


class App:
    def __init__(self, settings: Settings) -> None:
        self.worker = Worker.create(settings)
        self._first_key: asyncio.Task[None] | None = None

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
            exchange.guard(partial(browser_guard.check, self.worker.browser, scope))
            await handler_for(scope["method"], scope["path"])(exchange)
        except ProxyError as exc:
            await exchange.fail(exc, close=closes_connection(exc))
        except ClientGone:
            pass
        finally:
            details = exchange.log
            if exchange.protocol is not None:
                details = {**details, **accounting.close(exchange, self.worker.usage)}
            held = exchange.route.held
            if held is not None and self.worker.team is not None:
                attempt = exchange.route.attempt
                await self.worker.team.settle(
                    held, attempt.model if attempt is not None else None, exchange.outcome.counts
                )
            if access_log.isEnabledFor(logging.INFO):
                access_log.info(
                    "%s %s %d %.1fms id=%s%s",
                    scope["method"],
                    scope["path"],
                    exchange.outcome.status,
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
                    elif not worker.settings.key_passthrough:
                        self._first_key = asyncio.ensure_future(_first_key(worker, keys_refresh()))
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
                if self._first_key is not None:
                    self._first_key.cancel()
                worker.http.close()
                if worker.team is not None:
                    await worker.team.close()
                if worker.cluster is not None:
                    await worker.cluster.close()
                if worker.usage is not None:  # writes every queued record
                    await asyncio.to_thread(worker.usage.close)
                await send({"type": "lifespan.shutdown.complete"})
                return
