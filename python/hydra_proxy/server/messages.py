"""POST /v1/messages: Anthropic Messages clients, served by a Chat upstream or passed through."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import ClientResponse

from .. import ids
from ..errors import (
    ProxyError,
    anthropic_error_type,
    invalid_request,
    status_for_anthropic_type,
    upstream_error,
)
from ..messages_via_chat.request import ChatTarget, chat_request_from_messages
from ..messages_via_chat.response import message_from_chat_completion
from ..signature import is_proxy_signature
from ..tokens import estimate_input_tokens
from .asgi import JSON, Receive, Scope, Send, header, respond
from .streaming import forward
from .upstream import UpstreamHTTPError, UpstreamUnavailable

if TYPE_CHECKING:
    from ..config import Provider, Route
    from .app import App

log = logging.getLogger("hydra_proxy.messages")

# Anthropic headers forwarded to an Anthropic upstream (never to a Chat upstream).
_ANTHROPIC_FORWARD = (b"anthropic-version", b"anthropic-beta")


def parse_request(body: bytes) -> dict[str, Any]:
    try:
        request = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise invalid_request(f"request body is not valid JSON: {exc}") from None
    if not isinstance(request, dict):
        raise invalid_request("request body must be a JSON object")
    model = request.get("model")
    if not isinstance(model, str) or not model:
        raise invalid_request("model: a model name (string) is required", "model")
    return request


def error_from_upstream(exc: UpstreamHTTPError | UpstreamUnavailable) -> ProxyError:
    """An upstream failure before the first byte, as the error the client should see."""
    if isinstance(exc, UpstreamUnavailable):
        if exc.timeout:
            return ProxyError(504, str(exc), error_type="timeout_error")
        return ProxyError(529, str(exc), error_type="overloaded_error")
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


async def read_json(response: ClientResponse) -> Any:
    """The body of a non-streamed upstream reply, parsed (a 502 when it is not JSON)."""
    try:
        return orjson.loads(await response.read())
    except orjson.JSONDecodeError:
        raise ProxyError(
            502, "the upstream sent a response that is not JSON", error_type="api_error"
        ) from None
    finally:
        response.release()


def chat_target(provider: Provider, route: Route, model: str, signing_key: bytes) -> ChatTarget:
    limit = route.max_tokens_limit or provider.max_tokens_limit
    return ChatTarget(
        model=route.model or model,
        max_tokens_field=provider.max_tokens_field,
        max_tokens_limit=limit,
        reasoning=provider.reasoning,
        replay_reasoning=provider.replay_reasoning,
        signing_key=signing_key,
        sampling=provider.sampling,
    )


async def handle(app: App, scope: Scope, receive: Receive, send: Send, body: bytes) -> None:
    request = parse_request(body)
    model: str = request["model"]
    resolved = app.settings.resolve(model)
    if resolved is None:
        raise ProxyError(404, f"model: no route for model {model!r}", error_type="not_found_error")
    provider, route = resolved
    if provider.kind == "anthropic":
        await passthrough(app, scope, receive, send, body, request, provider, route)
        return
    target = chat_target(provider, route, model, app.signing_key)
    stream = request.get("stream") is True
    chat_request = chat_request_from_messages(request, target, stream=stream)
    headers = {
        "content-type": "application/json",
        "accept": "text/event-stream" if stream else "application/json",
    }
    key = provider.api_key()
    if key:
        headers["authorization"] = f"Bearer {key}"
    url = provider.base_url.rstrip("/") + "/chat/completions"
    reported_model = route.spoof_model or model
    body_out = orjson.dumps(chat_request)

    async def connect() -> ClientResponse:
        try:
            return await app.upstream.post(url, headers, body_out)
        except (UpstreamHTTPError, UpstreamUnavailable) as exc:
            raise error_from_upstream(exc) from None

    if not stream:
        completion = await read_json(await connect())
        message = message_from_chat_completion(
            completion,
            message_id=ids.message_id(),
            model=reported_model,
            signing_key=app.signing_key,
        )
        await respond(send, 200, orjson.dumps(message))
        return

    transducer = app.impl.MessagesViaChatStream(
        ids.message_id(),
        reported_model,
        estimate_input_tokens(request),
        # Always signed: Claude Code keeps only signed thinking, and a conversation may move
        # to a route whose upstream needs its reasoning back.
        signing_key=app.signing_key,
        max_event_bytes=app.settings.max_event_bytes,
    )

    await app.stream(
        scope,
        receive,
        send,
        connect(),
        transducer,
        {"model": model, "provider": provider.name, "stream": 1},
    )


async def passthrough(
    app: App,
    scope: Scope,
    receive: Receive,
    send: Send,
    body: bytes,
    request: dict[str, Any],
    provider: Provider,
    route: Route,
) -> None:
    """Forward an Anthropic request to an Anthropic upstream, bytes in and out (re-encoded
    only when the route renames the model or the proxy's own signatures must go)."""
    reencode = route.model is not None and route.model != request["model"]
    if reencode:
        request["model"] = route.model
    if b"hydra1." in body:
        strip_proxy_signatures(request)
        reencode = True
    if reencode:
        body = orjson.dumps(request)
    headers = {"content-type": "application/json"}
    for name in _ANTHROPIC_FORWARD:
        value = header(scope, name)
        if value is not None:
            headers[name.decode()] = value.decode("latin-1")
    headers.setdefault("anthropic-version", "2023-06-01")
    key = provider.api_key()
    if key:
        headers["x-api-key"] = key
    query = scope.get("query_string", b"").decode("latin-1")
    url = provider.base_url.rstrip("/") + "/v1/messages" + (f"?{query}" if query else "")
    try:
        response = await app.upstream.post(url, headers, body)
    except UpstreamHTTPError as exc:
        out_headers = [(b"retry-after", exc.retry_after.encode())] if exc.retry_after else []
        await respond(send, exc.status, exc.body, JSON, out_headers)
        return
    except UpstreamUnavailable as exc:
        raise error_from_upstream(exc) from None
    await forward(response, receive, send, idle_timeout=app.settings.idle_timeout)


def strip_proxy_signatures(request: dict[str, Any]) -> dict[str, Any]:
    """Drop thinking blocks signed by this proxy: Anthropic would reject them."""
    for message in request.get("messages") or ():
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            message["content"] = [
                block
                for block in message["content"]
                if not (
                    isinstance(block, dict)
                    and block.get("type") == "thinking"
                    and is_proxy_signature(block.get("signature"))
                )
            ]
    return request
