"""Gemini ``streamGenerateContent?alt=sse`` stream -> canonical events (twin of
rust/src/gemini/decoder.rs).

The input grammar: ``data: <GenerateContentResponse JSON>`` events (CRLF-framed as Gemini
sends them), no end marker: the stream ends at EOF after a chunk with a ``finishReason``.
The decisions are those of the non-streamed reader (hydra_proxy.gemini.response.reader), so a
streamed and a non-streamed reply give the same Message:

- Only ``candidates[0]`` is read. Parts in order: ``thought: true`` text -> a thinking
  block, streamed live; ``text`` (and ``executableCode`` / ``codeExecutionResult``, media
  notes) -> a text block (consecutive parts continue it); ``functionCall`` -> a tool_use
  block, id Gemini's when it is a valid Anthropic id, else ``tool_use_id(message_id, n)``
  with ``n`` the part's position in the reply (its index in the collapsed response).
- A ``thoughtSignature`` on any part ends the open thinking block (or an empty one
  opened for it) with a ``SignatureDelta`` carrying the proxy's ``gts`` carrier, placed
  just before the part's own block. Thinking that ends without one gets the proxy's
  reasoning-text signature (with a signing key). Without a key the carrier is made with
  the empty key, as the non-streamed reader does: Gemini 3 requires it back.
- Function-call arguments: ``args`` -> one ``ToolArgumentsDelta`` with the compact JSON.
  Streamed arguments (``willContinue: true`` on the call, then parts holding only
  ``partialArgs``: ``{jsonPath, stringValue | numberValue | boolValue | nullValue,
  willContinue}``, a string continued across pieces while its ``willContinue`` is true)
  are assembled per call into one JSON value, in the order of the paths, and sent as one
  delta when the call ends: at a part without ``willContinue`` (``functionCall: {}`` or
  the last piece), at another call or content part, or at the finish reason. Buffering
  keeps the JSON valid whatever order the paths come in; the tool block itself starts as
  soon as its name is known.
- ``finishReason`` and ``usageMetadata`` through hydra_proxy.gemini.mapping (tool_use
  when calls were made; the lost-tool-call reasons are an ``api_error``). Usage is
  cumulative, the last one wins; a count that is not a non-negative integer is ignored.
- ``promptFeedback.blockReason`` (the prompt was blocked, no candidate) -> ``refusal``;
  an ``error`` object -> an ``Error`` with the type hydra_proxy.gemini.errors gives it; a
  malformed chunk or a stream cut before a finish reason -> ``api_error``.
"""

from __future__ import annotations

import re
from typing import Any

from orjson import dumps

from ..canonical.message import tool_use_id
from ..canonical.tools import RAW_ARGUMENTS_KEY
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
from .chunk import Call, Chunk, Part, read_chunk
from .errors import gemini_error
from .mapping import ERROR_FINISH_REASONS, anthropic_usage, finish_error, stop_reason
from .thought_signature import sign_thought_signature

MSG_BAD_JSON_PATH = "the upstream sent a function-call argument path this proxy cannot read"
# Function-call arguments nested deeper than this are refused: orjson's serialiser stops there.
MAX_ARGUMENTS_DEPTH = 254
MSG_ARGUMENTS_TOO_DEEP = "the upstream sent function-call arguments nested deeper than 254 levels"

_NO_BLOCK, _TEXT, _THINKING, _TOOL = 0, 1, 2, 3
_ANTHROPIC_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
# `.key`, `[index]` or `['key']` after the leading `$`.
_PATH_STEP = re.compile(r"\.([A-Za-z0-9_$-]+)|\[([0-9]{1,9})\]|\['([^'\\]*)'\]")


class GeminiDecoder(StartsAtFirstBytes):
    def __init__(self, message_id: str, signing_key: bytes | None = None) -> None:
        self._message_id = message_id  # names the tool calls (tool_use_id)
        self._key = signing_key or b""
        super().__init__()
        self._blocks = 0  # the next block id; the open one is self._blocks - 1
        self._open = _NO_BLOCK
        self._thinking: list[str] = []  # the open thinking block's text, to sign
        self._parts = 0  # parts seen so far: the index of the next one
        self._calls = 0
        # The open streamed call's arguments (None: no call is streaming its arguments).
        self._pending: dict[str, Any] | None = None
        self._finish_reason: str | None = None
        self._finished = False
        self._prompt: int | None = None
        self._cached: int | None = None
        self._candidates: int | None = None
        self._thoughts: int | None = None

    def event(self, event: bytes | None, data: bytes, emit: Emit) -> None:
        if self._ended or not data.strip(JSON_WS):
            return
        try:
            chunk = loads_lossy(data)
        except JSONDecodeError:
            self._fail("api_error", MSG_INVALID_JSON, emit)
            return
        if type(chunk) is dict and type(chunk.get("error")) is dict:
            self._upstream_error(chunk, emit)
            return
        try:
            read = read_chunk(chunk)
        except BadShape:
            self._fail("api_error", MSG_BAD_SHAPE, emit)
            return
        self._chunk(read, emit)

    def finish(self, emit: Emit) -> None:
        if self._finished:
            self._end(emit)
        else:
            self._fail("api_error", MSG_CUT_OFF, emit)

    # -- one chunk ---------------------------------------------------------------------

    def _chunk(self, chunk: Chunk, emit: Emit) -> None:
        usage, blocked, parts, finish_reason, finish_message = chunk
        if usage is not None:
            self._read_usage(usage)
            emit(self._usage())
        for part in parts:
            self._part(part, emit)
            if self._ended:
                return
        if finish_reason is not None:
            if finish_reason in ERROR_FINISH_REASONS:
                error = finish_error(finish_reason, finish_message)
                assert error is not None
                self._fail(error.error_type, error.message, emit)
                return
            self._close(emit)
            self._finish_reason = finish_reason
            self._finished = True
        elif blocked and not parts:
            self._close(emit)
            self._finish_reason = "SAFETY"  # maps to refusal
            self._finished = True

    def _read_usage(self, meta: dict[str, Any]) -> None:
        prompt = uint(meta.get("promptTokenCount"))
        if prompt is not None:
            self._prompt = prompt
            self._cached = uint(meta.get("cachedContentTokenCount")) or 0
        candidates = uint(meta.get("candidatesTokenCount"))
        thoughts = uint(meta.get("thoughtsTokenCount"))
        if candidates is not None or thoughts is not None:
            self._candidates = candidates or 0
            self._thoughts = thoughts or 0

    def _usage(self) -> ev.Usage:
        """The counts so far, as Anthropic counts them (None: not reported yet)."""
        input_tokens, output_tokens, cache_read = anthropic_usage(
            self._prompt or 0, self._cached or 0, self._candidates or 0, self._thoughts or 0
        )
        has_prompt = self._prompt is not None
        return ev.Usage(
            input_tokens=input_tokens if has_prompt else None,
            cache_read_input_tokens=cache_read if has_prompt else None,
            output_tokens=output_tokens if self._candidates is not None else None,
            reasoning_tokens=self._thoughts,
        )

    def _upstream_error(self, chunk: dict[str, Any], emit: Emit) -> None:
        code = chunk["error"].get("code")
        status = code if type(code) is int and 400 <= code <= 599 else 500
        error = gemini_error(status, chunk)
        self._fail(error.error_type, error.message, emit)

    # -- one part ----------------------------------------------------------------------

    def _part(self, part: Part, emit: Emit) -> None:
        index = self._parts
        self._parts += 1
        thought, text, signature, call, other = part
        if self._pending is not None:
            if call is not None and call[0] is None:  # no name: this call's next piece
                self._continue_call(call, emit)
                return
            self._end_call(emit)
            if self._ended:
                return
        if thought:
            self._thought(text, signature, emit)
            return
        if signature is not None:
            self._close_thinking(signature, emit)
        elif self._open == _THINKING:
            self._close(emit)  # any other part ends the thinking (as not streamed)
        if call is not None:
            self._call(call, index, emit)
            return
        content = text if text is not None else other
        if content:
            self._text(content, emit)

    def _thought(self, text: str | None, signature: str | None, emit: Emit) -> None:
        """A thought part: its text streams into the open thinking block, and its signature
        (when it has one) closes that block."""
        if text:
            self._open_thinking(emit)
            if self._key:
                self._thinking.append(text)
            emit(ev.ThinkingDelta(self._blocks - 1, text))
        if signature is not None:
            self._close_thinking(signature, emit)

    def _text(self, content: str, emit: Emit) -> None:
        """A part's text (or the text a part shows) goes into the open text block, or opens
        one; whitespace alone opens none."""
        if content.strip():
            if self._open != _TEXT:
                self._close(emit)
                self._open_block(_TEXT, ev.Text(), emit)
        elif self._open != _TEXT:
            return  # whitespace: no block of its own (as not streamed)
        emit(ev.TextDelta(self._blocks - 1, content))

    def _call(self, call: Call, index: int, emit: Emit) -> None:
        name, call_id, args, partial, will_continue = call
        if name is None and args is None and not partial and not will_continue:
            return  # an empty `functionCall: {}` with no call open ends nothing
        self._close(emit)
        if call_id is None or not _ANTHROPIC_ID.fullmatch(call_id):
            call_id = tool_use_id(self._message_id, index)
        self._open_block(_TOOL, ev.ToolUse(call_id, name or ""), emit)
        self._calls += 1
        if not will_continue and not partial:
            if self._arguments(args, emit):
                self._close(emit)
            return
        self._pending = args if type(args) is dict else {}
        self._continue_call(call, emit)

    def _continue_call(self, call: Call, emit: Emit) -> None:
        assert self._pending is not None
        for path, value in call[3]:
            try:
                _assign(self._pending, path, value)
            except BadShape:
                self._fail("api_error", MSG_BAD_JSON_PATH, emit)
                return
        if not call[4]:
            self._end_call(emit)

    def _end_call(self, emit: Emit) -> None:
        arguments, self._pending = self._pending, None
        if self._arguments(arguments or None, emit):
            self._close(emit)

    def _arguments(self, args: object, emit: Emit) -> bool:
        """Emit a call's arguments; False when they are refused (the stream has failed)."""
        if args is None:
            return True
        try:
            if type(args) is not dict:
                args = {RAW_ARGUMENTS_KEY: dumps(args).decode()}
            text = dumps(args).decode()
        except TypeError:  # orjson: nested deeper than MAX_ARGUMENTS_DEPTH
            self._fail("api_error", MSG_ARGUMENTS_TOO_DEEP, emit)
            return False
        emit(ev.ToolArgumentsDelta(self._blocks - 1, text))
        return True

    # -- blocks ------------------------------------------------------------------------

    def _open_block(self, kind: int, block: ev.Text | ev.Thinking | ev.ToolUse, emit: Emit) -> None:
        self._open = kind
        emit(ev.BlockStart(self._blocks, block))
        self._blocks += 1

    def _open_thinking(self, emit: Emit) -> None:
        if self._open != _THINKING:
            self._close(emit)
            self._open_block(_THINKING, ev.Thinking(), emit)

    def _close_thinking(self, thought_signature: str, emit: Emit) -> None:
        """End the thinking so far with the carrier of `thought_signature`."""
        carrier = sign_thought_signature(thought_signature, self._key)
        if carrier is None:  # not base64: not a signature Gemini could take back
            if self._open == _THINKING:
                self._close(emit)
            return
        self._open_thinking(emit)
        self._thinking = []
        self._open = _NO_BLOCK
        emit(ev.SignatureDelta(self._blocks - 1, carrier))
        emit(ev.BlockStop(self._blocks - 1))

    def _close(self, emit: Emit) -> None:
        if self._pending is not None and self._open == _TOOL:
            self._end_call(emit)
            return
        if self._open == _NO_BLOCK:
            return
        block = self._blocks - 1
        if self._open == _THINKING:
            if self._key:
                emit(ev.SignatureDelta(block, sign_thinking("".join(self._thinking), self._key)))
            self._thinking = []
        self._open = _NO_BLOCK
        emit(ev.BlockStop(block))

    def _end(self, emit: Emit) -> None:
        self._close(emit)
        emit(ev.StopReason(stop_reason(self._finish_reason, self._calls > 0)))
        emit(ev.MessageStop())
        self._ended = True


def _assign(root: dict[str, Any], path: str, value: object) -> None:
    """Set the value at a ``$.a.b[0]`` path of `root`, appending to a string already there
    (the pieces of a streamed string). BadShape for a path it cannot follow."""
    if not path.startswith("$"):
        raise BadShape
    steps: list[str | int] = []
    at = 1
    while at < len(path):
        match = _PATH_STEP.match(path, at)
        if match is None:
            raise BadShape
        key, index, quoted = match.groups()
        steps.append(int(index) if index is not None else key if key is not None else quoted)
        at = match.end()
    if not steps:
        raise BadShape
    node: Any = root
    for step, following in zip(steps, [*steps[1:], None], strict=True):
        if type(node) is list:
            if not isinstance(step, int) or step > len(node):
                raise BadShape  # an index must continue the array, not leave holes
            if step == len(node):
                node.append(None)
        elif type(node) is not dict or isinstance(step, int):
            raise BadShape
        if following is None:
            current = node.get(step) if isinstance(node, dict) else node[step]
            if type(value) is str and type(current) is str:
                value = current + value
            node[step] = value
            return
        child = node.get(step) if isinstance(node, dict) else node[step]
        if child is None:
            child = [] if isinstance(following, int) else {}
            node[step] = child
        node = child
