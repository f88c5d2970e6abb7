"""OpenAI Chat Completions stream -> Anthropic Messages SSE: the pure-Python transducer.

This is the twin of rust/src/messages_via_chat/stream.rs and must produce the same bytes for
the same input, however it is split; tests/test_differential.py holds them together.

One object per response stream: `feed(bytes) -> bytes` takes any slice of the upstream body,
`finish() -> bytes` is called at upstream EOF. The output grammar (what Claude Code and the
SDKs require): message_start first; blocks opened and closed one at a time with indices
0, 1, 2...; upstream reasoning -> a thinking block, content -> a text block, each tool call ->
a tool_use block; then one message_delta (after the usage that follows OpenAI's finish chunk)
and message_stop. An upstream error, a malformed event or a cut-off stream ends the output
with an `error` event and no message_stop, so it never looks like a complete reply.

Upstream chunk fields are read strictly where content could be lost (a string field that is
not a string, a tool call that is not an object, ... is "an event of an unexpected shape") and
leniently for usage counts (a count that is not a non-negative integer is ignored).
"""

from __future__ import annotations

from typing import Any

from ..errors import ANTHROPIC_ERROR_TYPES, upstream_error
from ..json_read import (
    JSON_WS,
    BadShape,
    JSONDecodeError,
    loads_lossy,
    opt_dict,
    opt_index,
    opt_list,
    opt_str,
    uint,
)
from ..signature import sign_thinking
from ..sse import SseParser
from . import stream_output as out
from .mapping import input_tokens as _input_tokens
from .mapping import stop_reason as _stop_reason

DEFAULT_MAX_EVENT_BYTES = 16 * 1024 * 1024

_NO_BLOCK, _TEXT, _THINKING, _TOOL = 0, 1, 2, 3

MSG_INVALID_JSON = "the upstream sent an event that is not valid JSON"
MSG_BAD_SHAPE = "the upstream sent an event of an unexpected shape"
MSG_CUT_OFF = "the upstream stream ended before the response was complete"
MSG_INTERLEAVED = "the upstream interleaved the arguments of parallel tool calls"


class _ToolCall:
    __slots__ = ("block", "id", "upstream_index")

    def __init__(self, upstream_index: int | None, tool_id: str, block: int) -> None:
        self.upstream_index = upstream_index
        self.id = tool_id
        self.block = block


class MessagesViaChatStream:
    """Translate one OpenAI Chat Completions SSE body into Anthropic Messages SSE events."""

    def __init__(
        self,
        message_id: str,
        model: str,
        input_tokens: int,
        *,
        signing_key: bytes | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    ) -> None:
        self._message_id = message_id
        self._model = model
        self._estimate = input_tokens
        self._signing_key = signing_key or None
        self._parser = SseParser(max_event_bytes)
        self._started = False
        self._ended = False
        self._complete = False
        self._error: tuple[str, str] | None = None
        # Content blocks: the next index, and what the open one is (one is open at a time).
        self._blocks = 0
        self._open = _NO_BLOCK
        self._open_tool: _ToolCall | None = None
        self._thinking: list[str] = []
        self._tools: list[_ToolCall] = []
        # What the upstream said about the end.
        self._finish_reason: str | None = None
        self._prompt_tokens: int | None = None
        self._completion_tokens: int | None = None
        self._cached_tokens: int | None = None
        self._stop_reason: str | None = None

    # -- the transducer contract -------------------------------------------------------

    def feed(self, chunk: bytes) -> bytes:
        if self._ended:
            return b""
        parts: list[bytes] = []
        if not self._started:
            self._start(parts)
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
        if not self._started:
            self._start(parts)
        parser = self._parser
        for event, data in parser.finish():
            self._event(event, data, parts)
            if self.finished:  # (the property: mypy keeps `_ended` narrowed to False)
                return b"".join(parts)
        if parser.error is not None:
            self._fail("api_error", parser.error, parts)
        elif self._finish_reason is not None:
            self._end(parts)
        else:
            self._fail("api_error", MSG_CUT_OFF, parts)
        return b"".join(parts)

    def ping(self) -> bytes:
        """A keepalive for a silent upstream (nothing once the stream has ended)."""
        if self._ended:
            return b""
        parts: list[bytes] = []
        if not self._started:
            self._start(parts)
        parts.append(out.PING)
        return b"".join(parts)

    def fail(self, error_type: str, message: str) -> bytes:
        """End the stream with an error event (e.g. the upstream connection broke)."""
        if error_type not in ANTHROPIC_ERROR_TYPES:
            error_type = "api_error"
        if self._ended:
            return b""
        parts: list[bytes] = []
        if not self._started:
            self._start(parts)
        self._fail(error_type, message, parts)
        return b"".join(parts)

    @property
    def finished(self) -> bool:
        """The output has ended, with message_stop or with an error event."""
        return self._ended

    @property
    def complete(self) -> bool:
        """The output ended with message_stop: the reply is whole."""
        return self._complete

    @property
    def error(self) -> tuple[str, str] | None:
        """(error type, message) of the error event that ended the output, if any."""
        return self._error

    @property
    def has_content(self) -> bool:
        """At least one content block was started."""
        return self._blocks > 0

    @property
    def stop_reason(self) -> str | None:
        return self._stop_reason

    @property
    def usage(self) -> tuple[int, int, int]:
        """(input_tokens, cache_read_input_tokens, output_tokens), as Anthropic counts them."""
        cached = self._cached_tokens or 0
        if self._prompt_tokens is None:
            prompt = self._estimate
        else:
            prompt = _input_tokens(self._prompt_tokens, cached)
        return prompt, cached, self._completion_tokens or 0

    # -- upstream events -----------------------------------------------------------------

    def _event(self, event: bytes | None, data: bytes, parts: list[bytes]) -> None:
        stripped = data.strip(JSON_WS)
        if event == b"error":
            try:
                payload: object = loads_lossy(data)
            except JSONDecodeError:
                text = data.decode("utf-8", "replace")
                payload = text if text.strip(" \t\n\r") else None
            self._fail(*upstream_error(payload), parts)
            return
        if not stripped:
            return
        if stripped == b"[DONE]":
            self._end(parts)
            return
        try:
            chunk = loads_lossy(data)
        except JSONDecodeError:
            self._fail("api_error", MSG_INVALID_JSON, parts)
            return
        try:
            self._chunk(chunk, parts)
        except BadShape:
            self._fail("api_error", MSG_BAD_SHAPE, parts)

    def _chunk(self, chunk: object, parts: list[bytes]) -> None:
        try:
            error, usage, choices = _read_chunk(chunk)
        except BadShape:
            # An error payload is reported as such even when the rest of the chunk is odd.
            if type(chunk) is dict and chunk.get("error") is not None:
                self._fail(*upstream_error(chunk), parts)
            else:
                self._fail("api_error", MSG_BAD_SHAPE, parts)
            return
        if error is not None:
            self._fail(*upstream_error(chunk), parts)
            return
        if usage is not None:
            self._usage(usage)
        for delta, finish_reason in choices:
            if delta is not None:
                self._delta(delta, parts)
                if self._ended:
                    return
            if finish_reason is not None:
                self._finish_reason = finish_reason
                self._close(parts)

    def _delta(self, delta: _Delta, parts: list[bytes]) -> None:
        reasoning, content, refusal, tool_calls = delta
        if reasoning:
            if self._open != _THINKING:
                self._close(parts)
                self._open_block(_THINKING, parts)
            self._thinking.append(reasoning)
            parts.append(out.thinking_delta(self._blocks - 1, reasoning))
        for text in (content, refusal):
            if text:
                if self._open != _TEXT:
                    self._close(parts)
                    self._open_block(_TEXT, parts)
                parts.append(out.text_delta(self._blocks - 1, text))
        for call in tool_calls:
            self._tool_call(call, parts)
            if self._ended:
                return

    def _tool_call(self, call: _ToolCallDelta, parts: list[bytes]) -> None:
        upstream_index, tool_id, name, arguments = call
        tool = self._find_tool(upstream_index, tool_id)
        if tool is None:
            self._close(parts)
            tool = _ToolCall(
                upstream_index,
                tool_id or f"toolu_{self._message_id}_{len(self._tools)}",
                self._blocks,
            )
            self._tools.append(tool)
            parts.append(out.tool_use_start(self._blocks, tool.id, name or ""))
            self._blocks += 1
            self._open = _TOOL
            self._open_tool = tool
        if arguments:
            if tool is not self._open_tool:
                self._fail("api_error", MSG_INTERLEAVED, parts)
                return
            parts.append(out.input_json_delta(tool.block, arguments))

    def _find_tool(self, upstream_index: int | None, tool_id: str | None) -> _ToolCall | None:
        # Chat tool calls are keyed by `index`; Mistral-style calls without one by `id`;
        # a fragment with neither continues the latest call.
        if upstream_index is not None:
            for tool in self._tools:
                if tool.upstream_index == upstream_index:
                    return tool
            return None
        if tool_id:
            for tool in self._tools:
                if tool.id == tool_id:
                    return tool
            return None
        return self._tools[-1] if self._tools else None

    def _usage(self, usage: dict[str, Any]) -> None:
        prompt = uint(usage.get("prompt_tokens"))
        if prompt is not None:
            self._prompt_tokens = prompt
        completion = uint(usage.get("completion_tokens"))
        if completion is not None:
            self._completion_tokens = completion
        details = usage.get("prompt_tokens_details")
        cached = uint(details.get("cached_tokens")) if type(details) is dict else None
        if cached is None:
            cached = uint(usage.get("prompt_cache_hit_tokens"))  # DeepSeek
        if cached is not None:
            self._cached_tokens = cached

    # -- output --------------------------------------------------------------------------

    def _start(self, parts: list[bytes]) -> None:
        self._started = True
        parts.append(out.message_start(self._message_id, self._model, self._estimate))

    def _open_block(self, kind: int, parts: list[bytes]) -> None:
        index = self._blocks
        self._blocks += 1
        self._open = kind
        if kind == _TEXT:
            parts.append(out.text_start(index))
        else:
            parts.append(out.thinking_start(index))

    def _close(self, parts: list[bytes]) -> None:
        if self._open == _NO_BLOCK:
            return
        index = self._blocks - 1
        if self._open == _THINKING:
            if self._signing_key is not None:
                signature = sign_thinking("".join(self._thinking), self._signing_key)
                parts.append(out.signature_delta(index, signature))
            self._thinking = []
        parts.append(out.block_stop(index))
        self._open = _NO_BLOCK
        self._open_tool = None

    def _end(self, parts: list[bytes]) -> None:
        self._close(parts)
        self._stop_reason = _stop_reason(self._finish_reason, bool(self._tools))
        input_tokens, cached, output_tokens = self.usage
        parts.append(out.message_delta(self._stop_reason, input_tokens, cached, output_tokens))
        parts.append(out.MESSAGE_STOP)
        self._ended = True
        self._complete = True

    def _fail(self, error_type: str, message: str, parts: list[bytes]) -> None:
        parts.append(out.error(error_type, message))
        self._error = (error_type, message)
        self._ended = True


# -- reading an upstream chunk -----------------------------------------------------------
# The whole chunk is checked before any of it is acted on, as the native side's typed
# deserialisation does, so a malformed chunk produces no partial output.

_ToolCallDelta = tuple[int | None, str | None, str | None, str | None]  # index, id, name, args
_Delta = tuple[
    str | None, str | None, str | None, list[_ToolCallDelta]
]  # reasoning, content, refusal


def _read_chunk(
    chunk: object,
) -> tuple[object, dict[str, Any] | None, list[tuple[_Delta | None, str | None]]]:
    """(error, usage, [(delta, finish_reason) of the first choice]) or BadShape."""
    if type(chunk) is not dict:
        raise BadShape
    usage = chunk.get("usage")
    if type(usage) is not dict:
        groq = chunk.get("x_groq")
        usage = groq.get("usage") if type(groq) is dict else None
        if type(usage) is not dict:
            usage = None
    read: list[tuple[_Delta | None, str | None]] = []
    for choice in opt_list(chunk, "choices") or ():
        if type(choice) is not dict:
            raise BadShape
        index = opt_index(choice, "index")
        delta = opt_dict(choice, "delta")
        finish_reason = opt_str(choice, "finish_reason")
        read_delta = _read_delta(delta) if delta is not None else None
        if not index:  # only the first choice is translated (n > 1 is refused upstream)
            read.append((read_delta, finish_reason))
    return chunk.get("error"), usage, read


def _read_delta(delta: dict[str, Any]) -> _Delta:
    reasoning = opt_str(delta, "reasoning_content")
    fallback = opt_str(delta, "reasoning")
    if not reasoning:
        reasoning = fallback  # Groq/OpenRouter name; some upstreams send both, duplicated
    calls: list[_ToolCallDelta] = []
    for call in opt_list(delta, "tool_calls") or ():
        if type(call) is not dict:
            raise BadShape
        upstream_index = opt_index(call, "index")
        tool_id = opt_str(call, "id")
        function = opt_dict(call, "function")
        name = arguments = None
        if function is not None:
            name = opt_str(function, "name")
            arguments = opt_str(function, "arguments")
        calls.append((upstream_index, tool_id, name, arguments))
    return reasoning, opt_str(delta, "content"), opt_str(delta, "refusal"), calls
