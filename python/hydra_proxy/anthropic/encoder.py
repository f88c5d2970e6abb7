"""Canonical events -> Anthropic Messages SSE (twin of rust/src/anthropic/encoder.rs).

Output grammar (what Claude Code and the SDKs require): message_start first, before
anything else the client sees (a ping or an error included), with the proxy's message id
and model and the request's estimated input tokens; blocks opened and closed one at a time
with indices 0, 1, 2... in the order they start; then one message_delta with the stop reason
and the final usage, and message_stop. An error ends the output with an `error` event and no
message_stop, so it never looks like a complete reply. A web search another provider ran
is a ``server_tool_use`` block named ``web_search`` (its input streamed as input_json_delta)
and its results one ``web_search_tool_result`` block, written whole at its stop (results
without encrypted content: only Anthropic could read it); other server-tool blocks have no
form here: only an Anthropic upstream sends them, and that one is relayed as it is.
"""

from __future__ import annotations

from ..stream import events as ev
from ..stream.transducer import Ending
from . import output as out


class AnthropicEncoder(Ending):
    _error_event = staticmethod(out.error)

    def __init__(self, message_id: str, model: str, input_tokens: int) -> None:
        super().__init__()
        self._message_id = message_id
        self._model = model
        self._estimate = input_tokens
        self._started = False
        # Blocks started so far (the next index), and the open one: its decoder id (None: no
        # block with an Anthropic form is open; a server tool block has none) and index.
        self._blocks = 0
        self._open: int | None = None
        self._open_index = 0
        # The open results block: (decoder id, search id, results so far).
        self._results: tuple[int, str, list[bytes]] | None = None

    def _ensure_started(self, parts: list[bytes]) -> None:
        if not self._started:
            self._started = True
            parts.append(out.message_start(self._message_id, self._model, self._estimate))

    def event(self, parts: list[bytes], event: ev.Event) -> None:
        self._ensure_started(parts)
        match event:
            # (a delta of a block with no Anthropic form matches no case)
            case ev.TextDelta(block, text) if block == self._open:
                parts.append(out.text_delta(self._open_index, text))
            case ev.ToolArgumentsDelta(block, partial_json) if block == self._open:
                parts.append(out.input_json_delta(self._open_index, partial_json))
            case ev.ThinkingDelta(block, thinking) if block == self._open:
                parts.append(out.thinking_delta(self._open_index, thinking))
            case ev.SignatureDelta(block, signature) if block == self._open:
                parts.append(out.signature_delta(self._open_index, signature))
            case ev.CitationDelta(block, citation) if block == self._open:
                parts.append(out.citations_delta(self._open_index, citation))
            case ev.SearchResult(block, url, title):
                results = self._results
                if results is not None and results[0] == block:
                    results[2].append(out.web_search_result(url, title))
            case ev.BlockStart(block, kind):
                self._block_start(parts, block, kind)
            case ev.BlockStop(block):
                self._block_stop(parts, block)
            case ev.Ping():
                parts.append(out.PING)
            case _:
                self._message_event(parts, event)

    def _block_start(self, parts: list[bytes], block: int, kind: ev.BlockKind) -> None:
        index = self._blocks
        match kind:
            case ev.Text():
                parts.append(out.text_start(index))
            case ev.Thinking():
                parts.append(out.thinking_start(index))
            case ev.RedactedThinking(data):
                parts.append(out.redacted_thinking_start(index, data))
            case ev.ToolUse(tool_id, name):
                parts.append(out.tool_use_start(index, tool_id, name))
            case ev.WebSearch(search_id):
                parts.append(out.server_tool_use_start(index, search_id, "web_search"))
            case ev.WebSearchResults(search_id):
                self._results = (block, search_id, [])
                return
            case ev.ServerTool():
                return
        self._blocks += 1
        self._open = block
        self._open_index = index

    def _block_stop(self, parts: list[bytes], block: int) -> None:
        results = self._results
        if results is not None and results[0] == block:
            self._results = None
            parts.append(out.web_search_tool_result(self._blocks, results[1], results[2]))
            self._blocks += 1
            return
        if block == self._open:
            parts.append(out.block_stop(self._open_index))
            self._open = None

    def _end(self, parts: list[bytes]) -> None:
        if self._stop_reason is None:
            self._stop_reason = "end_turn"
        input_tokens, cached, output_tokens = self.usage
        parts.append(out.message_delta(self._stop_reason, input_tokens, cached, output_tokens))
        parts.append(out.MESSAGE_STOP)
        self._ended_complete()

    @property
    def has_content(self) -> bool:
        """At least one content block was started."""
        return self._blocks > 0

    @property
    def stop_reason(self) -> str | None:
        return self._stop_reason if self.complete else None

    @property
    def usage(self) -> tuple[int, int, int]:
        """(input_tokens, cache_read_input_tokens, output_tokens); the estimate until the
        upstream counts the input."""
        usage = self._usage
        input_tokens = self._estimate if usage.input_tokens is None else usage.input_tokens
        return input_tokens, usage.cache_read_input_tokens or 0, usage.output_tokens or 0
