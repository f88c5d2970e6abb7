"""POST /v1/messages: Anthropic Messages clients, served by a Chat upstream or passed through."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import orjson

from ... import ids
from ...chat.request.writer import ChatTarget, chat_request_from_messages
from ...chat.response.reader import message_from_chat_completion
from ...config import Attempt, request_traits
from ...signature import is_proxy_signature
from ...tokens import estimate_input_tokens
from ...transducers import StreamTransducer
from ..asgi import Scope, header
from ..dialects import DIALECTS
from ..plan import Plan
from . import Context, Routed, decide, parse_request


def chat_target(attempt: Attempt, signing_key: bytes) -> ChatTarget:
    provider = attempt.provider
    return ChatTarget(
        model=attempt.model,
        max_tokens_field=provider.max_tokens_field,
        max_tokens_limit=attempt.max_tokens_limit,
        reasoning=provider.reasoning,
        replay_reasoning=provider.replay_reasoning,
        signing_key=signing_key,
        sampling=provider.sampling,
    )


def plan(ctx: Context, scope: Scope, body: bytes) -> Routed:
    request = parse_request(body)
    # Counted at most once: by a long_context rule, else by the stream's message_start.
    estimate = functools.cache(lambda: estimate_input_tokens(request))
    traits = request_traits(
        request, client="anthropic", headers=scope["headers"], estimate=estimate
    )
    decision = decide(ctx.settings, traits)

    def build(attempt: Attempt) -> Plan:
        return plan_attempt(ctx, scope, body, request, attempt, decision.reported_model, estimate)

    return Routed(decision, build)


def plan_attempt(
    ctx: Context,
    scope: Scope,
    body: bytes,
    request: dict[str, Any],
    attempt: Attempt,
    reported_model: str,
    estimate: Callable[[], int],
) -> Plan:
    """The Plan of one attempt: passthrough to an Anthropic upstream, else translated."""
    provider = attempt.provider
    model: str = request["model"]
    if provider.kind == "anthropic":
        return passthrough(scope, body, request, attempt)
    dialect = DIALECTS[provider.kind]
    stream = request.get("stream") is True
    chat_request = chat_request_from_messages(
        request, chat_target(attempt, ctx.signing_key), stream=stream
    )
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
        log={"model": model, "stream": 1} if stream else {"model": model},
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
            estimate(),
            # Always signed: Claude Code keeps only signed thinking, and a conversation may
            # move to a route whose upstream needs its reasoning back.
            signing_key=signing_key,
            max_event_bytes=settings.max_event_bytes,
        )
        return built

    out.transducer = transducer
    return out


def passthrough(scope: Scope, body: bytes, request: dict[str, Any], attempt: Attempt) -> Plan:
    """An Anthropic client on an Anthropic upstream: bytes in and out (re-encoded only when
    the attempt renames the model or the proxy's own signatures must go)."""
    provider = attempt.provider
    dialect = DIALECTS[provider.kind]
    if attempt.model != request["model"]:
        request = {**request, "model": attempt.model}  # the request stays shared by attempts
        body = orjson.dumps(request)
    if dialect.strips_proxy_signatures and b"hydra1." in body:
        body = orjson.dumps(strip_proxy_signatures(orjson.loads(body)))
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
        log={"model": request["model"]},
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
