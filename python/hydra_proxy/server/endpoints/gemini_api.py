"""The Gemini API's endpoints, all under ``/v1beta/models``: the model is part of the path
(``models/{model}:{method}``), so one handler reads the path and calls the method's.

- ``POST models/{model}:generateContent`` and ``:streamGenerateContent`` (``?alt=sse``:
  server-sent events, as every Gemini SDK asks; without it the same chunks as one JSON
  array, as Gemini answers): model requests, entries of the app's one pipeline
  (server/app.py `MODEL_ENTRIES`, `model_method` below reads their path);
- ``POST models/{model}:countTokens`` -> ``{"totalTokens"}``, the proxy's estimate of the
  request's ``contents`` (or of its ``generateContentRequest``);
- ``GET models`` and ``GET models/{model}`` (``/v1/models/{model}:{method}`` too, the
  stable version's path): every routable name (`config.models_listing`) the key may use
  as Gemini ``Model`` objects.

Errors are Gemini's (``{"error": {code, message, status}}``, Exchange.fail).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import orjson

from ...config import models_listing
from ...config.routes import request_traits
from ...errors import ProxyError
from ...tokens import estimate_input_tokens
from ..checks import member_checks
from ..checks.limits import check_content_type, check_model_name, parse_object, read_json_body
from ..ingress import gemini
from ..pipeline.exchange import Exchange
from ..pipeline.routing import decide_route

PREFIX = "/v1beta/models"
V1_PREFIX = "/v1/models/"  # the stable API version: its model methods (GET /v1/models is OpenAI's)


def is_gemini_path(path: str) -> bool:
    return path.startswith(PREFIX) or (path.startswith(V1_PREFIX) and ":" in path)


MODEL_METHODS = {"generateContent": False, "streamGenerateContent": True}
"""The model-request methods, and whether each streams."""
_METHODS = (*MODEL_METHODS, "countTokens")


def _model_method(path: str) -> tuple[str, str | None]:
    """(model, method) of a path below PREFIX (method None: a GET of the model)."""
    prefix = PREFIX if path.startswith(PREFIX) else V1_PREFIX
    rest = unquote(path[len(prefix) :].lstrip("/"))
    model, colon, method = rest.partition(":")
    if not model or "/" in model:
        raise ProxyError(404, f"no endpoint {path}", error_type="not_found_error")
    check_model_name(model)
    return model, (method if colon else None)


def model_method(path: str) -> tuple[str, str, str] | None:
    """(the path's part before the model, model, method) of a model-request path (None: any
    other Gemini path; a bad model name is a 400 or 404 here)."""
    if path.rstrip("/") == PREFIX:
        return None
    model, method = _model_method(path)
    if method not in MODEL_METHODS:
        return None
    return (PREFIX + "/" if path.startswith(PREFIX) else V1_PREFIX), model, method


async def handle(exchange: Exchange) -> None:
    path: str = exchange.scope["path"]
    method: str = exchange.scope["method"]
    if path.rstrip("/") == PREFIX:
        if method not in ("GET", "HEAD"):
            raise ProxyError(
                405, f"method {method} not allowed", error_type="invalid_request_error"
            )
        await _list(exchange)
        return
    model, action = _model_method(path)
    if action is None:
        if method not in ("GET", "HEAD"):
            raise ProxyError(
                405, f"method {method} not allowed", error_type="invalid_request_error"
            )
        await _get(exchange, model)
        return
    if method != "POST":
        raise ProxyError(405, f"method {method} not allowed", error_type="invalid_request_error")
    if action not in _METHODS:
        raise ProxyError(404, f"no method {action!r} for models", error_type="not_found_error")
    # generateContent and streamGenerateContent are the app's (MODEL_ENTRIES).
    await _count_tokens(exchange, model)


async def _body(exchange: Exchange) -> dict[str, Any]:
    settings = exchange.worker.settings
    check_content_type(exchange.scope)
    body = await read_json_body(
        exchange.scope, exchange.receive, settings.max_body_bytes, settings.body_timeout
    )
    return parse_object(body, settings.max_json_depth)


async def _count_tokens(exchange: Exchange, model: str) -> None:
    exchange.authenticate_client()
    request = await _body(exchange)
    inner = request.get("generateContentRequest")
    if isinstance(inner, dict):
        request = inner
    translation = gemini.translate(request, model, exchange.caller.signing_key, None, stream=False)
    decision = decide_route(
        exchange.worker,
        request_traits(translation.body, client="gemini", headers=exchange.scope["headers"]),
    )
    await member_checks.admit_count(exchange, decision)
    count = estimate_input_tokens(translation.body)
    await exchange.respond(200, orjson.dumps({"totalTokens": count}))


def _model(info: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": f"models/{info.id}",
        "displayName": info.id,
        "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
    }
    if info.context_window is not None:
        out["inputTokenLimit"] = info.context_window
    if info.max_output is not None:
        out["outputTokenLimit"] = info.max_output
    return out


async def _list(exchange: Exchange) -> None:
    exchange.authenticate_client()
    listing = member_checks.usable(exchange, models_listing(exchange.worker.settings))
    await exchange.respond(200, orjson.dumps({"models": [_model(m) for m in listing]}))


async def _get(exchange: Exchange, model: str) -> None:
    exchange.authenticate_client()
    for info in member_checks.usable(exchange, models_listing(exchange.worker.settings)):
        if info.id == model:
            await exchange.respond(200, orjson.dumps(_model(info)))
            return
    raise ProxyError(404, f"models/{model} is not found", error_type="not_found_error")
