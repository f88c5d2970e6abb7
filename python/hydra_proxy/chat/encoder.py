"""Canonical events -> OpenAI Chat Completions SSE (twin of rust/src/chat/encoder.rs).

Output grammar (what Zed and the OpenAI SDKs require): a role chunk first; text ->
`delta.content`; thinking -> `delta.reasoning_content`; each tool call -> a Chat tool call
whose `index` counts tool calls (not content blocks), with `id` and `name` on its first
chunk only and its input as `arguments` fragments ("{}" for a tool without arguments); then,
at the end, the finish chunk, the usage chunk (`choices: []`, when asked) and `data: [DONE]`. Every chunk has
`choices[].index`. A ping becomes an SSE comment. An error ends the output with an error
chunk (`{"error": {...}}`) and no [DONE]. A text block's citations that carry a URL (web
search results) become one `delta.annotations` chunk of `url_citation`s when the block
ends, each spanning the block's text in `content` (offsets in code points, as the
non-streamed reply has them); server-tool blocks (web search and the like, run by the
provider) and other citations have no Chat form and are not sent; their text answer is.
The continuation suffix carries a thinking block's replay state (signature, redacted data)
through Chat clients inside `reasoning_content` (continuation.py). When enabled, each
thinking or redacted block's suffix is the last `reasoning_content` delta of that block,
sent as the block ends: before the text or tool call that follows it, so a client that takes
a turn's last delta as its result never ends on reasoning.
"""

from __future__ import annotations

from orjson import loads

from ..continuation import Block, RedactedBlock, ThinkingBlock, encode
from ..stream import events as ev
from ..stream.transducer import Ending
from . import mapping
from . import output as out

# Block kinds.
_TEXT, _THINKING, _TOOL, _REDACTED, _OTHER = 1, 2, 3, 4, 5


class _Block:
    __slots__ = (
        "citations",
        "data",
        "kind",
        "sent_arguments",
        "signature",
        "start",
        "text",
        "tool",
    )

    def __init__(self, kind: int, tool: int = -1) -> None:
        self.kind = kind
        self.tool = tool
        self.text: list[str] = []
        self.signature = ""
        self.data = ""
        self.sent_arguments = False
        self.start = 0  # a text block: where its text starts in content (code points)
        self.citations: list[tuple[str, str]] = []  # a text block's (url, title)


def _url_citation(citation: str) -> tuple[str, str] | None:
    """(url, title) of a citation that carries a URL (`canonical.message.url_citations`)."""
    try:
        value = loads(citation)
    except ValueError:
        return None
    if type(value) is not dict:
        return None
    url = value.get("url")
    if type(url) is not str or not url:
        return None
    title = value.get("title")
    return url, title if type(title) is str else ""


class ChatEncoder(Ending):
    _error_event = staticmethod(out.error)

    def __init__(
        self,
        completion_id: str,
        model: str,
        created: int,
        include_usage: bool,
        continuation_key: bytes | None,
    ) -> None:
        super().__init__()
        self._out = out.ChunkWriter(completion_id, model, created)
        self._include_usage = include_usage
        self._continuation_key = continuation_key or None
        self._started = False
        self._blocks: dict[int, _Block] = {}  # open blocks by decoder id
        self._tools = 0
        self._finish_reason: str | None = None
        self._length = 0  # code points of content sent

    # The dispatch of a state machine over the event kinds, on the per-event path.
    def event(self, parts: list[bytes], event: ev.Event) -> None:  # noqa: C901
        match event:
            case ev.TextDelta(block, text):
                state = self._blocks.get(block)
                if state is not None and state.kind == _TEXT:
                    self._length += len(text)
                    parts.append(self._out.content(text))
            case ev.ThinkingDelta(block, thinking):
                state = self._blocks.get(block)
                if state is not None and state.kind == _THINKING:
                    state.text.append(thinking)
                    parts.append(self._out.reasoning(thinking))
            case ev.ToolArgumentsDelta(block, partial_json):
                state = self._blocks.get(block)
                if state is not None and state.kind == _TOOL:
                    state.sent_arguments = True
                    parts.append(self._out.tool_arguments(state.tool, partial_json))
            case ev.SignatureDelta(block, signature):
                state = self._blocks.get(block)
                if state is not None and state.kind == _THINKING:
                    state.signature = signature
            case ev.CitationDelta(block, citation):
                state = self._blocks.get(block)
                if state is not None and state.kind == _TEXT:
                    found = _url_citation(citation)
                    if found is not None:
                        state.citations.append(found)
            case ev.SearchResult():
                pass  # no Chat form
            case ev.BlockStart(block, kind):
                self._block_start(parts, block, kind)
            case ev.BlockStop(block):
                self._block_stop(parts, block)
            case ev.MessageStart():
                self._start(parts)
            case ev.Ping():
                parts.append(out.PING)
            case _:
                self._message_event(parts, event)

    def _start(self, parts: list[bytes]) -> None:
        if not self._started:
            self._started = True
            parts.append(self._out.role())

    def _block_start(self, parts: list[bytes], block: int, kind: ev.BlockKind) -> None:
        self._start(parts)
        match kind:
            case ev.Text():
                state = _Block(_TEXT)
                state.start = self._length
            case ev.Thinking():
                state = _Block(_THINKING)
            case ev.RedactedThinking(data):
                state = _Block(_REDACTED)
                state.data = data
            case ev.ToolUse(tool_id, name):
                state = _Block(_TOOL, self._tools)
                self._tools += 1
                parts.append(self._out.tool_start(state.tool, tool_id, name))
            case ev.ServerTool() | ev.WebSearch() | ev.WebSearchResults():
                state = _Block(_OTHER)  # run by the provider
        self._blocks[block] = state  # (a restarted id replaces the block)

    def _block_stop(self, parts: list[bytes], block: int) -> None:
        state = self._blocks.pop(block, None)
        if state is None:
            return
        if state.kind == _TEXT and state.citations:
            parts.append(
                self._out.annotations(
                    [(state.start, self._length, url, title) for url, title in state.citations]
                )
            )
        elif state.kind == _TOOL and not state.sent_arguments:
            parts.append(self._out.tool_arguments(state.tool, "{}"))  # a tool without arguments
        elif state.kind == _THINKING:
            self._seal(parts, ThinkingBlock("".join(state.text), state.signature))
        elif state.kind == _REDACTED:
            self._seal(parts, RedactedBlock(state.data))

    def _seal(self, parts: list[bytes], block: Block) -> None:
        """The block's continuation suffix, right after its reasoning."""
        if self._continuation_key is not None:
            parts.append(self._out.reasoning(encode([block], self._continuation_key)))

    def _end(self, parts: list[bytes]) -> None:
        self._start(parts)
        self._finish_reason = mapping.finish_reason(self._stop_reason)
        parts.append(self._out.finish(self._finish_reason))
        if self._include_usage:
            prompt, cached, completion = self.usage
            parts.append(self._out.usage(prompt, completion, cached))
        parts.append(out.DONE)
        self._ended_complete()

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
        """(prompt_tokens, cached_tokens, completion_tokens): OpenAI's prompt counts the
        cached and cache-written tokens that Anthropic's input leaves out."""
        return self._usage.prompt_counts()
