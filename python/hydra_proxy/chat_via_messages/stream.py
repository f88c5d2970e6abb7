"""Anthropic Messages stream -> OpenAI Chat Completions chunks: the pure-Python transducer.

Twin of rust/src/chat_via_messages/stream.rs: the same bytes for the same input, however it
is split (tests/test_differential_chat.py holds them together). Same contract as the other
direction: `feed(bytes) -> bytes`, `finish() -> bytes` at upstream EOF.

Output grammar (what Zed and the OpenAI SDKs require): a role chunk first; text ->
`delta.content`; thinking -> `delta.reasoning_content`; each tool_use block -> a Chat tool
call whose `index` counts tool calls (not content blocks), with `id` and `name` on its first
chunk only and its input as `arguments` fragments ("{}" for a tool without arguments); then,
at message_stop, the continuation suffix (when enabled and there was thinking), the finish
chunk, the usage chunk (`choices: []`, when asked) and `data: [DONE]`. Every chunk has
`choices[].index`. Upstream `ping` becomes an SSE comment. An upstream error, a malformed
event or a cut-off stream ends the output with an error chunk (`{"error": {...}}`) and no
[DONE]. Server-tool blocks (web search and the like, run by Anthropic) and citations have no
Chat form and are not sent; their text answer is.
"""

from __future__ import annotations

from typing import Any

from ..continuation import Block, Redacted, Thinking, encode
from ..errors import ANTHROPIC_ERROR_TYPES, upstream_error
from ..json_read import (
    JSON_WS,
    BadShape,
    JSONDecodeError,
    loads_lossy,
    opt_dict,
    opt_index,
    opt_str,
    uint,
)
from ..sse import SseParser
from . import stream_output as out

DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024

MSG_INVALID_JSON = "the upstream sent an event that is not valid JSON"
MSG_BAD_SHAPE = "the upstream sent an event of an unexpected shape"
MSG_CUT_OFF = "the upstream stream ended before the response was complete"
MSG_UNKNOWN_BLOCK = "the upstream sent a delta for a content block it never started"

# Anthropic stop_reason -> Chat finish_reason.
FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}

# Block kinds.
_TEXT, _THINKING, _TOOL, _REDACTED, _OTHER = 1, 2, 3, 4, 5


class _Block:
    __slots__ = ("data", "kind", "sent_arguments", "signature", "text", "tool")

    def __init__(self, kind: int, tool: int = -1) -> None:
        self.kind = kind
        self.tool = tool
        self.text: list[str] = []
        self.signature = ""
        self.data = ""
        self.sent_arguments = False


# One upstream event, read and checked whole before it is acted on.
_Event = tuple[
    str | None,  # type
    int | None,  # index
    tuple[str | None, str | None, str | None, str | None, str | None, str | None] | None,
    # content_block: type, id, name, text, thinking, data
    tuple[str | None, str | None, str | None, str | None, str | None, str | None] | None,
    # delta: type, text, thinking, signature, partial_json, stop_reason
    dict[str, Any] | None,  # usage (message_start's message.usage or message_delta's usage)
    bool,  # has a non-null `error`
]


class ChatViaMessagesStream:
    """Translate one Anthropic Messages SSE body into OpenAI Chat Completions chunks."""

    def __init__(
        self,
        completion_id: str,
        model: str,
        created: int,
        *,
        include_usage: bool = False,
        continuation_key: bytes | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        self._out = out.ChunkWriter(completion_id, model, created)
        self._include_usage = include_usage
        self._continuation_key = continuation_key or None
        self._parser = SseParser(max_event_bytes)
        self._started = False
        self._ended = False
        self._complete = False
        self._error: tuple[str, str] | None = None
        self._blocks: dict[int, _Block] = {}
        self._tools = 0
        self._thinking: list[Block] = []  # finished thinking/redacted blocks, for the suffix
        self._stop_reason: str | None = None
        self._finish_reason: str | None = None
        self._input = 0
        self._cache_read = 0
        self._cache_creation = 0
        self._output = 0

    # -- the transducer contract -------------------------------------------------------

    def feed(self, chunk: bytes) -> bytes:
        if self._ended:
            return b""
        parts: list[bytes] = []
        parser = self._parser
        for event, data in parser.feed(chunk):
            self._event(event, data, parts)
            if self.finished:  # (the property: mypy keeps `_ended` narrowed to False)
                return b"".join(parts)
        if parser.error is not None:
            self._fail("api_error", parser.error, parts)
        return b"".join(parts)

    def finish(self) -> bytes:
        if self._ended:
            return b""
        parts: list[bytes] = []
        parser = self._parser
        for event, data in parser.finish():
            self._event(event, data, parts)
            if self.finished:
                return b"".join(parts)
        if parser.error is not None:
            self._fail("api_error", parser.error, parts)
        elif self._stop_reason is not None:
            self._end(parts)  # message_delta said how it ended; message_stop went missing
        else:
            self._fail("api_error", MSG_CUT_OFF, parts)
        return b"".join(parts)

    def ping(self) -> bytes:
        return b"" if self._ended else out.PING

    def fail(self, error_type: str, message: str) -> bytes:
        """End the stream with an error event (e.g. the upstream connection broke)."""
        if error_type not in ANTHROPIC_ERROR_TYPES:
            error_type = "api_error"
        if self._ended:
            return b""
        parts: list[bytes] = []
        self._fail(error_type, message, parts)
        return b"".join(parts)

    @property
    def finished(self) -> bool:
        return self._ended

    @property
    def complete(self) -> bool:
        return self._complete

    @property
    def error(self) -> tuple[str, str] | None:
        return self._error

    @property
    def has_content(self) -> bool:
        """A role chunk (and so a response) has been emitted."""
        return self._started

    @property
    def stop_reason(self) -> str | None:
        """The Chat finish_reason, once the stream has ended cleanly."""
        return self._finish_reason

    @property
    def usage(self) -> tuple[int, int, int]:
        """(prompt_tokens, cached_tokens, completion_tokens), as OpenAI counts them."""
        prompt = self._input + self._cache_read + self._cache_creation
        return prompt, self._cache_read, self._output

    # -- upstream events -----------------------------------------------------------------

    def _event(self, event: bytes | None, data: bytes, parts: list[bytes]) -> None:
        if not data.strip(JSON_WS):
            if event == b"error":
                self._fail(*upstream_error(None), parts)
            return
        try:
            payload = loads_lossy(data)
        except JSONDecodeError:
            if event == b"error":
                text = data.decode("utf-8", "replace")
                self._fail(*upstream_error(text), parts)
            else:
                self._fail("api_error", MSG_INVALID_JSON, parts)
            return
        try:
            kind, index, block, delta, usage, has_error = _read_event(payload)
        except BadShape:
            if event == b"error" or (type(payload) is dict and payload.get("error") is not None):
                self._fail(*upstream_error(payload), parts)
            else:
                self._fail("api_error", MSG_BAD_SHAPE, parts)
            return
        if kind is None:
            kind = event.decode("utf-8", "replace") if event is not None else None
        if kind == "error" or event == b"error" or has_error:
            self._fail(*upstream_error(payload), parts)
            return
        if usage is not None:
            self._usage(usage)
        if kind == "message_start":
            self._start(parts)
        elif kind == "content_block_start":
            self._block_start(index, block, parts)
        elif kind == "content_block_delta":
            self._block_delta(index, delta, parts)
        elif kind == "content_block_stop":
            self._block_stop(index, parts)
        elif kind == "message_delta":
            if delta is not None and delta[5] is not None:
                self._stop_reason = delta[5]
        elif kind == "message_stop":
            self._end(parts)
        elif kind == "ping":
            parts.append(out.PING)
        # Other (future) event types are ignored, as the Anthropic docs ask of clients.

    def _usage(self, usage: dict[str, Any]) -> None:
        # Anthropic counts are cumulative; a later event repeats or updates them.
        value = uint(usage.get("input_tokens"))
        if value is not None:
            self._input = value
        value = uint(usage.get("cache_read_input_tokens"))
        if value is not None:
            self._cache_read = value
        value = uint(usage.get("cache_creation_input_tokens"))
        if value is not None:
            self._cache_creation = value
        value = uint(usage.get("output_tokens"))
        if value is not None:
            self._output = value

    def _start(self, parts: list[bytes]) -> None:
        if not self._started:
            self._started = True
            parts.append(self._out.role())

    def _block_start(self, index: int | None, block: Any, parts: list[bytes]) -> None:
        self._start(parts)
        block_type, tool_id, name, text, thinking, data = block or (None,) * 6
        key = index or 0
        if block_type == "text":
            state = _Block(_TEXT)
            if text:
                parts.append(self._out.content(text))
        elif block_type == "thinking":
            state = _Block(_THINKING)
            if thinking:
                state.text.append(thinking)
                parts.append(self._out.reasoning(thinking))
        elif block_type == "redacted_thinking":
            state = _Block(_REDACTED)
            state.data = data or ""
        elif block_type == "tool_use":
            state = _Block(_TOOL, self._tools)
            self._tools += 1
            parts.append(self._out.tool_start(state.tool, tool_id or "", name or ""))
        else:
            state = _Block(_OTHER)  # server tools and their results: run by Anthropic
        self._blocks[key] = state

    def _block_delta(self, index: int | None, delta: Any, parts: list[bytes]) -> None:
        state = self._blocks.get(index or 0)
        if state is None:
            self._fail("api_error", MSG_UNKNOWN_BLOCK, parts)
            return
        if delta is None:
            return
        delta_type, text, thinking, signature, partial_json, _ = delta
        if delta_type == "text_delta" and state.kind == _TEXT:
            if text:
                parts.append(self._out.content(text))
        elif delta_type == "thinking_delta" and state.kind == _THINKING:
            if thinking:
                state.text.append(thinking)
                parts.append(self._out.reasoning(thinking))
        elif delta_type == "signature_delta" and state.kind == _THINKING:
            state.signature = signature or ""
        elif delta_type == "input_json_delta" and state.kind == _TOOL and partial_json:
            state.sent_arguments = True
            parts.append(self._out.tool_arguments(state.tool, partial_json))

    def _block_stop(self, index: int | None, parts: list[bytes]) -> None:
        state = self._blocks.pop(index or 0, None)
        if state is None:
            self._fail("api_error", MSG_UNKNOWN_BLOCK, parts)
            return
        self._close(state, parts)

    def _close(self, state: _Block, parts: list[bytes]) -> None:
        if state.kind == _TOOL and not state.sent_arguments:
            parts.append(self._out.tool_arguments(state.tool, "{}"))  # a tool without arguments
        elif state.kind == _THINKING:
            self._thinking.append(Thinking("".join(state.text), state.signature))
        elif state.kind == _REDACTED:
            self._thinking.append(Redacted(state.data))

    def _end(self, parts: list[bytes]) -> None:
        self._start(parts)
        for index in sorted(self._blocks):  # blocks a lenient upstream never stopped
            self._close(self._blocks.pop(index), parts)
        if self._continuation_key is not None and self._thinking:
            parts.append(self._out.reasoning(encode(self._thinking, self._continuation_key)))
        self._finish_reason = FINISH_REASONS.get(self._stop_reason or "end_turn", "stop")
        parts.append(self._out.finish(self._finish_reason))
        if self._include_usage:
            prompt, cached, completion = self.usage
            parts.append(self._out.usage(prompt, completion, cached))
        parts.append(out.DONE)
        self._ended = True
        self._complete = True

    def _fail(self, error_type: str, message: str, parts: list[bytes]) -> None:
        parts.append(out.error(error_type, message))
        self._error = (error_type, message)
        self._ended = True


def _read_event(payload: object) -> _Event:
    if type(payload) is not dict:
        raise BadShape
    block = opt_dict(payload, "content_block")
    delta = opt_dict(payload, "delta")
    message = opt_dict(payload, "message")
    usage = payload.get("usage")
    if type(usage) is not dict:
        inner = message.get("usage") if message is not None else None
        usage = inner if type(inner) is dict else None
    return (
        opt_str(payload, "type"),
        opt_index(payload, "index"),
        None
        if block is None
        else (
            opt_str(block, "type"),
            opt_str(block, "id"),
            opt_str(block, "name"),
            opt_str(block, "text"),
            opt_str(block, "thinking"),
            opt_str(block, "data"),
        ),
        None
        if delta is None
        else (
            opt_str(delta, "type"),
            opt_str(delta, "text"),
            opt_str(delta, "thinking"),
            opt_str(delta, "signature"),
            opt_str(delta, "partial_json"),
            opt_str(delta, "stop_reason"),
        ),
        usage,
        payload.get("error") is not None,
    )
