"""Anthropic Messages stream -> canonical events (twin of rust/src/anthropic/decoder.rs).

The input grammar: `event: <type>` / `data: <event JSON>` pairs (the `event:` line is
optional; the payload's `type` wins): message_start, content blocks (start, deltas, stop,
by `index`), message_delta (stop reason, usage), message_stop; ping; error. The canonical
model is Anthropic's, so this is mostly reading: each event is read and checked whole
before any of it is acted on; deltas are matched to the block they name (a delta for a
block never started is an error, one of a kind the block cannot hold is skipped, as are
event types the proxy does not know, as the Anthropic docs ask of clients); a block may
start with content (its first delta); blocks a lenient upstream never stopped are stopped
at message_stop; EOF after message_delta's stop reason ends the message, EOF before it is
a cut-off stream. An upstream error or a malformed event is an `Error` event.
"""

from __future__ import annotations

from typing import Any

from orjson import dumps

from ..errors import upstream_error
from ..json_read import (
    JSON_WS,
    BadShape,
    JSONDecodeError,
    loads_lossy,
    uint,
)
from ..stream import events as ev
from ..stream.messages import MSG_BAD_SHAPE, MSG_CUT_OFF, MSG_INVALID_JSON
from ..stream.transducer import Decoding, Emit
from .chunk import read_chunk

MSG_UNKNOWN_BLOCK = "the upstream sent a delta for a content block it never started"

# What `_unreadable` is told of an event whose data is not JSON.
_NOT_JSON = object()

# What an open block is, for matching its deltas.
_TEXT, _THINKING, _TOOL, _REDACTED, _SERVER_TOOL = 1, 2, 3, 4, 5


def _citation_text(citation: Any) -> str:
    """A citation as JSON text. The native reader passes the upstream's text on whole; a
    citation nested deeper than orjson writes (254 levels, parsed up to 1024) keeps its
    string members, all that the encoders read of it (its URL and title)."""
    try:
        return dumps(citation).decode()
    except TypeError:
        if type(citation) is not dict:
            return "null"
        return dumps({k: v for k, v in citation.items() if type(v) is str}).decode()


class AnthropicDecoder(Decoding):
    def __init__(self) -> None:
        super().__init__()
        self._blocks: dict[int, int] = {}  # open content blocks by upstream index
        self._has_stop_reason = False  # message_delta said how the message ended

    # The dispatch of a state machine over the event kinds, on the per-event path.
    def event(self, event: bytes | None, data: bytes, emit: Emit) -> None:  # noqa: C901
        if self._ended:
            return
        if not data.strip(JSON_WS):
            if event == b"error":
                self._fail(*upstream_error(None), emit)
            return
        try:
            payload = loads_lossy(data)
        except JSONDecodeError:
            self._unreadable(event == b"error", data, _NOT_JSON, emit)
            return
        try:
            kind, index, block, delta, usage, message, has_error = read_chunk(payload)
        except BadShape:
            self._unreadable(event == b"error", data, payload, emit)
            return
        if kind is None:
            kind = event.decode("utf-8", "replace") if event is not None else None
        if kind == "error" or event == b"error" or has_error:
            self._fail(*upstream_error(payload), emit)
            return
        if usage is not None:
            emit(_usage(usage))
        if kind == "message_start":
            emit(ev.MessageStart(*message))
        elif kind == "content_block_start":
            self._block_start(index, block, emit)
        elif kind == "content_block_delta":
            self._block_delta(index, delta, emit)
        elif kind == "content_block_stop":
            self._block_stop(index, emit)
        elif kind == "message_delta":
            self._message_delta(delta, emit)
        elif kind == "message_stop":
            self._end(emit)
        elif kind == "ping":
            emit(ev.Ping())
        # Other (future) event types are ignored, as the Anthropic docs ask of clients.

    def _unreadable(self, is_error_event: bool, data: bytes, payload: object, emit: Emit) -> None:
        """An event that cannot be read (`payload` not JSON, or of a shape it cannot have):
        the upstream's error when it says it is one, else a malformed stream."""
        if payload is _NOT_JSON:
            if is_error_event:
                self._fail(*upstream_error(data.decode("utf-8", "replace")), emit)
            else:
                self._fail("api_error", MSG_INVALID_JSON, emit)
        elif is_error_event or (type(payload) is dict and payload.get("error") is not None):
            self._fail(*upstream_error(payload), emit)
        else:
            self._fail("api_error", MSG_BAD_SHAPE, emit)

    def _message_delta(self, delta: Any, emit: Emit) -> None:
        if delta is not None and delta[5] is not None:
            self._has_stop_reason = True
            emit(ev.StopReason(delta[5]))

    def finish(self, emit: Emit) -> None:
        if self._has_stop_reason:
            self._end(emit)  # message_delta said how it ended; message_stop went missing
        else:
            self._fail("api_error", MSG_CUT_OFF, emit)

    def _block_start(self, index: int | None, block: Any, emit: Emit) -> None:
        block_type, tool_id, name, text, thinking, data, tool_use_id, content = block or (None,) * 8
        key = index or 0
        kind: ev.BlockKind
        if block_type == "text":
            open_, kind = _TEXT, ev.Text()
        elif block_type == "thinking":
            open_, kind = _THINKING, ev.Thinking()
        elif block_type == "redacted_thinking":
            open_, kind = _REDACTED, ev.RedactedThinking(data or "")
        elif block_type == "tool_use":
            open_, kind = _TOOL, ev.ToolUse(tool_id or "", name or "")
        elif block_type == "server_tool_use" and name == "web_search":
            open_, kind = _SERVER_TOOL, ev.WebSearch(tool_id or "")
        elif block_type == "web_search_tool_result":
            open_, kind = _SERVER_TOOL, ev.WebSearchResults(tool_use_id or "")
        else:  # other server tools and their results: run by Anthropic
            open_, kind = _SERVER_TOOL, ev.ServerTool(block_type or "")
        emit(ev.BlockStart(key, kind))
        if type(kind) is ev.WebSearchResults and type(content) is list:
            # A list of results (an error is an object: no results).
            for result in content:
                if type(result) is dict and result.get("type") == "web_search_result":
                    url, title = result.get("url"), result.get("title")
                    if type(url) is str and url:
                        emit(ev.SearchResult(key, url, title if type(title) is str else ""))
        # A block may start with content; it is the first delta.
        if open_ == _TEXT and text:
            emit(ev.TextDelta(key, text))
        elif open_ == _THINKING and thinking:
            emit(ev.ThinkingDelta(key, thinking))
        self._blocks[key] = open_

    def _block_delta(self, index: int | None, delta: Any, emit: Emit) -> None:
        key = index or 0
        open_ = self._blocks.get(key)
        if open_ is None:
            self._fail("api_error", MSG_UNKNOWN_BLOCK, emit)
            return
        if delta is None:
            return
        delta_type, text, thinking, signature, partial_json, _, citation = delta
        if delta_type == "text_delta" and open_ == _TEXT:
            if text:
                emit(ev.TextDelta(key, text))
        elif delta_type == "thinking_delta" and open_ == _THINKING:
            if thinking:
                emit(ev.ThinkingDelta(key, thinking))
        elif delta_type == "signature_delta" and open_ == _THINKING:
            emit(ev.SignatureDelta(key, signature or ""))
        elif delta_type == "input_json_delta" and open_ in (_TOOL, _SERVER_TOOL):
            if partial_json:
                emit(ev.ToolArgumentsDelta(key, partial_json))
        elif delta_type == "citations_delta" and open_ == _TEXT and citation is not None:
            emit(ev.CitationDelta(key, _citation_text(citation)))
        # Any other delta is of a kind the block cannot hold.

    def _block_stop(self, index: int | None, emit: Emit) -> None:
        key = index or 0
        if self._blocks.pop(key, None) is None:
            self._fail("api_error", MSG_UNKNOWN_BLOCK, emit)
            return
        emit(ev.BlockStop(key))

    def _end(self, emit: Emit) -> None:
        for key in sorted(self._blocks):
            emit(ev.BlockStop(key))  # blocks a lenient upstream never stopped
        self._blocks.clear()
        emit(ev.MessageStop())
        self._ended = True


def _usage(usage: dict[str, Any]) -> ev.Usage:
    return ev.Usage(
        uint(usage.get("input_tokens")),
        uint(usage.get("cache_read_input_tokens")),
        uint(usage.get("cache_creation_input_tokens")),
        uint(usage.get("output_tokens")),
    )
