"""POST /v1/chat/completions: OpenAI Chat clients, served by Claude or passed through."""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson

from ... import ids
from ...chat.request.reader import MessagesTarget, messages_request_from_chat
from ...chat.response.writer import chat_completion_from_message
from ...config import Provider, Route
from ...transducers import StreamTransducer
from ..asgi import Scope, header
from ..dialects import DIALECTS
from ..plan import Plan
from . import Context, parse_request, resolve, target_of

log = logging.getLogger("hydra_proxy.chat")

# Clients known to replay reasoning_content (and so to carry the continuation suffix).
_REPLAYING_CLIENTS = (b"zed",)


def wants_continuation(ctx: Context, scope: Scope) -> bool:
    """continuation = auto: clients known to replay reasoning, or a request that opts in."""
    mode = ctx.settings.continuation
    if mode != "auto":
        return mode == "always"
    opt_in = header(scope, b"x-hydra-continuation")
    if opt_in is not None:
        return opt_in.strip().lower() in (b"1", b"true", b"yes", b"on")
    agent = (header(scope, b"user-agent") or b"").lower()
    return any(name in agent for name in _REPLAYING_CLIENTS)


def plan(ctx: Context, scope: Scope, body: bytes) -> Plan:
    request = parse_request(body)
    model: str = request["model"]
    provider, route = resolve(ctx.settings, model, param="model")
    if provider.kind == "openai":
        return passthrough(body, request, provider, route)
    key = ctx.signing_key if wants_continuation(ctx, scope) else None
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
    dialect = DIALECTS[provider.kind]
    completion_id = ids.completion_id()
    created = int(time.time())
    out = Plan(
        url=dialect.url(provider),
        headers=dialect.headers(
            provider, accept="text/event-stream" if stream else "application/json"
        ),
        body=orjson.dumps(translation.body),
        client="openai",
        kind="relay" if stream else "json",
        log={"model": model, "provider": provider.name, "stream": 1} if stream else {},
        target=target_of(provider, route, model, request),
    )
    if not stream:

        def convert(message: Any) -> Any:
            return chat_completion_from_message(
                message,
                completion_id=completion_id,
                model=model,
                created=created,
                continuation_key=key,
            )

        out.convert = convert
        return out

    stream_options = request.get("stream_options")
    include_usage = isinstance(stream_options, dict) and stream_options.get("include_usage") is True
    transducer_class = ctx.impl.ChatViaMessagesStream
    max_event_bytes = ctx.settings.max_event_bytes

    def transducer() -> StreamTransducer:
        built: StreamTransducer = transducer_class(
            completion_id,
            model,
            created,
            include_usage=include_usage,
            continuation_key=key,
            max_event_bytes=max_event_bytes,
        )
        return built

    out.transducer = transducer
    return out


def passthrough(body: bytes, request: dict[str, Any], provider: Provider, route: Route) -> Plan:
    """An OpenAI client on an OpenAI upstream: the bytes go through unchanged both ways."""
    where = target_of(provider, route, request["model"], request)
    if route.model and route.model != request["model"]:
        request["model"] = route.model
        body = orjson.dumps(request)
    dialect = DIALECTS[provider.kind]
    return Plan(
        url=dialect.url(provider),
        headers=dialect.headers(provider, accept=None),
        body=body,
        client="openai",
        kind="forward",
        target=where,
    )
