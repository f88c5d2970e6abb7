"""POST /v1/chat/completions: OpenAI Chat clients, on any upstream kind or passed through."""

from __future__ import annotations

import logging
import time
from typing import Any

import orjson

from ... import ids
from ...canonical.target import MessagesTarget
from ...chat.request.reader import messages_request_from_chat
from ...chat.response.writer import chat_completion_from_message
from ...config import Attempt, RequestTraits, request_traits
from ...tokens import estimate_input_tokens
from ...transducers import StreamTransducer
from ..asgi import Scope, header
from ..dialects import DIALECTS
from ..plan import Plan
from ..upstreams import Target
from . import Context, Routed, decide, parse_request
from .translated import Factory, translated

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


def chat_traits(request: dict[str, Any], scope: Scope) -> RequestTraits:
    """The routing traits of a Chat request, read from the fields routing looks at (the
    full translation waits for the attempt; the token estimate translates only if a route
    asks for it)."""
    effort = request.get("reasoning_effort")
    max_tokens = request.get("max_completion_tokens", request.get("max_tokens"))
    messages = request.get("messages")  # a malformed one gets its 400 from the reader
    images = any(
        isinstance(part, dict) and part.get("type") == "image_url"
        for m in (messages if isinstance(messages, list) else ())
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        for part in m["content"]
    )
    view: dict[str, Any] = {
        "model": request["model"],
        "tools": request.get("tools"),
        "max_tokens": max_tokens,
        "messages": [{"role": "user", "content": [{"type": "image"}]}] if images else [],
    }
    if isinstance(effort, str):
        view["output_config"] = {"effort": effort}
        if effort not in ("none", "minimal"):
            view["thinking"] = {"type": "enabled"}

    def estimate() -> int:
        translated = messages_request_from_chat(
            request, MessagesTarget(model=request["model"]), stream=False
        )
        return estimate_input_tokens(translated.body)

    return request_traits(view, client="chat", headers=scope["headers"], estimate=estimate)


def plan(ctx: Context, scope: Scope, body: bytes) -> Routed:
    request = parse_request(body, ctx.settings.max_json_depth)
    decision = decide(ctx.settings, chat_traits(request, scope), param="model")

    def build(attempt: Attempt) -> Plan:
        return plan_attempt(ctx, scope, body, request, attempt)

    return Routed(decision, build, stream=request.get("stream") is True)


def plan_attempt(
    ctx: Context, scope: Scope, body: bytes, request: dict[str, Any], attempt: Attempt
) -> Plan:
    """The Plan of one attempt: passthrough to an OpenAI upstream, else translated."""
    provider = attempt.provider
    model: str = request["model"]
    if provider.kind == "openai":
        return passthrough(body, request, attempt)
    key = ctx.signing_key if wants_continuation(ctx, scope) else None
    target = MessagesTarget(
        model=attempt.model,
        max_tokens_limit=attempt.max_tokens_limit,
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
    completion_id = ids.completion_id()
    created = int(time.time())
    stream_options = request.get("stream_options")
    include_usage = isinstance(stream_options, dict) and stream_options.get("include_usage") is True
    max_event_bytes = ctx.settings.max_event_bytes
    decoder_args = _decoder_args(provider.kind, ctx.signing_key)

    def write_reply(message: dict[str, Any]) -> Any:
        return chat_completion_from_message(
            message, completion_id=completion_id, model=model, created=created, continuation_key=key
        )

    def build(factory: Factory) -> StreamTransducer:
        return factory(
            completion_id,
            model,
            created,
            include_usage=include_usage,
            continuation_key=key,
            max_event_bytes=max_event_bytes,
            **decoder_args,
        )

    return translated(
        ctx,
        translation.body,
        Target.of(attempt, ctx.signing_key),
        client="openai",
        stream=stream,
        reported_model=model,
        write_reply=write_reply,
        build=build,
        log={"model": model},
    )


def _decoder_args(kind: str, signing_key: bytes) -> dict[str, Any]:
    """The upstream decoder's own constructor arguments (the Chat encoder's are the same for
    every upstream): the Anthropic decoder takes none; the Responses and Gemini decoders
    sign what a client must replay; the Gemini decoder names its tool calls."""
    if kind == "anthropic":
        return {}
    if kind == "gemini":
        return {"signing_key": signing_key, "message_id": ids.message_id()}
    return {"signing_key": signing_key}


def passthrough(body: bytes, request: dict[str, Any], attempt: Attempt) -> Plan:
    """An OpenAI client on an OpenAI upstream: the bytes go through unchanged both ways."""
    if attempt.model != request["model"]:
        body = orjson.dumps({**request, "model": attempt.model})
    dialect = DIALECTS[attempt.provider.kind]
    return Plan(
        url=dialect.url(attempt.provider),
        headers=dialect.headers(attempt.provider, accept=None),
        body=body,
        client="openai",
        kind="forward",
        log={"model": request["model"]},
    )
