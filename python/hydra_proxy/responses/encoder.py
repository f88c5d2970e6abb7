"""Canonical events -> OpenAI Responses SSE (twin of rust/src/responses/encoder.rs).

Output grammar (what Codex CLI and the openai SDK's stream accumulator read), every event
with its ``sequence_number`` (0, 1, 2...):

- ``response.created`` then ``response.in_progress``, first, before anything else (a
  failure included): the ``response`` object with the proxy's id, ``created_at`` and model,
  ``status: "in_progress"``, ``output: []``, the request echo, ``usage: null``.
- Output items, one open at a time, numbered by ``output_index`` in the order they open,
  grouped as the non-streamed mapping groups blocks (`responses.response.writer`): a run of text
  blocks is one assistant ``message`` item (``msg_``) with one ``output_text`` part
  (output_item.added, content_part.added, output_text.delta..., and at the item's end
  output_text.done, content_part.done, output_item.done); a run of thinking and redacted
  thinking blocks is one ``reasoning`` item (``rs_``): each thinking block with text is a
  summary part (reasoning_summary_part.added, reasoning_summary_text.delta..., .done,
  summary_part.done) when the request asked for a summary, and the item's
  ``encrypted_content`` is the client carrier of all the run's blocks (signatures and
  redacted data included, `reasoning.encode_carrier`) when it asked for encrypted
  reasoning and a key is set; each tool_use block is a ``function_call`` item (``fc_``;
  ``call_id`` the tool_use id, ``name``/``namespace`` restored through the name table;
  function_call_arguments.delta as the JSON arrives, ``{}`` for a call without
  arguments, then .done) or, for a custom tool, a ``custom_tool_call`` item (``ctc_``)
  whose ``input`` is the string the model wrote (the arguments' ``input`` member, sent as
  one custom_tool_call_input.delta and .done once the arguments are whole). Item ids are
  `responses.items.item_id`'s. A text block's citations that carry a URL become
  ``url_citation`` annotations spanning the block (output_text.annotation.added when the
  block ends, as the non-streamed mapping makes them). A web search block is a
  ``web_search_call`` item (``ws_``: output_item.added, web_search_call.in_progress and
  .searching, then .completed and output_item.done with ``action: {type: "search", query,
  sources}``: the query from its input, the sources the URLs of the results block that
  follows it, if one does; the item is done at the end of that block, or when any other
  block starts); other server-tool blocks have no form here (their findings are in the
  text).
- The end: ``response.completed``, or ``response.incomplete`` with
  ``incomplete_details.reason`` for a token limit (`responses.items.response_status`;
  the last message item then has ``status: "incomplete"``), the ``response`` with every
  item as output_item.done sent it and ``usage`` (`responses.items.responses_usage`:
  input counts cached and cache-written tokens). A failure after the first byte ends the
  stream with ``response.failed`` (what Codex reads; ``error.code`` from
  `responses.errors.response_error_code`), whose output holds the finished items; no
  completion follows, so it never looks whole.
- A keepalive is an SSE comment.
"""

from __future__ import annotations

from typing import NamedTuple

from orjson import dumps, loads

from ..stream import events as ev
from ..stream.transducer import Ending
from . import output as out
from .context import ResponsesContext
from .errors import response_error_code
from .items import item_id, reasoning_item, response_status, responses_usage
from .reasoning import Block
from .tools import ToolNames, ToolOrigin, custom_input_member

__all__ = ["NameTable", "ResponsesEncoder", "ResponsesOptions", "echo_text", "name_table"]

# (sent name, client name, namespace, custom): `ToolNames` as plain data, for both
# implementations' constructors.
NameTable = list[tuple[str, str, str | None, bool]]


def name_table(names: ToolNames) -> NameTable:
    return [(sent, o.name, o.namespace, o.custom) for sent, o in names.by_sent.items()]


def echo_text(context: ResponsesContext) -> str:
    """The request echo a streamed ``response`` object repeats, as the encoder takes it."""
    return dumps(context.echo()).decode()


def echo_inner(echo: str) -> bytes:
    """The members of a JSON object text (nothing for anything but an object)."""
    text = echo.strip(" \t\n\r")
    if len(text) < 2 or text[0] != "{" or text[-1] != "}":
        return b""
    return text[1:-1].strip(" \t\n\r").encode()


def custom_call_input(arguments: str) -> str:
    """A custom tool call's input from its tool_use arguments: the ``input`` string, else
    nothing for no or empty arguments, else the arguments as they are."""
    try:
        value = loads(arguments) if arguments else {}
    except ValueError:
        return arguments
    if isinstance(value, dict) and (text := custom_input_member(value)) is not None:
        return text
    return arguments


class _Message:
    kind = "message"

    def __init__(self, item: str) -> None:
        self.item = item
        self.text: list[str] = []
        self.length = 0  # characters of text so far
        self.block_start = 0  # where the open text block's text starts
        self.citations: list[tuple[str, str]] = []  # the open block's (title, url)
        self.annotations: list[bytes] = []


class _Reasoning:
    kind = "reasoning"

    def __init__(self, item: str) -> None:
        self.item = item
        self.blocks: list[Block] = []
        self.summaries = 0  # summary parts finished
        self.part_open = False
        self.pieces: list[str] = []  # the open thinking block's text (joined at its stop)

    def settle(self) -> str:
        """The open thinking block's text, written into its block."""
        text = "".join(self.pieces)
        if self.pieces:
            self.blocks[-1]["thinking"] = text
            self.pieces = []
        return text


class _Call:
    kind = "call"

    def __init__(self, item: str, call_id: str, origin: ToolOrigin) -> None:
        self.item = item
        self.call_id = call_id
        self.origin = origin
        self.arguments: list[str] = []


class _Search:
    kind = "search"

    def __init__(self, item: str, search_id: str) -> None:
        self.item = item
        self.search_id = search_id  # the upstream's, which its results block names
        self.arguments: list[str] = []
        self.stopped = False  # its block stopped: the item waits for the results block
        self.sources: list[str] = []


_Item = _Message | _Reasoning | _Call | _Search

# The delta and done events of a call's input, by the kind of call.
CUSTOM_INPUT = (b"response.custom_tool_call_input.delta", b"response.custom_tool_call_input.done")
FUNCTION_ARGUMENTS = (
    b"response.function_call_arguments.delta",
    b"response.function_call_arguments.done",
)


def search_query(arguments: str) -> str:
    """A web search's query, from its input's ``query`` member ("" when it has none)."""
    try:
        value = loads(arguments) if arguments else None
    except ValueError:
        return ""
    query = value.get("query") if isinstance(value, dict) else None
    return query if isinstance(query, str) else ""


def _add_citation(item: _Message, citation: str) -> None:
    """Note a text block's citation that carries a URL (`url_citations` of the non-streamed
    mapping); it becomes an annotation spanning the block when the block ends."""
    try:
        value = loads(citation)
    except ValueError:
        return
    if type(value) is not dict:
        return
    url = value.get("url")
    if type(url) is str and url:
        title = value.get("title")
        item.citations.append((title if type(title) is str else "", url))


def _thinking(item: _Item | None) -> bool:
    """The open item is reasoning fed by a thinking (not redacted) block."""
    return isinstance(item, _Reasoning) and item.blocks[-1]["type"] == "thinking"


class ResponsesOptions(NamedTuple):
    """What the request asks of the reply beyond its ids (`ResponsesClient`'s keywords,
    which give the defaults)."""

    echo: str  # the request echo, as JSON text (`echo_text`)
    include_encrypted: bool
    summary: bool
    tool_names: NameTable | None  # (`name_table`)


class ResponsesEncoder(Ending):
    def __init__(
        self,
        response_id: str,
        model: str,
        created_at: int,
        input_tokens: int,
        signing_key: bytes | None,
        options: ResponsesOptions,
    ) -> None:
        super().__init__()
        self._response_id = response_id
        self._model = model
        self._created_at = created_at
        self._estimate = input_tokens
        self._echo = echo_inner(options.echo)
        self._context = ResponsesContext(
            model, include_encrypted=options.include_encrypted, summary=options.summary
        )
        self._key = signing_key
        self._names = {
            sent: ToolOrigin(name, namespace, custom)
            for sent, name, namespace, custom in options.tool_names or ()
        }
        self._seq = 0
        self._started = False
        self._status: str | None = None
        self._items: list[bytes] = []  # finished items, as output_item.done sent them
        self._item: _Item | None = None  # the open item
        self._block: int | None = None  # the open block (decoder id) feeding it

    # -- bytes ---------------------------------------------------------------------------

    def _next(self) -> int:
        seq = self._seq
        self._seq += 1
        return seq

    def _response(self, status: str, **fields: bytes) -> bytes:
        return out.response_object(
            self._response_id,
            self._created_at,
            status,
            self._model,
            self._items,
            self._echo,
            **fields,
        )

    def _ensure_started(self, parts: list[bytes]) -> None:
        if not self._started:
            self._started = True
            response = self._response("in_progress")
            parts.append(out.response_event(b"response.created", self._next(), response))
            parts.append(out.response_event(b"response.in_progress", self._next(), response))

    # -- events --------------------------------------------------------------------------

    # The dispatch of a state machine over the event kinds, on the per-event path.
    def event(self, parts: list[bytes], event: ev.Event) -> None:  # noqa: C901
        self._ensure_started(parts)
        item = self._item
        match event:
            case ev.TextDelta(block, text):
                if block == self._block and isinstance(item, _Message):
                    self._text_delta(parts, item, text)
            case ev.ThinkingDelta(block, thinking):
                if block == self._block and _thinking(item):
                    assert isinstance(item, _Reasoning)
                    self._thinking_delta(parts, item, thinking)
            case ev.SignatureDelta(block, signature):
                if block == self._block and _thinking(item):
                    assert isinstance(item, _Reasoning)
                    item.blocks[-1]["signature"] = signature
            case ev.ToolArgumentsDelta(block, partial_json):
                if block == self._block:
                    self._arguments_delta(parts, item, partial_json)
            case ev.CitationDelta(block, citation):
                if block == self._block and isinstance(item, _Message):
                    _add_citation(item, citation)
            case ev.SearchResult(block, url):
                if block == self._block and isinstance(item, _Search) and item.stopped:
                    item.sources.append(url)
            case ev.BlockStart(block, kind):
                self._block_start(parts, block, kind)
            case ev.BlockStop(block):
                if block == self._block:
                    self._block_stop(parts)
            case ev.Ping():
                parts.append(out.PING)
            case _:
                self._message_event(parts, event)

    def _index(self) -> int:
        """The output index of the open item (items finish in the order they open)."""
        return len(self._items)

    def _block_start(self, parts: list[bytes], block: int, kind: object) -> None:
        """A block starts: it feeds the open item, or the open item finishes and the
        block's kind opens the next."""
        if self._block is not None and not isinstance(kind, (ev.ServerTool, ev.WebSearchResults)):
            self._block_stop(parts)  # a lenient upstream's overlapping blocks
        match kind:
            case ev.Text():
                self._start_text(parts)
            case ev.Thinking():
                self._start_thinking(parts, {"type": "thinking", "thinking": "", "signature": ""})
            case ev.RedactedThinking(data):
                self._start_thinking(parts, {"type": "redacted_thinking", "data": data})
            case ev.ToolUse(tool_id, name):
                self._open_call(parts, tool_id, name)
            case ev.WebSearch(search_id):
                self._open_search(parts, search_id)
            case ev.WebSearchResults(search_id):
                if not self._search_takes_results(parts, search_id):
                    return
            case ev.ServerTool():
                return
        self._block = block

    def _start_text(self, parts: list[bytes]) -> None:
        """A text block: the open message item goes on (its annotations start here), else
        a message item opens with its one output_text part."""
        message = self._item
        if isinstance(message, _Message):
            message.block_start = message.length
            return
        self._close(parts)
        item = _Message(item_id("msg", self._response_id, self._index()))
        self._open(parts, item, out.message_item(item.item, "in_progress", None))
        parts.append(
            out.content_part(
                b"response.content_part.added", self._next(), item.item, self._index(), ""
            )
        )

    def _start_thinking(self, parts: list[bytes], block: Block) -> None:
        """A thinking or redacted thinking block joins the open reasoning item, else opens
        one."""
        reasoning = self._item
        if not isinstance(reasoning, _Reasoning):
            self._close(parts)
            reasoning = _Reasoning(item_id("rs", self._response_id, self._index()))
            self._open(parts, reasoning, out.reasoning_item_added(reasoning.item))
        reasoning.blocks.append(block)

    def _open_call(self, parts: list[bytes], call_id: str, name: str) -> None:
        """A tool_use block is a function_call item, or a custom_tool_call item for a
        custom tool, named as the client named it."""
        self._close(parts)
        origin = self._names.get(name) or ToolOrigin(name)
        prefix = "ctc" if origin.custom else "fc"
        call = _Call(item_id(prefix, self._response_id, self._index()), call_id, origin)
        self._open(parts, call, self._call_item(call, "in_progress", ""))

    def _open_search(self, parts: list[bytes], search_id: str) -> None:
        """A web search block is a web_search_call item, searching from the start."""
        self._close(parts)
        search = _Search(item_id("ws", self._response_id, self._index()), search_id)
        self._open(parts, search, out.web_search_item(search.item, "in_progress", None))
        for progress in (
            b"response.web_search_call.in_progress",
            b"response.web_search_call.searching",
        ):
            parts.append(out.web_search_event(progress, self._next(), search.item, self._index()))

    def _search_takes_results(self, parts: list[bytes], search_id: str) -> bool:
        """A results block feeds the search it names when that search is open and its own
        block stopped; the results of another search finish the open one (it has none)."""
        search = self._item
        if not (isinstance(search, _Search) and search.stopped):
            return False
        if search.search_id != search_id:
            self._close(parts)
            return False
        return True

    def _open(self, parts: list[bytes], item: _Item, added: bytes) -> None:
        self._item = item
        parts.append(
            out.item_event(b"response.output_item.added", self._next(), self._index(), added)
        )

    def _text_delta(self, parts: list[bytes], item: _Message, text: str) -> None:
        item.text.append(text)
        item.length += len(text)
        parts.append(out.text_delta(self._next(), item.item, self._index(), text))

    def _thinking_delta(self, parts: list[bytes], item: _Reasoning, thinking: str) -> None:
        item.pieces.append(thinking)
        if not self._context.summary:
            return
        index = self._index()
        if not item.part_open:
            item.part_open = True
            parts.append(
                out.summary_part(
                    b"response.reasoning_summary_part.added",
                    self._next(),
                    item.item,
                    index,
                    item.summaries,
                    "",
                )
            )
        parts.append(
            out.summary_text(
                b"response.reasoning_summary_text.delta",
                b"delta",
                self._next(),
                item.item,
                index,
                item.summaries,
                thinking,
            )
        )

    def _arguments_delta(self, parts: list[bytes], item: _Item | None, partial_json: str) -> None:
        """A search's input is kept for its query; a function call's arguments go as they
        come, a custom tool's input whole at the end."""
        if isinstance(item, _Search):
            item.arguments.append(partial_json)
        elif isinstance(item, _Call):
            item.arguments.append(partial_json)
            if not item.origin.custom:
                parts.append(
                    out.call_input(
                        FUNCTION_ARGUMENTS[0],
                        b"delta",
                        self._next(),
                        item.item,
                        self._index(),
                        partial_json,
                    )
                )

    def _block_stop(self, parts: list[bytes]) -> None:
        self._block = None
        item = self._item
        if isinstance(item, _Reasoning):
            text = item.settle()
            if item.part_open:
                self._summary_done(parts, item, text)
        elif isinstance(item, _Search) and not item.stopped:
            item.stopped = True  # done with its results, or when the next block starts
        elif isinstance(item, (_Call, _Search)):
            self._close(parts)  # a call is one block, a search's results a second
        elif isinstance(item, _Message):
            self._annotate(parts, item)

    def _summary_done(self, parts: list[bytes], item: _Reasoning, text: str) -> None:
        """A thinking block's summary part is done."""
        index = self._index()
        parts.append(
            out.summary_text(
                b"response.reasoning_summary_text.done",
                b"text",
                self._next(),
                item.item,
                index,
                item.summaries,
                text,
            )
        )
        parts.append(
            out.summary_part(
                b"response.reasoning_summary_part.done",
                self._next(),
                item.item,
                index,
                item.summaries,
                text,
            )
        )
        item.part_open = False
        item.summaries += 1

    def _annotate(self, parts: list[bytes], item: _Message) -> None:
        """A text block's citations become annotations spanning the block."""
        for title, url in item.citations:
            annotation = out.url_citation(item.block_start, item.length, title, url)
            parts.append(
                out.annotation_added(
                    self._next(), item.item, self._index(), len(item.annotations), annotation
                )
            )
            item.annotations.append(annotation)
        item.citations = []

    def _call_item(self, call: _Call, status: str, text: str) -> bytes:
        origin = call.origin
        return out.call_item(
            call.item, status, text, call.call_id, origin.name, origin.namespace, origin.custom
        )

    def _close(self, parts: list[bytes], incomplete: bool = False) -> None:
        """Finish the open item: its done events, and it joins the output."""
        item = self._item
        if item is None:
            return
        done: bytes
        if isinstance(item, _Message):
            done = self._message_done(parts, item, incomplete)
        elif isinstance(item, _Reasoning):
            done = self._reasoning_done(item)
        elif isinstance(item, _Search):
            done = self._search_done(parts, item)
        else:
            done = self._call_done(parts, item)
        parts.append(
            out.item_event(b"response.output_item.done", self._next(), self._index(), done)
        )
        self._items.append(done)
        self._item = None
        self._block = None

    def _message_done(self, parts: list[bytes], item: _Message, incomplete: bool) -> bytes:
        """A message item's text and part are done; the item as it ends."""
        index = self._index()
        text = "".join(item.text)
        parts.append(
            out.text_done(self._next(), item.item, index, text)
            + out.content_part(
                b"response.content_part.done",
                self._next(),
                item.item,
                index,
                text,
                item.annotations,
            )
        )
        status = "incomplete" if incomplete else "completed"
        return out.message_item(item.item, status, text, item.annotations)

    def _reasoning_done(self, item: _Reasoning) -> bytes:
        """A reasoning item as it ends: its summaries, and the client carrier of its
        blocks."""
        item.settle()
        return dumps(reasoning_item(item.blocks, item.item, self._context, self._key))

    def _search_done(self, parts: list[bytes], item: _Search) -> bytes:
        """A web search is completed: the item with its query and the sources found."""
        parts.append(
            out.web_search_event(
                b"response.web_search_call.completed", self._next(), item.item, self._index()
            )
        )
        query = search_query("".join(item.arguments))
        return out.web_search_item(item.item, "completed", query, item.sources)

    def _call_done(self, parts: list[bytes], item: _Call) -> bytes:
        """A call's input is done: a custom tool's input whole (one delta, nothing for
        none), a function call's arguments as they went ("{}" for a call without
        arguments)."""
        index = self._index()
        arguments = "".join(item.arguments)
        if item.origin.custom:
            (delta_kind, done_kind), field = CUSTOM_INPUT, b"input"
            text = custom_call_input(arguments)
            delta = text
        else:
            (delta_kind, done_kind), field = FUNCTION_ARGUMENTS, b"arguments"
            text = arguments or "{}"
            delta = "" if arguments else text
        if delta:
            parts.append(
                out.call_input(delta_kind, b"delta", self._next(), item.item, index, delta)
            )
        parts.append(out.call_input(done_kind, field, self._next(), item.item, index, text))
        return self._call_item(item, "completed", text)

    def _usage_json(self) -> bytes:
        usage = self._usage
        fresh = self._estimate if usage.input_tokens is None else usage.input_tokens
        anthropic_usage = {
            "input_tokens": fresh,
            "cache_read_input_tokens": usage.cache_read_input_tokens or 0,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens or 0,
            "output_tokens": usage.output_tokens or 0,
        }
        return dumps(responses_usage(anthropic_usage))

    def _end(self, parts: list[bytes]) -> None:
        status, incomplete = response_status(self._stop_reason)
        self._close(parts, incomplete=incomplete is not None)
        if incomplete is None:
            kind = b"response.completed"
            response = self._response(status, usage=self._usage_json())
        else:
            kind = b"response.incomplete"
            details = b'{"reason":"%s"}' % incomplete["reason"].encode()
            response = self._response(status, incomplete_details=details, usage=self._usage_json())
        parts.append(out.response_event(kind, self._next(), response))
        self._status = "completed" if incomplete is None else incomplete["reason"]
        self._ended_complete()

    def _fail(self, parts: list[bytes], error_type: str, message: str) -> None:
        error = out.error(response_error_code(error_type), message)
        response = self._response("failed", error=error)
        parts.append(out.response_event(b"response.failed", self._next(), response))
        self._ended_with_error(error_type, message)

    # -- what the server asks ------------------------------------------------------------

    @property
    def has_content(self) -> bool:
        """At least one output item was started."""
        return bool(self._items) or self._item is not None

    @property
    def stop_reason(self) -> str | None:
        """``completed``, or the ``incomplete_details.reason``, once the stream has ended."""
        return self._status

    @property
    def usage(self) -> tuple[int, int, int]:
        """(input_tokens incl. cached and cache-written, cached_tokens, output_tokens); the
        estimate until the upstream counts the input."""
        return self._usage.prompt_counts(self._estimate)
