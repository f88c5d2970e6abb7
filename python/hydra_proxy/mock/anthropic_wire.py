"""Anthropic Messages wire format, modelled on fixtures/anthropic/*.sse.

Stream: ``event: X\\ndata: {json}\\n\\n``; ``message_start`` (``content: []``, real-shaped
usage), a ``ping``, then blocks in this order: ``thinking`` (thinking_delta..., then one
signature_delta), ``redacted_thinking`` (data in the start event, no deltas), ``text``
(text_delta...), ``tool_use`` (an empty input_json_delta first, then the argument
fragments), each opened by ``content_block_start`` and closed by ``content_block_stop``;
then ``message_delta`` (stop_reason, cumulative usage) and ``message_stop``. No ``[DONE]``.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import orjson

from ..errors import status_for_anthropic_type
from .response import SSE_HEADERS, Headers, RenderContext, Reply, cut_events, json_reply
from .script import ResolvedUsage, ScriptedReply, ScriptedWebSearch, resolve_usage, split_text

PING = b'event: ping\ndata: {"type": "ping"}\n\n'


def _event(kind: str, obj: dict[str, Any]) -> bytes:
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(obj) + b"\n\n"


def _headers(ctx: RenderContext) -> Headers:
    return [(b"request-id", ctx.request_id.encode())]


def error_reply(
    status: int,
    kind: str,
    message: str,
    *,
    retry_after: str | None = None,
    request_id: str = "req_mock",
) -> Reply:
    """An HTTP error in Anthropic's shape ``{"type": "error", "error": {type, message}}``."""
    extra: Headers = [(b"request-id", request_id.encode())]
    if retry_after is not None:
        extra.append((b"retry-after", retry_after.encode()))
    body = {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id}
    return json_reply(status, body, extra)


def overloaded_reply() -> Reply:
    """What ``--error-rate`` answers on this endpoint (Anthropic's 529)."""
    return error_reply(529, "overloaded_error", "Overloaded")


def default_signature(thinking: str) -> str:
    """A stable, opaque-looking signature for a scripted thinking block without one."""
    return base64.b64encode(b"mock" + hashlib.sha256(thinking.encode()).digest()).decode()


def _tool_use_id(turn: ScriptedReply, index: int, ctx: RenderContext) -> str:
    call = turn.tool_calls[index]
    return call.id if call.id is not None else f"toolu_{ctx.message_id[-12:]}_{index}"


def _tool_input(arguments: str) -> Any:
    try:
        return orjson.loads(arguments) if arguments.strip() else {}
    except orjson.JSONDecodeError:
        return arguments  # scripted garbage stays garbage


def _usage(u: ResolvedUsage) -> dict[str, Any]:
    return {
        "input_tokens": max(0, u.prompt_tokens - u.cached_tokens),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": u.cached_tokens,
        "output_tokens": u.completion_tokens,
    }


def _search_blocks(search: ScriptedWebSearch, ctx: RenderContext) -> list[dict[str, Any]]:
    """The search's server_tool_use and web_search_tool_result blocks, as in a Message."""
    search_id = "srvtoolu_" + ctx.message_id.removeprefix("msg_")
    results = [
        {
            "type": "web_search_result",
            "title": title,
            "url": url,
            "encrypted_content": "mock-encrypted-content",
            "page_age": None,
        }
        for url, title in search.results
    ]
    return [
        {
            "type": "server_tool_use",
            "id": search_id,
            "name": "web_search",
            "input": {"query": search.query},
        },
        {"type": "web_search_tool_result", "tool_use_id": search_id, "content": results},
    ]


def _citations(search: ScriptedWebSearch, text: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "web_search_result_location",
            "cited_text": text[:150],
            "url": url,
            "title": title,
            "encrypted_index": "mock-encrypted-index",
        }
        for url, title in search.results
    ]


class _Blocks:
    """A stream's content blocks, each opened, filled by deltas of the scripted chunk size
    and closed, in the order of a real Message: thinking, search, text, tool uses."""

    def __init__(self, events: list[bytes], size: int) -> None:
        self.events = events
        self.size = size
        self.index = 0

    def start(self, block: dict[str, Any]) -> None:
        self.events.append(
            _event(
                "content_block_start",
                {"type": "content_block_start", "index": self.index, "content_block": block},
            )
        )

    def delta(self, delta: dict[str, Any]) -> None:
        self.events.append(
            _event(
                "content_block_delta",
                {"type": "content_block_delta", "index": self.index, "delta": delta},
            )
        )

    def pieces(self, kind: str, field: str, text: str) -> None:
        for piece in split_text(text, self.size):
            self.delta({"type": kind, field: piece})

    def stop(self) -> None:
        self.events.append(
            _event("content_block_stop", {"type": "content_block_stop", "index": self.index})
        )
        self.index += 1

    def thinking(self, turn: ScriptedReply) -> None:
        if turn.reasoning is not None:
            self.start({"type": "thinking", "thinking": "", "signature": ""})
            self.pieces("thinking_delta", "thinking", turn.reasoning)
            signature = (
                turn.signature if turn.signature is not None else default_signature(turn.reasoning)
            )
            self.delta({"type": "signature_delta", "signature": signature})
            self.stop()
        for data in turn.redacted_thinking:
            self.start({"type": "redacted_thinking", "data": data})
            self.stop()

    def search(self, turn: ScriptedReply, ctx: RenderContext) -> None:
        if turn.web_search is None:
            return
        use, result = _search_blocks(turn.web_search, ctx)
        self.start({**use, "input": {}})
        self.delta({"type": "input_json_delta", "partial_json": ""})
        self.pieces("input_json_delta", "partial_json", orjson.dumps(use["input"]).decode())
        self.stop()
        self.start(result)
        self.stop()

    def text(self, turn: ScriptedReply) -> None:
        if turn.text is None:
            return
        search = turn.web_search
        if search is not None and search.results:
            self.start({"citations": [], "type": "text", "text": ""})
            for citation in _citations(search, turn.text):
                self.delta({"type": "citations_delta", "citation": citation})
        else:
            self.start({"type": "text", "text": ""})
        self.pieces("text_delta", "text", turn.text)
        self.stop()

    def tool_uses(self, turn: ScriptedReply, ctx: RenderContext) -> None:
        for i, call in enumerate(turn.tool_calls):
            use = {"type": "tool_use", "id": _tool_use_id(turn, i, ctx), "name": call.name}
            self.start({**use, "input": {}})
            self.delta({"type": "input_json_delta", "partial_json": ""})
            if call.arguments != "{}":
                self.pieces("input_json_delta", "partial_json", call.arguments)
            self.stop()


def render(turn: ScriptedReply, ctx: RenderContext) -> Reply:
    """The turn as an Anthropic response (event stream or complete ``Message``)."""
    if turn.error is not None:
        e = turn.error
        return error_reply(
            e.status, e.type, e.message, retry_after=e.retry_after, request_id=ctx.request_id
        )
    if not ctx.stream:
        return _render_complete(turn, ctx)

    usage = _usage(resolve_usage(turn))
    start_usage = {
        "input_tokens": usage["input_tokens"],
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": usage["cache_read_input_tokens"],
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
        "output_tokens": 1,
        "service_tier": "standard",
    }
    events = [
        _event(
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": ctx.message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": ctx.model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": start_usage,
                },
            },
        ),
        PING,
    ]
    blocks = _Blocks(events, ctx.chunk_size)
    blocks.thinking(turn)
    blocks.search(turn, ctx)
    blocks.text(turn)
    blocks.tool_uses(turn, ctx)
    content_end = len(events)

    if turn.stream_error is not None:
        se = turn.stream_error
        events.append(
            _event("error", {"type": "error", "error": {"type": se.type, "message": se.message}})
        )
        return Reply(200, SSE_HEADERS + _headers(ctx), events, abort=turn.abort)

    events.append(
        _event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": turn.anthropic_stop_reason(), "stop_sequence": None},
                "usage": usage,
            },
        )
    )
    events.append(_event("message_stop", {"type": "message_stop"}))
    events = cut_events(events, content_end, turn.cut)
    return Reply(200, SSE_HEADERS + _headers(ctx), events, abort=turn.abort)


def _render_complete(turn: ScriptedReply, ctx: RenderContext) -> Reply:
    if turn.stream_error is not None:
        se = turn.stream_error
        return error_reply(
            status_for_anthropic_type(se.type), se.type, se.message, request_id=ctx.request_id
        )
    content: list[dict[str, Any]] = []
    if turn.reasoning is not None:
        signature = (
            turn.signature if turn.signature is not None else default_signature(turn.reasoning)
        )
        content.append({"type": "thinking", "thinking": turn.reasoning, "signature": signature})
    content.extend({"type": "redacted_thinking", "data": d} for d in turn.redacted_thinking)
    search = turn.web_search
    if search is not None:
        content.extend(_search_blocks(search, ctx))
    if turn.text is not None:
        text: dict[str, Any] = {"type": "text", "text": turn.text}
        if search is not None and search.results:
            text["citations"] = _citations(search, turn.text)
        content.append(text)
    for i, call in enumerate(turn.tool_calls):
        content.append(
            {
                "type": "tool_use",
                "id": _tool_use_id(turn, i, ctx),
                "name": call.name,
                "input": _tool_input(call.arguments),
            }
        )
    usage = _usage(resolve_usage(turn))
    body = {
        "id": ctx.message_id,
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": turn.anthropic_stop_reason(),
        "stop_sequence": None,
        "usage": {**usage, "service_tier": "standard"},
    }
    return Reply.complete_json(body, _headers(ctx), turn.cut, turn.abort)


def count_tokens_reply(body: Any) -> Reply:
    """``POST /v1/messages/count_tokens``: a rough estimate (4 bytes a token) of the request."""
    return json_reply(200, {"input_tokens": max(1, len(orjson.dumps(body)) // 4)})
