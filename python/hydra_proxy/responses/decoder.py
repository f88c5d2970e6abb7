"""OpenAI Responses stream -> canonical events (twin of rust/src/responses/decoder.rs).

The input: ``event: <type>`` / ``data: <event JSON>`` pairs (the payload's ``type`` wins),
as the recordings in tests/fixtures/responses/ show. Each event is read whole; a field of
the wrong type counts as missing (the Responses stream repeats its content in the done
events, so nothing depends on one field). Blocks, one open at a time:

- ``response.created`` -> `MessageStart` (the upstream's id and model).
- a ``message`` item: each content part with text is a text block, opened by its first
  ``output_text.delta`` / ``refusal.delta``; a message whose text only comes in
  output_item.done gets its text blocks there.
- a ``reasoning`` item is a thinking block, opened by its first summary or reasoning-text
  delta (summary parts joined with a blank line, as the non-streamed mapping joins them)
  or at output_item.done; there its replay state becomes the `SignatureDelta`: the
  upstream carrier of the item's id and ``encrypted_content``
  (`reasoning.sign_upstream_item`, so the ``responses`` request writer can send the item
  back), or for reasoning without encrypted content the proxy's ``hydra1.`` signature,
  with a signing key. A reasoning item with neither text nor replayable state is left out.
- ``function_call`` -> a tool block (id the ``call_id``, name flattened with its
  ``namespace`` if any), arguments from ``function_call_arguments.delta`` (or the done
  item's when none streamed); ``custom_tool_call`` -> a tool block whose input is
  ``{"input": <the string>}``, streamed as its ``custom_tool_call_input.delta`` arrive.
- a ``web_search_call`` item is a web search block (its id the item's), whose input, at
  output_item.done, is ``{"query": ...}`` for a search (nothing for the other actions,
  opening or searching a page); the pages its ``action.sources`` name (when the request
  included them) follow as a results block of their URLs. A text part's ``url_citation``
  annotations (``output_text.annotation.added``) are citations of its open text block, in
  Anthropic's form (``web_search_result_location``; the cited text is not kept, so empty).
  Other hosted tool items ran at OpenAI and are skipped; their findings are in the text.
- ``response.completed`` / ``response.incomplete`` -> `Usage` (input without cached and
  cache-written tokens), `StopReason` (``max_output_tokens`` -> ``max_tokens``,
  ``content_filter`` -> ``refusal``, else ``tool_use`` after a call, else ``end_turn``),
  `MessageStop`. ``response.failed`` and ``error`` events -> `Error` with the Anthropic
  type of the code (`errors.upstream_failure`). EOF before the end is a cut-off stream.
"""

from __future__ import annotations

from typing import Any

from orjson import dumps

from ..json_read import JSON_WS, JSONDecodeError, loads_lossy, uint
from ..signature import sign_thinking
from ..stream import events as ev
from ..stream.messages import MSG_BAD_SHAPE, MSG_CUT_OFF, MSG_INVALID_JSON
from ..stream.transducer import Decoding, Emit
from .chunk import get_dict, get_list, get_str, texts
from .errors import upstream_failure
from .reasoning import sign_upstream_item
from .tools import flatten

__all__ = ["ResponsesDecoder"]

# What the open block is.
_TEXT, _THINKING, _TOOL, _CUSTOM, _SEARCH, _RESULTS = 1, 2, 3, 4, 5, 6
_STOP_REASONS = {"max_output_tokens": "max_tokens", "content_filter": "refusal"}
_TEXT_DELTAS = ("response.output_text.delta", "response.refusal.delta")
_THINKING_DELTAS = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")


def _json_fragment(text: str) -> str:
    """`text` escaped as inside a JSON string (escaping is per character)."""
    return dumps(text).decode()[1:-1]


class ResponsesDecoder(Decoding):
    def __init__(self, message_id: str, signing_key: bytes | None = None) -> None:
        self._message_id = message_id
        self._key = signing_key or None
        super().__init__()
        self._started = False
        self._blocks = 0  # blocks started (the next block id)
        self._has_call = False
        # The open block: (block id, kind, output index, content index or summary index).
        self._open: tuple[int, int, int, int] | None = None
        self._streamed = False  # the open tool block got argument/input deltas
        self._texted: int | None = None  # the last output index that had text
        # The reasoning item being read: its output index, text so far, last summary index.
        self._reasoning: int | None = None
        self._thinking: list[str] = []
        self._summary_index: int | None = None

    # The dispatch of a state machine over the event kinds, on the per-event path.
    def event(self, event: bytes | None, data: bytes, emit: Emit) -> None:  # noqa: C901
        if self._ended:
            return
        if not data.strip(JSON_WS) or data.strip(JSON_WS) == b"[DONE]":
            if event == b"error":
                self._upstream_error({}, emit)
            return
        try:
            payload = loads_lossy(data)
        except JSONDecodeError:
            self._not_json(event == b"error", data, emit)
            return
        if type(payload) is not dict:
            self._fail("api_error", MSG_BAD_SHAPE, emit)
            return
        kind = get_str(payload, "type")
        if kind is None and event is not None:
            kind = event.decode("utf-8", "replace")
        if kind == "error" or (kind is None and type(payload.get("error")) is dict):
            error = get_dict(payload, "error") or payload
            self._upstream_error(error, emit)
            return
        if not self._started:
            self._begin(payload, emit)
        index = uint(payload.get("output_index"))
        index = -1 if index is None else index
        if kind in _TEXT_DELTAS:
            self._text_delta(payload, index, emit)
        elif kind in _THINKING_DELTAS:
            self._thinking_delta(kind, payload, index, emit)
        elif kind == "response.function_call_arguments.delta":
            self._arguments_delta(payload, index, emit)
        elif kind == "response.custom_tool_call_input.delta":
            self._input_delta(payload, index, emit)
        elif kind == "response.output_text.annotation.added":
            self._annotation(payload, index, emit)
        elif kind == "response.output_item.added":
            self._item_added(get_dict(payload, "item"), index, emit)
        elif kind == "response.output_item.done":
            self._item_done(get_dict(payload, "item"), index, emit)
        elif kind in ("response.completed", "response.incomplete"):
            self._end(get_dict(payload, "response"), emit)
        elif kind == "response.failed":
            self._upstream_error(get_dict(get_dict(payload, "response"), "error"), emit)

    def finish(self, emit: Emit) -> None:
        self._fail("api_error", MSG_CUT_OFF, emit)

    def _not_json(self, is_error_event: bool, data: bytes, emit: Emit) -> None:
        if is_error_event:
            # An error event in plain text (a gateway's): its text is the message.
            self._upstream_error({"message": data.decode("utf-8", "replace")}, emit)
        else:
            self._fail("api_error", MSG_INVALID_JSON, emit)

    def _begin(self, payload: dict[str, Any], emit: Emit) -> None:
        """The first event starts the message, with the upstream's id and model when it
        names its response."""
        self._started = True
        response = get_dict(payload, "response")
        emit(ev.MessageStart(get_str(response, "id"), get_str(response, "model")))

    # -- blocks --------------------------------------------------------------------------

    def _start(self, kind: int, index: int, part: int, block: Any, emit: Emit) -> int:
        self._close(emit)
        block_id = self._blocks
        self._blocks += 1
        emit(ev.BlockStart(block_id, block))
        self._open = (block_id, kind, index, part)
        self._streamed = False
        return block_id

    def _close(self, emit: Emit) -> None:
        if self._open is not None:
            emit(ev.BlockStop(self._open[0]))
            self._open = None

    def _is_open(self, kind: int, index: int) -> int | None:
        """The open block's id if it is of `kind` and belongs to output item `index`."""
        open_ = self._open
        if open_ is not None and open_[1] == kind and open_[2] == index:
            return open_[0]
        return None

    def _text_delta(self, payload: dict[str, Any], index: int, emit: Emit) -> None:
        delta = get_str(payload, "delta")
        if not delta:
            return
        part = uint(payload.get("content_index")) or 0
        block = self._is_open(_TEXT, index)
        if block is None or self._open is None or self._open[3] != part:
            block = self._start(_TEXT, index, part, ev.Text(), emit)
        self._texted = index
        emit(ev.TextDelta(block, delta))

    def _thinking_delta(self, kind: str, payload: dict[str, Any], index: int, emit: Emit) -> None:
        delta = get_str(payload, "delta")
        if not delta or self._reasoning != index:
            return
        block = self._is_open(_THINKING, index)
        if block is None:
            block = self._start(_THINKING, index, 0, ev.Thinking(), emit)
        if kind == "response.reasoning_summary_text.delta":
            summary = uint(payload.get("summary_index")) or 0
            if self._thinking and summary != self._summary_index:
                self._thinking.append("\n\n")
                emit(ev.ThinkingDelta(block, "\n\n"))
            self._summary_index = summary
        self._thinking.append(delta)
        emit(ev.ThinkingDelta(block, delta))

    def _arguments_delta(self, payload: dict[str, Any], index: int, emit: Emit) -> None:
        delta = get_str(payload, "delta")
        block = self._is_open(_TOOL, index)
        if delta and block is not None:
            self._streamed = True
            emit(ev.ToolArgumentsDelta(block, delta))

    def _input_delta(self, payload: dict[str, Any], index: int, emit: Emit) -> None:
        delta = get_str(payload, "delta")
        block = self._is_open(_CUSTOM, index)
        if delta and block is not None:
            head = "" if self._streamed else '{"input":"'
            self._streamed = True
            emit(ev.ToolArgumentsDelta(block, head + _json_fragment(delta)))

    def _annotation(self, payload: dict[str, Any], index: int, emit: Emit) -> None:
        annotation = get_dict(payload, "annotation")
        url = get_str(annotation, "url")
        block = self._is_open(_TEXT, index)
        part = uint(payload.get("content_index")) or 0
        if annotation.get("type") != "url_citation" or not url or block is None:
            return
        if self._open is None or self._open[3] != part:
            return
        title = get_str(annotation, "title") or ""
        citation = (
            b'{"type":"web_search_result_location","cited_text":"","url":%s,"title":%s,'
            b'"encrypted_index":""}' % (dumps(url), dumps(title))
        )
        emit(ev.CitationDelta(block, citation.decode()))

    # -- items ---------------------------------------------------------------------------

    def _item_added(self, item: dict[str, Any], index: int, emit: Emit) -> None:
        kind = get_str(item, "type")
        if kind in ("function_call", "custom_tool_call"):
            call_id = get_str(item, "call_id")
            if not call_id:
                call_id = f"toolu_{self._message_id.removeprefix('msg_')}_{self._blocks}"
            name = get_str(item, "name") or ""
            namespace = get_str(item, "namespace")
            if namespace:
                name = flatten(namespace, name)
            self._has_call = True
            block_kind = _TOOL if kind == "function_call" else _CUSTOM
            self._start(block_kind, index, 0, ev.ToolUse(call_id, name), emit)
        elif kind == "web_search_call":
            self._start(_SEARCH, index, 0, ev.WebSearch(get_str(item, "id") or ""), emit)
        elif kind == "reasoning":
            self._close(emit)
            self._reasoning = index
            self._thinking = []
            self._summary_index = None

    def _item_done(self, item: dict[str, Any], index: int, emit: Emit) -> None:
        kind = get_str(item, "type")
        if kind == "reasoning" and self._reasoning == index:
            self._reasoning_done(item, index, emit)
        elif kind == "function_call":
            self._function_call_done(item, index, emit)
        elif kind == "custom_tool_call":
            self._custom_call_done(item, index, emit)
        elif kind == "web_search_call":
            self._search_done(item, index, emit)
        elif kind == "message":
            self._message_done(item, index, emit)

    def _function_call_done(self, item: dict[str, Any], index: int, emit: Emit) -> None:
        """The call's arguments, when none streamed, and its block stops."""
        block = self._is_open(_TOOL, index)
        if block is not None:
            arguments = get_str(item, "arguments")
            if not self._streamed and arguments:
                emit(ev.ToolArgumentsDelta(block, arguments))
            self._close(emit)

    def _custom_call_done(self, item: dict[str, Any], index: int, emit: Emit) -> None:
        """The streamed input's closing, or the whole input when none streamed; its block
        stops."""
        block = self._is_open(_CUSTOM, index)
        if block is not None:
            if self._streamed:
                emit(ev.ToolArgumentsDelta(block, '"}'))
            else:
                tool_input = get_str(item, "input") or ""
                emit(ev.ToolArgumentsDelta(block, '{"input":' + dumps(tool_input).decode() + "}"))
            self._close(emit)

    def _message_done(self, item: dict[str, Any], index: int, emit: Emit) -> None:
        """The message's text block stops; a message whose text never streamed gets its
        text blocks here."""
        if self._is_open(_TEXT, index) is not None:
            self._close(emit)
        elif self._texted != index:
            for part in get_list(item, "content"):
                if type(part) is not dict:
                    continue
                field = "refusal" if part.get("type") == "refusal" else "text"
                text = get_str(part, field)
                if part.get("type") in ("output_text", "refusal") and text:
                    block = self._start(_TEXT, index, 0, ev.Text(), emit)
                    emit(ev.TextDelta(block, text))
                    self._close(emit)
        self._texted = index

    def _search_done(self, item: dict[str, Any], index: int, emit: Emit) -> None:
        search_id = get_str(item, "id") or ""
        block = self._is_open(_SEARCH, index)
        if block is None:  # a search only its done event names
            block = self._start(_SEARCH, index, 0, ev.WebSearch(search_id), emit)
        action = get_dict(item, "action")
        query = get_str(action, "query")
        if action.get("type") == "search" and query:
            emit(ev.ToolArgumentsDelta(block, '{"query":' + dumps(query).decode() + "}"))
        self._close(emit)
        urls = [
            url
            for source in get_list(action, "sources")
            if type(source) is dict and (url := get_str(source, "url"))
        ]
        if urls:
            block = self._start(_RESULTS, index, 1, ev.WebSearchResults(search_id), emit)
            for url in urls:
                emit(ev.SearchResult(block, url, ""))
            self._close(emit)

    def _reasoning_done(self, item: dict[str, Any], index: int, emit: Emit) -> None:
        self._reasoning = None
        block = self._is_open(_THINKING, index)
        text = "".join(self._thinking)
        encrypted = get_str(item, "encrypted_content")
        key = self._key
        if block is None:
            text = "\n\n".join(texts(get_list(item, "summary"), "summary_text"))
            if not text:
                text = "".join(texts(get_list(item, "content"), "reasoning_text"))
            if not text and not (encrypted and key):
                return
            block = self._start(_THINKING, index, 0, ev.Thinking(), emit)
            if text:
                emit(ev.ThinkingDelta(block, text))
        if key is not None and encrypted:
            item_id = get_str(item, "id") or ""
            emit(ev.SignatureDelta(block, sign_upstream_item(text, item_id, encrypted, key)))
        elif key is not None and text:
            emit(ev.SignatureDelta(block, sign_thinking(text, key)))
        self._close(emit)

    # -- the end -------------------------------------------------------------------------

    def _end(self, response: dict[str, Any], emit: Emit) -> None:
        self._close(emit)
        usage = response.get("usage")
        if type(usage) is dict:
            total = uint(usage.get("input_tokens")) or 0
            details = get_dict(usage, "input_tokens_details")
            cached = min(uint(details.get("cached_tokens")) or 0, total)
            written = min(uint(details.get("cache_write_tokens")) or 0, total - cached)
            output = uint(usage.get("output_tokens")) or 0
            reasoning = uint(get_dict(usage, "output_tokens_details").get("reasoning_tokens"))
            emit(ev.Usage(total - cached - written, cached, written, output, reasoning))
        reason = get_str(get_dict(response, "incomplete_details"), "reason")
        stop = _STOP_REASONS.get(reason) if reason is not None else None
        if stop is None:
            stop = "tool_use" if self._has_call else "end_turn"
        emit(ev.StopReason(stop))
        emit(ev.MessageStop())
        self._ended = True

    def _upstream_error(self, error: dict[str, Any], emit: Emit) -> None:
        failure = upstream_failure({"status": "failed", "error": error})
        assert failure is not None
        self._fail(failure.error_type, failure.message, emit)

    def _fail(self, kind: str, message: str, emit: Emit) -> None:
        if not self._ended:
            emit(ev.Error(kind, message))
            self._ended = True
