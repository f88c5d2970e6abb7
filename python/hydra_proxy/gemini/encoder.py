"""Canonical events -> Gemini ``streamGenerateContent?alt=sse`` (twin of
rust/src/gemini/encoder.rs).

Output grammar (what the google-genai SDKs and Gemini CLI read): one chunk per part, in
order; text -> ``{"text"}``; thinking -> ``{"text", "thought": true}`` (not sent when the
client asked for no thoughts, `include_thoughts`); each tool call -> one whole
``functionCall {id, name, args}`` part when its block ends (Gemini sends calls whole; the
arguments are the call's JSON object as the upstream wrote it, ``{}`` for none, and
``{"_raw_arguments": <text>}`` for text that is no JSON object, so nothing is lost). Then
the final chunk: ``{"text": ""}``, the ``finishReason`` (`output.FINISH_REASONS`) and
``usageMetadata`` (prompt = input + cache reads + cache writes, candidates = output -
reasoning, thoughts = reasoning, cachedContentTokenCount = cache reads). Every chunk
carries ``modelVersion`` and ``responseId``.

Replay state: the thinking blocks an upstream needs back (those with a signature, and
redacted ones) are carried in the ``thoughtSignature`` of the next part sent (a text or
functionCall part, where Gemini puts its own; the final empty text part when none
follows), as `carrier.thought_signature` (only with a signing key).

An error ends the output with a Gemini error chunk ``{"error": {code, message, status}}``,
which the SDKs raise; never a finishReason. Pings and server-tool blocks and citations
have no Gemini form and are not sent.
"""

from __future__ import annotations

import orjson

from ..canonical.tools import RAW_ARGUMENTS_KEY
from ..continuation import Block, RedactedBlock, ThinkingBlock
from ..stream import events as ev
from ..stream.transducer import Ending
from . import output as out
from .carrier import thought_signature

__all__ = ["GeminiEncoder", "call_args"]

_TEXT, _THINKING, _TOOL, _REDACTED, _OTHER = 1, 2, 3, 4, 5
_JSON_WS = " \t\n\r"


def call_args(arguments: str) -> bytes:
    """A tool call's ``args``: its arguments when they are one JSON object, else a lossless
    stand-in."""
    text = arguments.strip(_JSON_WS)
    if not text:
        return b"{}"
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        value = None
    if isinstance(value, dict):
        return text.encode("utf-8", "surrogatepass")
    return b'{"%s":%s}' % (RAW_ARGUMENTS_KEY.encode(), orjson.dumps(arguments))


class _Block:
    __slots__ = ("arguments", "data", "kind", "name", "signature", "text", "tool_id")

    def __init__(self, kind: int) -> None:
        self.kind = kind
        self.text: list[str] = []
        self.signature = ""
        self.data = ""
        self.tool_id = ""
        self.name = ""
        self.arguments: list[str] = []


class GeminiEncoder(Ending):
    _error_event = staticmethod(out.error_chunk)

    def __init__(
        self,
        response_id: str,
        model: str,
        include_thoughts: bool,
        signing_key: bytes | None,
    ) -> None:
        super().__init__()
        self._out = out.ChunkWriter(response_id, model)
        self._include_thoughts = include_thoughts
        self._key = signing_key or None
        self._blocks: dict[int, _Block] = {}  # open blocks by decoder id
        self._replay: list[Block] = []  # thinking to carry on the next part
        self._sent = False
        self._finish_reason: str | None = None

    def event(self, parts: list[bytes], event: ev.Event) -> None:
        match event:
            case ev.TextDelta(block, text):
                state = self._blocks.get(block)
                if state is not None and state.kind == _TEXT:
                    self._part(parts, out.text_part(text, self._signature()))
            case ev.ThinkingDelta(block, thinking):
                state = self._blocks.get(block)
                if state is not None and state.kind == _THINKING:
                    state.text.append(thinking)
                    if self._include_thoughts:
                        self._part(parts, out.text_part(thinking, None, thought=True))
            case ev.ToolArgumentsDelta(block, partial_json):
                state = self._blocks.get(block)
                if state is not None and state.kind == _TOOL:
                    state.arguments.append(partial_json)
            case ev.SignatureDelta(block, signature):
                state = self._blocks.get(block)
                if state is not None and state.kind == _THINKING:
                    state.signature = signature
            case ev.BlockStart(block, kind):
                self._blocks[block] = self._block(kind)  # (a restarted id replaces the block)
            case ev.BlockStop(block):
                self._block_stop(parts, block)
            case _:
                # (message start, citations, search results and pings have no Gemini form)
                self._message_event(parts, event)

    @staticmethod
    def _block(kind: ev.BlockKind) -> _Block:
        match kind:
            case ev.Text():
                return _Block(_TEXT)
            case ev.Thinking():
                return _Block(_THINKING)
            case ev.RedactedThinking(data):
                state = _Block(_REDACTED)
                state.data = data
                return state
            case ev.ToolUse(tool_id, name):
                state = _Block(_TOOL)
                state.tool_id, state.name = tool_id, name
                return state
        return _Block(_OTHER)  # a server tool, run by the provider

    def _block_stop(self, parts: list[bytes], block: int) -> None:
        state = self._blocks.pop(block, None)
        if state is None:
            return
        if state.kind == _TOOL:
            args = call_args("".join(state.arguments))
            self._part(parts, out.call_part(state.tool_id, state.name, args, self._signature()))
        elif state.kind == _THINKING and state.signature:
            self._replay.append(ThinkingBlock("".join(state.text), state.signature))
        elif state.kind == _REDACTED:
            self._replay.append(RedactedBlock(state.data))

    def _signature(self) -> str | None:
        """The carrier of the thinking waiting for a part (None: there is none)."""
        if not self._replay:
            return None
        blocks, self._replay = self._replay, []
        return None if self._key is None else thought_signature(blocks, self._key)

    def _part(self, parts: list[bytes], part: bytes) -> None:
        self._sent = True
        parts.append(self._out.parts(part))

    def _end(self, parts: list[bytes]) -> None:
        self._finish_reason = out.finish_reason(self._stop_reason)
        prompt, cached, output = self.usage
        thoughts = min(self.reasoning_tokens, output)
        usage = out.usage_metadata(prompt, cached, output - thoughts, thoughts)
        last = out.text_part("", self._signature())
        parts.append(self._out.last(last, self._finish_reason, usage))
        self._sent = True
        self._ended_complete()

    @property
    def has_content(self) -> bool:
        """A chunk (and so a response) has been emitted."""
        return self._sent

    @property
    def stop_reason(self) -> str | None:
        """The Gemini finishReason, once the stream has ended cleanly."""
        return self._finish_reason

    @property
    def usage(self) -> tuple[int, int, int]:
        """(promptTokenCount, cachedContentTokenCount, output tokens): Gemini's prompt
        counts the cached and cache-written tokens that Anthropic's input leaves out."""
        return self._usage.prompt_counts()
