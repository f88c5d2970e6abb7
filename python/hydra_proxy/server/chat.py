"""POST /v1/chat/completions: OpenAI Chat clients, served by Claude or passed through."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import ClientResponse

from .. import ids
from ..chat_via_messages.request import MessagesTarget, messages_request_from_chat
from ..chat_via_messages.response import chat_completion_from_message
from ..errors import ProxyError, invalid_request
from .asgi import Receive, Scope, Send, header, respond
from .messages import error_from_upstream, read_json
from .streaming import forward
from .upstream import UpstreamHTTPError, UpstreamUnavailable

if TYPE_CHECKING:
    from ..config import Provider, Route
    from .app import App

log = logging.getLogger("hydra_proxy.chat")

ANTHROPIC_VERSION = "2023-06-01"
# Clients known to replay reasoning_content (and so to carry the continuation suffix).
_REPLAYING_CLIENTS = (b"zed",)


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


def wants_continuation(app: App, scope: Scope) -> bool:
    """continuation = auto: clients known to replay reasoning, or a request that opts in."""
    mode = app.settings.continuation
    if mode != "auto":
        return mode == "always"
    opt_in = header(scope, b"x-hydra-continuation")
    if opt_in is not None:
        return opt_in.strip().lower() in (b"1", b"true", b"yes", b"on")
    agent = (header(scope, b"user-agent") or b"").lower()
    return any(name in agent for name in _REPLAYING_CLIENTS)


async def handle(app: App, scope: Scope, receive: Receive, send: Send, body: bytes) -> None:
    request = parse_request(body)
    model: str = request["model"]
    resolved = app.settings.resolve(model)
    if resolved is None:
        raise ProxyError(
            404, f"model: no route for model {model!r}", error_type="not_found_error", param="model"
        )
    provider, route = resolved
    if provider.kind == "openai":
        await passthrough(app, scope, receive, send, body, request, provider, route)
        return
    key = app.signing_key if wants_continuation(app, scope) else None
    target = MessagesTarget(
        model=route.model or model,
        max_tokens_limit=route.max_tokens_limit or provider.max_tokens_limit,
        continuation_key=key,
    )
    stream = request.get("stream") is True
    translation = messages_request_from_chat(request, target, stream=stream)
    if translation.skipped_reasoning or translation.thinking_disabled:
        log.debug(
            "continuation: %d restored, %d plain reasoning turns skipped, thinking disabled=%s",
            translation.restored_blocks,
            translation.skipped_reasoning,
            translation.thinking_disabled,
        )
    headers = {
        "content-type": "application/json",
        "anthropic-version": ANTHROPIC_VERSION,
        "accept": "text/event-stream" if stream else "application/json",
    }
    api_key = provider.api_key()
    if api_key:
        headers["x-api-key"] = api_key
    url = provider.base_url.rstrip("/") + "/v1/messages"
    upstream_body = orjson.dumps(translation.body)

    async def connect() -> ClientResponse:
        try:
            return await app.upstream.post(url, headers, upstream_body)
        except (UpstreamHTTPError, UpstreamUnavailable) as exc:
            raise error_from_upstream(exc) from None

    completion_id = ids.completion_id()
    created = int(time.time())
    if not stream:
        message = await read_json(await connect())
        completion = chat_completion_from_message(
            message, completion_id=completion_id, model=model, created=created, continuation_key=key
        )
        await respond(send, 200, orjson.dumps(completion))
        return

    stream_options = request.get("stream_options")
    include_usage = isinstance(stream_options, dict) and stream_options.get("include_usage") is True
    transducer = app.impl.ChatViaMessagesStream(
        completion_id,
        model,
        created,
        include_usage=include_usage,
        continuation_key=key,
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
    """An OpenAI client on an OpenAI upstream: the bytes go through unchanged both ways."""
    if route.model and route.model != request["model"]:
        request["model"] = route.model
        body = orjson.dumps(request)
    headers = {"content-type": "application/json"}
    api_key = provider.api_key()
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    url = provider.base_url.rstrip("/") + "/chat/completions"
    try:
        response = await app.upstream.post(url, headers, body)
    except UpstreamHTTPError as exc:
        extra = [(b"retry-after", exc.retry_after.encode())] if exc.retry_after else []
        await respond(send, exc.status, exc.body or b"{}", b"application/json", extra)
        return
    except UpstreamUnavailable as exc:
        raise error_from_upstream(exc) from None
    await forward(response, receive, send, idle_timeout=app.settings.idle_timeout)
