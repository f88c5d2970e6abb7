"""The canonical stream events (twin of rust/src/stream/events.rs, which documents them).

The model is the Anthropic Messages stream's, the superset the protocols need: a message
is a sequence of content blocks, each started, filled by deltas and stopped, then a stop
reason and the end. Decoders guarantee the grammar encoders rely on:

- `MessageStart` comes before any block (an encoder may also start on its own);
- every delta names a block that is started and not yet stopped, with a delta kind that
  fits the block (text to text, thinking and signature to thinking, arguments to tools);
- deltas are never empty (an empty fragment carries nothing and is not sent);
- every started block is stopped before `MessageStop`;
- `MessageStop` or `Error` is the last event.

Block ids are the decoder's: unique among open blocks, not necessarily dense; an encoder
numbers blocks its own way (Anthropic indices, Chat tool-call indices).
"""

from __future__ import annotations

from dataclasses import dataclass

# -- what a started block holds (Rust: BlockKind) ------------------------------------------


@dataclass(slots=True)
class Text:
    """Answer text (Chat `content` / `refusal`, Anthropic `text`); citations may follow."""


@dataclass(slots=True)
class Thinking:
    """Reasoning the client may see (Chat `reasoning_content`, Anthropic `thinking`).

    Its replay state, what must be sent back for the model to continue it, arrives as
    `SignatureDelta` (Anthropic's signature, the proxy's `hydra1.` signature; later Gemini
    thought signatures and Responses encrypted reasoning).
    """


@dataclass(slots=True)
class RedactedThinking:
    """Reasoning the client may not see, only replay (Anthropic `redacted_thinking`)."""

    data: str


@dataclass(slots=True)
class ToolUse:
    """A call of a client tool; its input arrives as `ToolArgumentsDelta` JSON fragments."""

    id: str
    name: str


@dataclass(slots=True)
class ServerTool:
    """A block run by the provider (Anthropic `server_tool_use`, `web_search_tool_result`,
    ...): `kind` is its type. Clients without a form for it skip it."""

    kind: str


@dataclass(slots=True)
class WebSearch:
    """A web search the provider ran (Anthropic `server_tool_use` web_search, a Responses
    `web_search_call`): `id` is the upstream's; its input (``{"query": ...}``) arrives as
    `ToolArgumentsDelta` JSON fragments."""

    id: str


@dataclass(slots=True)
class WebSearchResults:
    """What the search `search_id` found (Anthropic `web_search_tool_result`, a Responses
    search's sources): one `SearchResult` per page, then the stop."""

    search_id: str


BlockKind = Text | Thinking | RedactedThinking | ToolUse | ServerTool | WebSearch | WebSearchResults

# -- the events (Rust: Event) --------------------------------------------------------------


@dataclass(slots=True)
class Usage:
    """Token counts as Anthropic reports them (input excludes cached tokens). Each field is
    the latest cumulative value; None leaves what an earlier `Usage` said."""

    input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    output_tokens: int | None = None
    # The part of output_tokens spent reasoning, when the upstream says (a breakdown,
    # never added to the output again).
    reasoning_tokens: int | None = None

    def update(self, later: Usage) -> None:
        """Take what a later `Usage` says: the counts are cumulative, so a later event
        repeats or updates them, and a field it leaves out keeps its value."""
        if (value := later.input_tokens) is not None:
            self.input_tokens = value
        if (value := later.cache_read_input_tokens) is not None:
            self.cache_read_input_tokens = value
        if (value := later.cache_creation_input_tokens) is not None:
            self.cache_creation_input_tokens = value
        if (value := later.output_tokens) is not None:
            self.output_tokens = value
        if (value := later.reasoning_tokens) is not None:
            self.reasoning_tokens = value

    def prompt_counts(self, input_estimate: int = 0) -> tuple[int, int, int]:
        """(prompt, cached, output) as OpenAI and Gemini count them: their prompt counts the
        cached and cache-written tokens that Anthropic's input leaves out. `input_estimate`
        stands for the input until the upstream counts it."""
        cached = self.cache_read_input_tokens or 0
        fresh = input_estimate if self.input_tokens is None else self.input_tokens
        prompt = fresh + cached + (self.cache_creation_input_tokens or 0)
        return prompt, cached, self.output_tokens or 0


@dataclass(slots=True)
class MessageStart:
    """The message begins; `id` and `model` are the upstream's, when it says (encoders use
    the proxy's own). The Chat decoder starts at the first body bytes: Chat has no start."""

    id: str | None = None
    model: str | None = None


@dataclass(slots=True)
class OfBlock:
    """An event of one content block, named by the decoder's id for it."""

    block: int


@dataclass(slots=True)
class BlockStart(OfBlock):
    kind: BlockKind


@dataclass(slots=True)
class TextDelta(OfBlock):
    text: str


@dataclass(slots=True)
class ThinkingDelta(OfBlock):
    thinking: str


@dataclass(slots=True)
class SignatureDelta(OfBlock):
    """The thinking block's replay state (replaces any earlier one)."""

    signature: str


@dataclass(slots=True)
class ToolArgumentsDelta(OfBlock):
    partial_json: str


@dataclass(slots=True)
class CitationDelta(OfBlock):
    """One citation of a text block, as JSON text (Rust: the upstream's raw JSON; Python:
    orjson's compact rendering of it)."""

    citation: str


@dataclass(slots=True)
class SearchResult(OfBlock):
    """One page a web search found, in a `WebSearchResults` block (a title may be empty:
    a Responses source has only its URL)."""

    url: str
    title: str


@dataclass(slots=True)
class BlockStop(OfBlock):
    pass


@dataclass(slots=True)
class StopReason:
    """Why the message ended, as an Anthropic stop_reason."""

    reason: str


@dataclass(slots=True)
class MessageStop:
    """The message is complete."""


@dataclass(slots=True)
class Error:
    """The stream ends with an error (Anthropic error type, message): an upstream error, a
    malformed or cut-off upstream stream, or the server's own (timeouts)."""

    kind: str
    message: str


@dataclass(slots=True)
class Ping:
    """A keepalive, from the upstream or from the server for a silent upstream."""


Event = (
    MessageStart
    | BlockStart
    | TextDelta
    | ThinkingDelta
    | SignatureDelta
    | ToolArgumentsDelta
    | CitationDelta
    | SearchResult
    | BlockStop
    | Usage
    | StopReason
    | MessageStop
    | Error
    | Ping
)
