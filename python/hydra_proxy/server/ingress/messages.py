"""POST /v1/messages: Anthropic Messages clients, served by a Chat upstream or passed through."""

from __future__ import annotations

from typing import Any

import orjson

from ... import ids
from ...chat.request.writer import ChatTarget, chat_request_from_messages
from ...chat.response.reader import message_from_chat_completion
from ...config import Provider, Route
from ...signature import is_proxy_signature
from ...tokens import estimate_input_tokens
from ...transducers import StreamTransducer
from ..asgi import Scope, header
from ..dialects import DIALECTS
from ..plan import Plan
from . import Context, parse_request, resolve, target_of


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


def plan(ctx: Context, scope: Scope, body: bytes) -> Plan:
    request = parse_request(body)
    model: str = request["model"]
    provider, route = resolve(ctx.settings, model)
    if provider.kind == "anthropic":
        return passthrough(scope, body, request, provider, route)
    dialect = DIALECTS[provider.kind]
    stream = request.get("stream") is True
    chat_request = chat_request_from_messages(
        request, chat_target(provider, route, model, ctx.signing_key), stream=stream
    )
    reported_model = route.spoof_model or model
    signing_key = ctx.signing_key
    settings = ctx.settings
    out = Plan(
        url=dialect.url(provider),
        headers=dialect.headers(
            provider, accept="text/event-stream" if stream else "application/json"
        ),
        body=orjson.dumps(chat_request),
        client="anthropic",
        kind="relay" if stream else "json",
        log={"model": model, "provider": provider.name, "stream": 1} if stream else {},
        target=target_of(provider, route, model, request),
    )
    if not stream:

        def convert(completion: Any) -> Any:
            return message_from_chat_completion(
                completion,
                message_id=ids.message_id(),
                model=reported_model,
                signing_key=signing_key,
            )

        out.convert = convert
        return out

    transducer_class = ctx.impl.MessagesViaChatStream

    def transducer() -> StreamTransducer:
        # The estimate is only needed for message_start: it runs once the upstream request
        # is on its way.
        built: StreamTransducer = transducer_class(
            ids.message_id(),
            reported_model,
            estimate_input_tokens(request),
            # Always signed: Claude Code keeps only signed thinking, and a conversation may
            # move to a route whose upstream needs its reasoning back.
            signing_key=signing_key,
            max_event_bytes=settings.max_event_bytes,
        )
        return built

    out.transducer = transducer
    return out


def passthrough(
    scope: Scope, body: bytes, request: dict[str, Any], provider: Provider, route: Route
) -> Plan:
    """An Anthropic client on an Anthropic upstream: bytes in and out (re-encoded only when
    the route renames the model or the proxy's own signatures must go)."""
    dialect = DIALECTS[provider.kind]
    reencode = route.model is not None and route.model != request["model"]
    if reencode:
        request["model"] = route.model
    where = target_of(provider, route, request["model"], request)
    if dialect.strips_proxy_signatures and b"hydra1." in body:
        strip_proxy_signatures(request)
        reencode = True
    if reencode:
        body = orjson.dumps(request)
    headers = dialect.headers(provider, accept=None)
    for name in dialect.passthrough_headers:
        value = header(scope, name)
        if value is not None:
            headers[name.decode()] = value.decode("latin-1")
    return Plan(
        url=dialect.url(provider, scope.get("query_string", b"")),
        headers=headers,
        body=body,
        client="anthropic",
        kind="forward",
        target=where,
    )


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
