"""The endpoints that are not model requests, one handler each (the route table is in
server/app.py): health and hello probes, the model listing, token counting, the usage
page and metrics, Claude Code's telemetry, and the 404/405 fallback."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import parse_qs

import orjson

from ...config import ModelInfo, models_listing, not_found_message, request_traits
from ...errors import ProxyError, invalid_request
from ...tokens import estimate_input_tokens
from ...usage.dashboard import PREFIX
from ..checks import member_checks
from ..checks.browser_guard import preflight_answer
from ..checks.limits import (
    check_content_type,
    parse_object,
    read_json_body,
    read_telemetry,
    require_model,
)
from ..pipeline.exchange import Exchange
from ..pipeline.routing import decide_route
from . import console, model_listing

DASHBOARD = PREFIX
T = TypeVar("T")
MODELS_PREFIX = "/v1/models/"


async def read_json(exchange: Exchange) -> bytes:
    """The request body, checked against the limits (server/checks/limits.py)."""
    settings = exchange.worker.settings
    check_content_type(exchange.scope)
    return await read_json_body(
        exchange.scope, exchange.receive, settings.max_body_bytes, settings.body_timeout
    )


async def health(exchange: Exchange) -> None:
    # Draining (SIGTERM): a load balancer's check sees 503 and sends new requests elsewhere
    # while this worker's streams finish.
    if exchange.worker.shutdown.draining:
        await exchange.respond(503, b'{"status":"draining"}')
        return
    await exchange.respond(200, b'{"status":"ok"}')


async def hello(exchange: Exchange) -> None:
    # Claude Code probes HEAD /api/hello for connectivity.
    body = b"" if exchange.scope["method"] == "HEAD" else b'{"name":"hydra-proxy"}'
    await exchange.respond(200, body)


async def event_logging(exchange: Exchange) -> None:
    """Claude Code's telemetry: accepted and dropped (read within its own bound); with
    proxy keys, only from a client that holds one."""
    if exchange.worker.proxy_keys or exchange.worker.team is not None:
        exchange.authenticate_client()
    await read_telemetry(exchange.scope, exchange.receive, exchange.worker.settings.body_timeout)
    await exchange.respond(200, b"{}")


async def count_tokens(exchange: Exchange) -> None:
    """POST /v1/messages/count_tokens: the proxy's estimate for a routable request."""
    exchange.authenticate_client()
    body = await read_json(exchange)
    request = require_model(parse_object(body, exchange.worker.settings.max_json_depth))
    traits = request_traits(request, headers=exchange.scope["headers"])
    decision = decide_route(exchange.worker, traits)
    await member_checks.admit_count(exchange, decision)
    if not isinstance(request.get("messages"), list):
        raise invalid_request("messages: a list of messages is required", "messages")
    count = estimate_input_tokens(request)
    await exchange.respond(200, orjson.dumps({"input_tokens": count}))


def _listing(exchange: Exchange) -> list[ModelInfo]:
    """Every listed name the request's key may use (member_checks.usable)."""
    return member_checks.usable(exchange, models_listing(exchange.worker.settings))


async def models(exchange: Exchange) -> None:
    """Every routable name (server/endpoints/model_listing.py) in the client's shape:
    Codex's catalog when the request has ``client_version``, Anthropic's when it has
    anthropic-version, else OpenAI's."""
    exchange.authenticate_client()
    listing = _listing(exchange)
    query = parse_qs(exchange.scope.get("query_string", b"").decode("latin-1"))
    if "client_version" in query:
        exchange.log["catalog"] = "codex"
        await exchange.respond(200, orjson.dumps(model_listing.codex_catalog(listing)))
        return
    await _respond_listed(
        exchange, model_listing.anthropic_listing, model_listing.openai_listing, listing
    )


async def model(exchange: Exchange) -> None:
    """``GET /v1/models/{id}``: one listed name, in the client's shape (a 404 naming what
    is listed for any other)."""
    exchange.authenticate_client()
    name = exchange.scope["path"][len(MODELS_PREFIX) :]
    found = next((m for m in _listing(exchange) if m.id == name), None)
    if found is None:
        message = not_found_message(exchange.worker.settings, name).removeprefix("model: ")
        raise ProxyError(
            404, message, error_type="not_found_error", param="model", code="model_not_found"
        )
    await _respond_listed(
        exchange, model_listing.anthropic_entry, model_listing.openai_entry, found
    )


async def _respond_listed(
    exchange: Exchange,
    anthropic: Callable[[T], dict[str, Any]],
    openai: Callable[[T, int], dict[str, Any]],
    listed: T,
) -> None:
    """What is listed, in the client's shape: Anthropic's when it sends anthropic-version,
    else OpenAI's (its ``created``: when the worker started)."""
    if exchange.header(b"anthropic-version") is not None:
        body = anthropic(listed)
    else:
        body = openai(listed, int(exchange.worker.started))
    await exchange.respond(200, orjson.dumps(body))


async def metrics(exchange: Exchange) -> None:
    """The metrics; with named keys they name every key, so a member's key cannot read
    them (the admin key and a HYDRA_PROXY_KEYS key can)."""
    team = exchange.worker.team
    if team is None or not team.is_admin(exchange.presented_key()):
        exchange.authenticate_client()
        if exchange.caller.member is not None:
            raise ProxyError(
                403,
                "the metrics show every key: they need the admin key",
                error_type="permission_error",
            )
    usage = exchange.worker.usage
    if usage is None:
        raise ProxyError(404, "usage accounting is off", error_type="not_found_error")
    status, content_type, body = await asyncio.to_thread(usage.metrics_response)
    await exchange.respond(status, body, content_type.encode())


async def dashboard(exchange: Exchange) -> None:
    """The console (server/endpoints/console.py): its page, sign-in and data."""
    await console.handle(exchange)


async def preflight(exchange: Exchange) -> None:
    """OPTIONS: a CORS preflight from a listed origin is answered (a 403 for any other
    origin); any other OPTIONS request is a 405."""
    answer = preflight_answer(exchange.worker.browser, exchange.scope["headers"])
    if answer is None:
        await not_found(exchange)
        return
    if isinstance(answer, ProxyError):
        raise answer
    status, headers = answer
    await exchange.send(exchange.start(status, headers))
    await exchange.send({"type": "http.response.body", "body": b""})


async def not_found(exchange: Exchange) -> None:
    method: str = exchange.scope["method"]
    if method not in ("GET", "HEAD", "POST"):
        raise ProxyError(405, f"method {method} not allowed", error_type="invalid_request_error")
    path: str = exchange.scope["path"]
    raise ProxyError(404, f"no endpoint {method} {path}", error_type="not_found_error")


async def missing_v1(exchange: Exchange) -> None:
    """A path that is an endpoint's without its ``/v1`` (a base URL set without it)."""
    method: str = exchange.scope["method"]
    path: str = exchange.scope["path"]
    raise ProxyError(
        404,
        f"no endpoint {method} {path}: did you mean /v1{path}? Add /v1 to the base URL "
        "(e.g. http://127.0.0.1:3456/v1)",
        error_type="not_found_error",
    )
