"""OpenAI Chat Completions stream -> canonical events (twin of rust/src/chat/decoder.rs).

The input grammar: `data: <chunk JSON>` events, ended by `data: [DONE]` (or by EOF after a
finish_reason); `event: error` or a chunk with a non-null `error` is an upstream error.
Chat has no content blocks: the decoder makes them, one open at a time, numbered 0, 1,
2...: reasoning (`reasoning_content`, or Groq/OpenRouter `reasoning`) -> a thinking block,
`content` and `refusal` -> a text block, each tool call -> a tool block. Its quirks live
here: tool calls keyed by `index` (Mistral: by `id`; a fragment with neither continues the
latest call), usage that counts cached tokens as prompt tokens (DeepSeek, Groq and
OpenRouter each put it elsewhere), and the proxy's `hydra1.` signature on thinking, since
Chat upstreams send none and Claude Code needs one to replay the thinking. A malformed
event, interleaved tool arguments or a cut-off stream is an `Error` event.

Upstream chunk fields are read strictly where content could be lost (a string field that is
not a string, a tool call that is not an object, ... is "an event of an unexpected shape") and
leniently for usage counts (a count that is not a non-negative integer is ignored).
"""

from __future__ import annotations

from typing import Any

from ..errors import upstream_error
from ..json_read import (
    JSON_WS,
    BadShape,
    JSONDecodeError,
    loads_lossy,
    uint,
)
from ..signature import sign_thinking
from ..stream import events as ev
from ..stream.messages import MSG_BAD_SHAPE, MSG_CUT_OFF, MSG_INVALID_JSON
from ..stream.transducer import Emit, StartsAtFirstBytes
from . import mapping
from .chunk import Delta, ToolCallDelta, read_chunk

MSG_INTERLEAVED = "the upstream interleaved the arguments of parallel tool calls"

_NO_BLOCK, _TEXT, _THINKING, _TOOL = 0, 1, 2, 3


class _ToolCall:
    __slots__ = ("block", "id", "upstream_index")

    def __init__(self, upstream_index: int | None, tool_id: str, block: int) -> None:
        self.upstream_index = upstream_index
        self.id = tool_id
        self.block = block


class ChatDecoder(StartsAtFirstBytes):
    def __init__(self, message_id: str, signing_key: bytes | None = None) -> None:
        self._message_id = message_id  # names the tool calls an upstream sent without an id
        self._signing_key = signing_key or None
        super().__init__()
        # The next block id, and what the open block is (one is open at a time).
        self._blocks = 0
        self._open = _NO_BLOCK
        self._open_tool: _ToolCall | None = None
        self._thinking: list[str] = []  # the open thinking block's text, to sign
        self._tools: list[_ToolCall] = []
        self._finish_reason: str | None = None
        self._prompt_tokens: int | None = None
        self._completion_tokens: int | None = None
        self._cached_tokens: int | None = None
        self._reasoning_tokens: int | None = None

    def event(self, event: bytes | None, data: bytes, emit: Emit) -> None:
        if self._ended:
            return  # the rest of a chunk after the end is not translated
        if event == b"error":
            try:
                payload: object = loads_lossy(data)
            except JSONDecodeError:
                text = data.decode("utf-8", "replace")
                payload = text if text.strip(" \t\n\r") else None
            self._fail(*upstream_error(payload), emit)
            return
        stripped = data.strip(JSON_WS)
        if not stripped:
            return
        if stripped == b"[DONE]":
            self._end(emit)
            return
        try:
            chunk = loads_lossy(data)
        except JSONDecodeError:
            self._fail("api_error", MSG_INVALID_JSON, emit)
            return
        try:
            self._chunk(chunk, emit)
        except BadShape:
            self._fail("api_error", MSG_BAD_SHAPE, emit)

    def finish(self, emit: Emit) -> None:
        if self._finish_reason is not None:
            self._end(emit)
        else:
            self._fail("api_error", MSG_CUT_OFF, emit)

    def _chunk(self, chunk: object, emit: Emit) -> None:
        try:
            error, usage, choices = read_chunk(chunk)
        except BadShape:
            # An error payload is reported as such even when the rest of the chunk is odd.
            if type(chunk) is dict and chunk.get("error") is not None:
                self._fail(*upstream_error(chunk), emit)
            else:
                self._fail("api_error", MSG_BAD_SHAPE, emit)
            return
        if error is not None:
            self._fail(*upstream_error(chunk), emit)
            return
        if usage is not None:
            self._read_usage(usage)
            emit(self._usage())
        for delta, finish_reason in choices:
            if delta is not None:
                self._delta(delta, emit)
                if self._ended:
                    return
            if finish_reason is not None:
                self._finish_reason = finish_reason
                self._close(emit)

    def _read_usage(self, usage: dict[str, Any]) -> None:
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
        details = usage.get("completion_tokens_details")
        reasoning = uint(details.get("reasoning_tokens")) if type(details) is dict else None
        if reasoning is not None:
            self._reasoning_tokens = reasoning

    def _usage(self) -> ev.Usage:
        """The counts so far, as Anthropic counts them."""
        cached = self._cached_tokens
        prompt = self._prompt_tokens
        return ev.Usage(
            input_tokens=None if prompt is None else mapping.input_tokens(prompt, cached or 0),
            cache_read_input_tokens=cached,
            output_tokens=self._completion_tokens,
            reasoning_tokens=self._reasoning_tokens,
        )

    def _delta(self, delta: Delta, emit: Emit) -> None:
        reasoning, content, refusal, tool_calls = delta
        if reasoning:
            if self._open != _THINKING:
                self._close(emit)
                self._open_block(_THINKING, emit)
            if self._signing_key is not None:
                self._thinking.append(reasoning)
            emit(ev.ThinkingDelta(self._blocks - 1, reasoning))
        for text in (content, refusal):
            if text:
                if self._open != _TEXT:
                    self._close(emit)
                    self._open_block(_TEXT, emit)
                emit(ev.TextDelta(self._blocks - 1, text))
        for call in tool_calls:
            self._tool_call(call, emit)
            if self._ended:
                return

    def _tool_call(self, call: ToolCallDelta, emit: Emit) -> None:
        upstream_index, tool_id, name, arguments = call
        tool = self._find_tool(upstream_index, tool_id)
        if tool is None:
            self._close(emit)
            tool = _ToolCall(
                upstream_index,
                tool_id or f"toolu_{self._message_id}_{len(self._tools)}",
                self._blocks,
            )
            emit(ev.BlockStart(tool.block, ev.ToolUse(tool.id, name or "")))
            self._tools.append(tool)
            self._blocks += 1
            self._open = _TOOL
            self._open_tool = tool
        if arguments:
            if tool is not self._open_tool:
                self._fail("api_error", MSG_INTERLEAVED, emit)
                return
            emit(ev.ToolArgumentsDelta(tool.block, arguments))

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

    def _open_block(self, kind: int, emit: Emit) -> None:
        block = self._blocks
        self._blocks += 1
        self._open = kind
        emit(ev.BlockStart(block, ev.Text() if kind == _TEXT else ev.Thinking()))

    def _close(self, emit: Emit) -> None:
        if self._open == _NO_BLOCK:
            return
        block = self._blocks - 1
        if self._open == _THINKING:
            if self._signing_key is not None:
                signature = sign_thinking("".join(self._thinking), self._signing_key)
                emit(ev.SignatureDelta(block, signature))
            self._thinking = []
        emit(ev.BlockStop(block))
        self._open = _NO_BLOCK
        self._open_tool = None

    def _end(self, emit: Emit) -> None:
        self._close(emit)
        emit(ev.StopReason(mapping.stop_reason(self._finish_reason, bool(self._tools))))
        emit(ev.MessageStop())
        self._ended = True
