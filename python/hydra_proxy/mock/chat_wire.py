"""OpenAI Chat Completions wire format, modelled on fixtures/chat/oaipy-gpt4o-*.sse.

Stream: ``data: {chunk}\\n\\n`` lines; the first chunk carries ``role`` (and, for a turn that
starts with a tool call, that call's first fragment, as api.openai.com does); reasoning goes
in ``delta.reasoning_content`` (DeepSeek / Z.AI style); each tool call's first fragment has
``index, id, type, function{name, arguments: ""}``, later ones only ``index`` and argument
text; then a finish chunk ``delta: {}``, the usage chunk (``choices: []``) when
``stream_options.include_usage`` is true, and ``data: [DONE]``.

A turn's ``stream_error`` replaces the finish chunk with ``data: {"error": {message, type,
param, code}}`` followed by ``data: [DONE]`` (as OpenRouter does in
fixtures/chat/pydantic-openrouter-midstream-error.sse); openai-python raises ``APIError``
on it.
"""

from __future__ import annotations

from typing import Any

import orjson

from ..errors import status_for_anthropic_type
from .response import SSE_HEADERS, Headers, RenderContext, Reply, cut_events, json_reply
from .script import ResolvedUsage, ScriptedReply, resolve_usage, split_text

DONE = b"data: [DONE]\n\n"
SYSTEM_FINGERPRINT = "fp_hydra_mock"


def _sse(obj: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\n\n"


def _usage_object(u: ResolvedUsage) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
    }
    if u.cache_hit_field:  # DeepSeek's shape
        usage["prompt_cache_hit_tokens"] = u.cached_tokens
        usage["prompt_cache_miss_tokens"] = max(u.prompt_tokens - u.cached_tokens, 0)
    else:
        usage["prompt_tokens_details"] = {"cached_tokens": u.cached_tokens}
    usage["completion_tokens_details"] = {"reasoning_tokens": u.reasoning_tokens}
    return usage


def _headers(ctx: RenderContext) -> Headers:
    return [(b"x-request-id", ctx.request_id.encode())]


def error_reply(
    status: int,
    kind: str,
    message: str,
    *,
    retry_after: str | None = None,
    code: str | None = None,
    param: str | None = None,
) -> Reply:
    """An HTTP error in OpenAI's shape ``{"error": {message, type, param, code}}``."""
    extra: Headers = [(b"retry-after", retry_after.encode())] if retry_after is not None else []
    body = {"error": {"message": message, "type": kind, "param": param, "code": code}}
    return json_reply(status, body, extra)


def overloaded_reply() -> Reply:
    """What ``--error-rate`` answers on this endpoint (api.openai.com's 503)."""
    return error_reply(
        503, "server_error", "The server is overloaded or not ready yet.", retry_after="1"
    )


def _chunk(ctx: RenderContext, delta: dict[str, Any], finish: str | None = None) -> bytes:
    return _sse(
        {
            "id": ctx.message_id,
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "system_fingerprint": SYSTEM_FINGERPRINT,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
    )


def _tool_call_id(turn: ScriptedReply, index: int, ctx: RenderContext) -> str:
    call = turn.tool_calls[index]
    return call.id if call.id is not None else f"call_{ctx.message_id[-12:]}_{index}"


def render(turn: ScriptedReply, ctx: RenderContext) -> Reply:
    """The turn as an OpenAI response (stream or complete ``chat.completion``)."""
    if turn.error is not None:
        e = turn.error
        return error_reply(e.status, e.type, e.message, retry_after=e.retry_after, code=e.code)
    if not ctx.stream:
        return _render_complete(turn, ctx)

    size = ctx.chunk_size
    events: list[bytes] = []
    calls = turn.tool_calls
    first_call_merged = False
    if turn.reasoning is not None:
        first: dict[str, Any] = {"role": "assistant", "content": None, "reasoning_content": ""}
    elif turn.text is not None or not calls:
        first = {"role": "assistant", "content": "", "refusal": None}
    else:
        call = calls[0]
        first = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "index": 0,
                    "id": _tool_call_id(turn, 0, ctx),
                    "type": "function",
                    "function": {"name": call.name, "arguments": ""},
                }
            ],
            "refusal": None,
        }
        first_call_merged = True
    events.append(_chunk(ctx, first))

    for piece in split_text(turn.reasoning or "", size):
        events.append(_chunk(ctx, {"reasoning_content": piece}))
    for piece in split_text(turn.text or "", size):
        events.append(_chunk(ctx, {"content": piece}))
    for i, call in enumerate(calls):
        if not (i == 0 and first_call_merged):
            start = {
                "index": i,
                "id": _tool_call_id(turn, i, ctx),
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            events.append(_chunk(ctx, {"tool_calls": [start]}))
        for piece in split_text(call.arguments, size):
            frag = {"index": i, "function": {"arguments": piece}}
            events.append(_chunk(ctx, {"tool_calls": [frag]}))
    content_end = len(events)

    if turn.stream_error is not None:
        se = turn.stream_error
        events.append(
            _sse(
                {
                    "error": {
                        "message": se.message,
                        "type": se.type,
                        "param": None,
                        "code": None,
                    }
                }
            )
        )
        events.append(DONE)
        return Reply(200, SSE_HEADERS + _headers(ctx), events, abort=turn.abort)

    events.append(_chunk(ctx, {}, turn.chat_finish_reason()))
    if ctx.include_usage:
        events.append(
            _sse(
                {
                    "id": ctx.message_id,
                    "object": "chat.completion.chunk",
                    "created": ctx.created,
                    "model": ctx.model,
                    "system_fingerprint": SYSTEM_FINGERPRINT,
                    "choices": [],
                    "usage": _usage_object(resolve_usage(turn)),
                }
            )
        )
    events.append(DONE)
    events = cut_events(events, content_end, turn.cut)
    return Reply(200, SSE_HEADERS + _headers(ctx), events, abort=turn.abort)


def _render_complete(turn: ScriptedReply, ctx: RenderContext) -> Reply:
    if turn.stream_error is not None:
        se = turn.stream_error
        return error_reply(status_for_anthropic_type(se.type), se.type, se.message)
    message: dict[str, Any] = {"role": "assistant", "content": turn.text, "refusal": None}
    if turn.reasoning is not None:
        message["reasoning_content"] = turn.reasoning
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": _tool_call_id(turn, i, ctx),
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for i, c in enumerate(turn.tool_calls)
        ]
    body = {
        "id": ctx.message_id,
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": turn.chat_finish_reason(),
            }
        ],
        "usage": _usage_object(resolve_usage(turn)),
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }
    return Reply.complete_json(body, _headers(ctx), turn.cut, turn.abort)
