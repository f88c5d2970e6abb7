"""Google Gemini wire format (``generateContent`` / ``streamGenerateContent``), modelled on
fixtures/gemini/.

The model and the mode come from the URL, not the body:
``POST /v1beta/models/{model}:generateContent`` answers one ``GenerateContentResponse``;
``:streamGenerateContent?alt=sse`` streams ``data: {chunk}\\r\\n\\r\\n`` (CRLF, as the
recorded Google responses), and without ``alt=sse`` the chunks come as one JSON array.

A chunk is ``{"candidates": [{"content": {"role": "model", "parts": [...]}, "index": 0}],
"modelVersion", "responseId"}``. A turn is rendered as: its ``reasoning`` in ``{"text",
"thought": true}`` parts, its ``text`` in text parts, then each tool call as one
``{"functionCall": {"name", "args"}}`` part; the first function-call part (or, without
calls, the first text part of a turn with reasoning or a ``signature``) carries the
``thoughtSignature`` (the turn's ``signature``, else a stable opaque value) that Gemini 3
requires back on replay. With ``partial_args`` the calls' arguments are streamed in pieces
as Vertex does (recording ``vercel-google-vertex-stream-tool-call-arguments-nested``):
``{"functionCall": {"name", "willContinue": true}}``, then one ``partialArgs`` entry per
leaf value (``jsonPath``; strings in pieces with ``willContinue``, each closed by an empty
``stringValue``), then ``{"functionCall": {}}``. The last chunk carries ``finishReason``
(``STOP``; ``MAX_TOKENS`` / ``SAFETY`` for the token-limit / content-filter
``finish_reason``s; anything upper-case verbatim, e.g. ``MALFORMED_FUNCTION_CALL``) and
``usageMetadata`` (prompt, candidates, thoughts, cached and total token counts).

Errors: ``{"error": {"code", "message", "status", "details"?}}`` with a ``RetryInfo``
detail (``retryDelay: "<seconds>s"``) when the turn's error has ``retry_after``, as the
recorded 429. A turn's ``stream_error`` ends the stream with such an error object after
the content.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, Final

import orjson

from ..errors import status_for_anthropic_type
from .response import SSE_HEADERS, Headers, RenderContext, Reply, cut_events, json_reply
from .script import ResolvedUsage, ScriptedReply, ToolCall, resolve_usage, split_text

STATUS_NAMES: Final = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_FINISH: Final = {
    "length": "MAX_TOKENS",
    "max_tokens": "MAX_TOKENS",
    "model_context_window_exceeded": "MAX_TOKENS",
    "content_filter": "SAFETY",
    "refusal": "SAFETY",
}
# Anthropic's 529 has no Google twin: an overloaded Gemini answers 503 UNAVAILABLE.
_OVERLOADED: Final = 503
_RETRY_INFO: Final = "type.googleapis.com/google.rpc.RetryInfo"
_EVENT_END: Final = b"\r\n\r\n"


def status_name(status: int) -> str:
    if status in STATUS_NAMES:
        return STATUS_NAMES[status]
    return "INTERNAL" if status >= 500 else "FAILED_PRECONDITION"


def error_body(status: int, message: str, retry_after: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": status, "message": message, "status": status_name(status)}
    if retry_after is not None:
        error["details"] = [{"@type": _RETRY_INFO, "retryDelay": f"{retry_after}s"}]
    return {"error": error}


def error_reply(status: int, message: str, *, retry_after: str | None = None) -> Reply:
    """An HTTP error in Google's shape (``error.code/message/status``, RetryInfo)."""
    return json_reply(status, error_body(status, message, retry_after))


def overloaded_reply() -> Reply:
    """What ``--error-rate`` answers on this endpoint (Gemini's 503)."""
    return error_reply(503, "The model is overloaded. Please try again later.")


def default_thought_signature(seed: str) -> str:
    """A stable, opaque-looking thoughtSignature (standard base64, as Gemini sends)."""
    return base64.b64encode(b"mock-sig" + hashlib.sha256(seed.encode()).digest()).decode()


def _stream_error_status(kind: str) -> int:
    status = status_for_anthropic_type(kind)
    return _OVERLOADED if status == 529 else status


def finish_reason(turn: ScriptedReply) -> str:
    reason = turn.finish_reason
    if reason is None or reason in ("stop", "end_turn", "tool_calls", "tool_use"):
        return "STOP"
    if reason in _FINISH:
        return _FINISH[reason]
    return reason if reason.isupper() else "OTHER"


def _usage(u: ResolvedUsage) -> dict[str, Any]:
    candidates = max(0, u.completion_tokens - u.reasoning_tokens)
    usage: dict[str, Any] = {
        "promptTokenCount": u.prompt_tokens,
        "candidatesTokenCount": candidates,
        "totalTokenCount": u.prompt_tokens + u.completion_tokens,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": u.prompt_tokens}],
    }
    if u.cached_tokens:
        usage["cachedContentTokenCount"] = u.cached_tokens
    if u.reasoning_tokens:
        usage["thoughtsTokenCount"] = u.reasoning_tokens
    return usage


def _args(call: ToolCall) -> Any:
    try:
        return orjson.loads(call.arguments) if call.arguments.strip() else {}
    except orjson.JSONDecodeError:
        return call.arguments  # scripted garbage stays garbage


def _signature(turn: ScriptedReply) -> str | None:
    """The thoughtSignature of this turn (None: a text-only turn without reasoning)."""
    if turn.signature is not None:
        return turn.signature
    if turn.reasoning is None and not turn.tool_calls:
        return None
    seed = turn.reasoning or "".join(c.name + c.arguments for c in turn.tool_calls)
    return default_thought_signature(seed)


def _leaves(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """``(jsonPath, scalar)`` for every leaf of ``value``, in document order."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}[{i}]")
    else:
        yield path, value


def _partial_args(call: ToolCall, size: int) -> Iterator[dict[str, Any]]:
    """The ``partialArgs`` entries that stream this call's arguments in pieces."""
    for path, value in _leaves(_args(call), "$"):
        if isinstance(value, str):
            for piece in split_text(value, size):
                yield {"jsonPath": path, "stringValue": piece, "willContinue": True}
            yield {"jsonPath": path, "stringValue": ""}
        elif isinstance(value, bool):
            yield {"jsonPath": path, "boolValue": value}
        elif value is None:
            yield {"jsonPath": path, "nullValue": None}
        else:
            yield {"jsonPath": path, "numberValue": value}


class _Chunks:
    def __init__(self, ctx: RenderContext):
        self.ctx = ctx
        self.chunks: list[dict[str, Any]] = []

    def add(self, parts: list[dict[str, Any]], **candidate: Any) -> dict[str, Any]:
        chunk = {
            "candidates": [{"content": {"role": "model", "parts": parts}, **candidate, "index": 0}],
            "modelVersion": self.ctx.model,
            "responseId": self.ctx.message_id,
        }
        self.chunks.append(chunk)
        return chunk


def _complete_parts(turn: ScriptedReply) -> list[dict[str, Any]]:
    signature = _signature(turn)
    parts: list[dict[str, Any]] = []
    if turn.reasoning is not None:
        parts.append({"text": turn.reasoning, "thought": True})
    if turn.text is not None:
        part: dict[str, Any] = {"text": turn.text}
        if signature is not None and not turn.tool_calls:
            part["thoughtSignature"] = signature
        parts.append(part)
    for i, call in enumerate(turn.tool_calls):
        fc: dict[str, Any] = {"functionCall": {"name": call.name, "args": _args(call)}}
        if i == 0 and signature is not None:
            fc["thoughtSignature"] = signature
        parts.append(fc)
    return parts


def render(turn: ScriptedReply, ctx: RenderContext, *, sse: bool = True) -> Reply:
    """The turn as a Gemini answer (``ctx.stream``: a stream, SSE or a JSON array)."""
    if turn.error is not None:
        e = turn.error
        return error_reply(e.status, e.message, retry_after=e.retry_after)
    if not ctx.stream:
        return _render_complete(turn, ctx)
    size = ctx.chunk_size
    out = _Chunks(ctx)
    signature = _signature(turn)
    for piece in split_text(turn.reasoning or "", size):
        out.add([{"text": piece, "thought": True}])
    for n, piece in enumerate(split_text(turn.text or "", size)):
        part: dict[str, Any] = {"text": piece}
        if n == 0 and signature is not None and not turn.tool_calls:
            part["thoughtSignature"] = signature
        out.add([part])
    for i, call in enumerate(turn.tool_calls):
        sig = {"thoughtSignature": signature} if i == 0 and signature is not None else {}
        if not (turn.partial_args and isinstance(_args(call), dict)):
            out.add([{"functionCall": {"name": call.name, "args": _args(call)}, **sig}])
            continue
        out.add([{"functionCall": {"name": call.name, "willContinue": True}, **sig}])
        for entry in _partial_args(call, size):
            out.add([{"functionCall": {"partialArgs": [entry], "willContinue": True}}])
        out.add([{"functionCall": {}}])
    content_end = len(out.chunks)

    if turn.stream_error is not None:
        se = turn.stream_error
        events = [_frame(c, sse) for c in out.chunks]
        events.append(_frame(error_body(_stream_error_status(se.type), se.message), sse))
        return _stream_reply(ctx, events, sse, turn.abort)

    last = out.add([{"text": ""}], finishReason=finish_reason(turn))
    last["usageMetadata"] = _usage(resolve_usage(turn))
    events = cut_events([_frame(c, sse) for c in out.chunks], content_end, turn.cut)
    return _stream_reply(ctx, events, sse, turn.abort)


def _frame(chunk: dict[str, Any], sse: bool) -> bytes:
    return b"data: " + orjson.dumps(chunk) + _EVENT_END if sse else orjson.dumps(chunk)


def _headers(ctx: RenderContext) -> Headers:
    return [(b"x-goog-request-id", ctx.request_id.encode())]


def _stream_reply(ctx: RenderContext, events: list[bytes], sse: bool, abort: bool) -> Reply:
    if sse:
        return Reply(200, SSE_HEADERS + _headers(ctx), events, abort=abort)
    # without alt=sse Google streams one JSON array, element by element
    pieces = [(b"[" if i == 0 else b",\r\n") + e for i, e in enumerate(events)] or [b"["]
    pieces.append(b"]")
    return Reply(200, [(b"content-type", b"application/json"), *_headers(ctx)], pieces, abort)


def _render_complete(turn: ScriptedReply, ctx: RenderContext) -> Reply:
    if turn.stream_error is not None:
        se = turn.stream_error
        return error_reply(_stream_error_status(se.type), se.message)
    out = _Chunks(ctx)
    body = out.add(_complete_parts(turn), finishReason=finish_reason(turn))
    body["usageMetadata"] = _usage(resolve_usage(turn))
    return Reply.complete_json(body, _headers(ctx), turn.cut, turn.abort)


def renderer(
    model: str, stream: bool, sse: bool
) -> Callable[[ScriptedReply, RenderContext], Reply]:
    """``render`` for one request URL: its model and mode replace what the body says."""

    def render_url(turn: ScriptedReply, ctx: RenderContext) -> Reply:
        return render(turn, replace(ctx, model=model, stream=stream), sse=sse)

    return render_url
