"""Upstream bodies that fail in each way a stream can fail, for every upstream protocol.

Each body starts as the protocol's recordings do (some content), then fails: the connection
is cut inside an event (mid-JSON, mid-`event:` line, after a data line but before the blank
line) or at an event boundary, the upstream reports an error, or the rest is not an event
stream at all (an HTML error page or binary after the 200 `text/event-stream` headers).
tests/golden/ records them through every composition (tests/support/golden_cases.py), and
tests/twins/test_stream_failures.py checks what each client is told.
"""

from __future__ import annotations

import json
from typing import Any

# A gateway's error page, as load balancers send it (nginx's 502 page).
HTML_PAGE = (
    b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    b"<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n"
    b"</body>\r\n</html>\r\n"
)
# The head of a PNG file: binary with line-end bytes inside.
BINARY = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x01\x00\x00\x00\x01\x00\x08\x06\x00\x00\x00\\r\xa8f\x00\n"


def _data(payload: object, event: str | None = None, end: bytes = b"\n\n") -> bytes:
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + json.dumps(payload, separators=(",", ":")).encode() + end


def _cut(event: bytes, at: int) -> bytes:
    """`event` cut `at` bytes before its end."""
    return event[:-at]


def _chat() -> dict[str, bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-f",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    head = _data(chunk({"role": "assistant", "content": "Hello"}))
    more = _data(chunk({"content": " world"}))
    error = {"error": {"type": "overloaded_error", "message": "busy"}}
    return {
        "cut-at-event-boundary": head + more,
        "error-event": head + _data(error, "error"),
        "cut-inside-event": head + _cut(more, 12),
        "cut-inside-event-line": head + b"event: err",
        "cut-before-blank-line": head + more[:-1],
        "cut-inside-done": head + _data(chunk({}, "stop")) + b"data: [DO",
        "garbage-html": head + HTML_PAGE,
        "garbage-binary": head + BINARY,
        "html-only": HTML_PAGE,
    }


def _anthropic() -> dict[str, bytes]:
    start = {
        "type": "message_start",
        "message": {
            "id": "msg_f",
            "type": "message",
            "role": "assistant",
            "model": "claude-f",
            "content": [],
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    block = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "Hi"},
    }
    stop = {"type": "content_block_stop", "index": 0}
    head = b"".join(_data(p, p["type"]) for p in (start, block, delta))  # type: ignore[index]
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    return {
        "cut-at-event-boundary": head + _data(stop, "content_block_stop"),
        "error-event": head + _data(error, "error"),
        "cut-inside-event": head + _cut(_data(delta, "content_block_delta"), 15),
        "cut-inside-event-line": head + b"event: content_block_st",
        "cut-before-blank-line": head + _data(stop, "content_block_stop")[:-1],
        "garbage-html": head + HTML_PAGE,
        "garbage-binary": head + BINARY,
        "html-only": HTML_PAGE,
    }


def _responses() -> dict[str, bytes]:
    created = {"type": "response.created", "response": {"id": "resp_f", "model": "gpt-f"}}
    item = {"id": "msg_f", "type": "message", "role": "assistant", "content": []}
    added = {"type": "response.output_item.added", "output_index": 0, "item": item}
    delta = {
        "type": "response.output_text.delta",
        "output_index": 0,
        "content_index": 0,
        "delta": "Hi",
    }
    head = b"".join(_data(p, str(p["type"])) for p in (created, added, delta))
    big = {**delta, "delta": "y" * 300}
    done = {"type": "response.completed", "response": {"id": "resp_f", "usage": None}}
    error = {"type": "error", "code": "rate_limit_exceeded", "message": "slow down"}
    return {
        "cut-at-event-boundary": head + _data(delta, str(delta["type"])),
        "error-event": head + _data(error, "error"),
        "cut-inside-event": head + _cut(_data(delta, str(delta["type"])), 10),
        "cut-inside-event-line": head + b"event: response.output_te",
        "cut-before-blank-line": head + _data(delta, str(delta["type"]))[:-1],
        "error-event-not-json": head + b"event: error\ndata: upstream exploded\n\n",
        "error-event-empty": head + b"event: error\ndata:\n\n",
        "garbage-html": head + HTML_PAGE,
        "garbage-binary": head + BINARY,
        "html-only": HTML_PAGE,
        "large-event": b"".join(_data(p, str(p["type"])) for p in (created, added, big, done)),
    }


def _gemini() -> dict[str, bytes]:
    def chunk(text: str) -> dict[str, Any]:
        return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}}]}

    head = _data(chunk("Hello"), end=b"\r\n\r\n")
    more = _data(chunk(" world"), end=b"\r\n\r\n")
    error = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    return {
        "cut-at-event-boundary": head + more,
        "error-event": head + _data(error, end=b"\r\n\r\n"),
        "cut-inside-event": head + _cut(more, 9),
        "cut-before-blank-line": head + more[:-2],
        "garbage-html": head + HTML_PAGE,
        "garbage-binary": head + BINARY,
        "html-only": HTML_PAGE,
    }


def failure_inputs() -> dict[str, dict[str, bytes]]:
    """Upstream folder (chat, anthropic, responses, gemini) -> failure name -> body."""
    return {
        "chat": _chat(),
        "anthropic": _anthropic(),
        "responses": _responses(),
        "gemini": _gemini(),
    }


def whole_stream(folder: str, text: str) -> bytes:
    """A complete stream of upstream `folder` answering `text` in one event."""
    if folder == "chat":
        role = {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]}
        stop = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        return _data(role) + _data(stop) + b"data: [DONE]\n\n"
    if folder == "anthropic":
        events: list[dict[str, Any]] = [
            {"type": "message_start", "message": {"id": "msg_f", "usage": {"input_tokens": 3}}},
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 2},
            },
            {"type": "message_stop"},
        ]
        return b"".join(_data(e, e["type"]) for e in events)
    if folder == "responses":
        item = {"id": "msg_f", "type": "message", "role": "assistant", "content": []}
        events = [
            {"type": "response.created", "response": {"id": "resp_f"}},
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {
                "type": "response.output_text.delta",
                "output_index": 0,
                "content_index": 0,
                "delta": text,
            },
            {"type": "response.completed", "response": {"id": "resp_f", "usage": None}},
        ]
        return b"".join(_data(e, e["type"]) for e in events)
    assert folder == "gemini"
    candidate = {"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}
    return _data({"candidates": [candidate]}, end=b"\r\n\r\n")
