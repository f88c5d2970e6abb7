"""OpenAI Responses wire format (``POST /v1/responses``), modelled on fixtures/responses/.

Stream: ``event: <type>\\ndata: {json}\\n\\n`` with a ``sequence_number`` counting from 0
over the whole stream and no ``[DONE]``: ``response.created``, ``response.in_progress``
(both carrying the response object with ``status: in_progress`` and ``output: []``), then
one output item per part of the turn, each opened by ``response.output_item.added`` and
closed by ``response.output_item.done`` (the finished item) at its ``output_index``:

- reasoning (``rs_...``; ``summary`` and ``encrypted_content`` as gpt-5 with
  ``include: ["reasoning.encrypted_content"]`` sends them): ``reasoning_summary_part.added``,
  ``reasoning_summary_text.delta``..., ``reasoning_summary_text.done``,
  ``reasoning_summary_part.done`` (``summary_index`` 0), as the gpt-5.1-codex-max recording
  shows; each ``redacted_thinking`` entry becomes one more reasoning item with that
  ``encrypted_content`` and an empty summary (as o-series models send them);
- message (``msg_...``): ``content_part.added``, ``output_text.delta``...,
  ``output_text.done``, ``content_part.done`` (``content_index`` 0);
- function_call (``fc_...``, its ``call_id``): ``function_call_arguments.delta``...,
  ``function_call_arguments.done``.

Then ``response.completed`` (usage with cached and reasoning tokens), or
``response.incomplete`` (``incomplete_details.reason``) when the turn's ``finish_reason``
is a token limit or a content filter. A turn's ``stream_error`` ends the stream with
``response.failed`` (``status: failed``, ``error: {code, message}``) after the content.
Non-streamed: the finished response object. HTTP errors: OpenAI's shape (see
:func:`hydra_proxy.mock.chat_wire.error_reply`).
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from ..errors import status_for_anthropic_type
from .anthropic_wire import default_signature
from .chat_wire import error_reply
from .response import SSE_HEADERS, Headers, RenderContext, Reply, cut_events
from .script import ResolvedUsage, ScriptedReply, resolve_usage, split_text

# A turn's finish_reason (either vocabulary) -> incomplete_details.reason.
_INCOMPLETE: Final = {
    "length": "max_output_tokens",
    "max_tokens": "max_output_tokens",
    "model_context_window_exceeded": "max_output_tokens",
    "content_filter": "content_filter",
    "refusal": "content_filter",
}
# A stream_error type (Anthropic vocabulary, as scripted) -> a Responses error code.
_ERROR_CODE: Final = {
    "overloaded_error": "server_error",
    "api_error": "server_error",
    "rate_limit_error": "rate_limit_exceeded",
    "invalid_request_error": "invalid_prompt",
}


def _event(obj: dict[str, Any]) -> bytes:
    kind: str = obj["type"]
    return b"event: " + kind.encode() + b"\ndata: " + orjson.dumps(obj) + b"\n\n"


def _headers(ctx: RenderContext) -> Headers:
    return [(b"x-request-id", ctx.request_id.encode())]


def overloaded_reply() -> Reply:
    """What ``--error-rate`` answers on this endpoint (api.openai.com's 503)."""
    return error_reply(
        503, "server_error", "The server is overloaded or not ready yet.", retry_after="1"
    )


def _usage(u: ResolvedUsage) -> dict[str, Any]:
    return {
        "input_tokens": u.prompt_tokens,
        "input_tokens_details": {"cached_tokens": u.cached_tokens},
        "output_tokens": u.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
        "total_tokens": u.prompt_tokens + u.completion_tokens,
    }


def _response(ctx: RenderContext, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": ctx.message_id,
        "object": "response",
        "created_at": ctx.created,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "max_tool_calls": None,
        "model": ctx.model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "prompt_cache_key": None,
        "reasoning": {"effort": None, "summary": None},
        "safety_identifier": None,
        "service_tier": "default",
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": [],
        "top_logprobs": 0,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": None,
        "user": None,
        "metadata": {},
    }


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "annotations": [], "logprobs": [], "text": text}


class _Items:
    """The turn's output items, finished, with the ids the stream and the body share."""

    def __init__(self, turn: ScriptedReply, ctx: RenderContext):
        suffix = ctx.message_id.removeprefix("resp_")
        self.items: list[dict[str, Any]] = []
        if turn.reasoning is not None:
            signature = (
                turn.signature if turn.signature is not None else default_signature(turn.reasoning)
            )
            summary = [{"type": "summary_text", "text": turn.reasoning}] if turn.reasoning else []
            self.items.append(
                {
                    "id": f"rs_{suffix}_0",
                    "type": "reasoning",
                    "summary": summary,
                    "encrypted_content": signature,
                }
            )
        for i, data in enumerate(turn.redacted_thinking, start=1):
            self.items.append(
                {
                    "id": f"rs_{suffix}_{i}",
                    "type": "reasoning",
                    "summary": [],
                    "encrypted_content": data,
                }
            )
        search = turn.web_search
        if search is not None:
            self.items.append(
                {
                    "id": f"ws_{suffix}",
                    "type": "web_search_call",
                    "status": "completed",
                    "action": {
                        "type": "search",
                        "query": search.query,
                        "sources": [{"type": "url", "url": url} for url, _ in search.results],
                    },
                }
            )
        if turn.text is not None:
            part = _text_part(turn.text)
            if search is not None:
                # Each page cites the whole text.
                part["annotations"] = [
                    {
                        "type": "url_citation",
                        "end_index": len(turn.text),
                        "start_index": 0,
                        "title": title,
                        "url": url,
                    }
                    for url, title in search.results
                ]
            self.items.append(
                {
                    "id": f"msg_{suffix}",
                    "type": "message",
                    "status": "completed",
                    "content": [part],
                    "role": "assistant",
                }
            )
        for i, call in enumerate(turn.tool_calls):
            self.items.append(
                {
                    "id": f"fc_{suffix}_{i}",
                    "type": "function_call",
                    "status": "completed",
                    "arguments": call.arguments,
                    "call_id": call.id if call.id is not None else f"call_{suffix[-12:]}_{i}",
                    "name": call.name,
                }
            )


def _final_state(turn: ScriptedReply) -> tuple[str, dict[str, Any] | None]:
    """``(status, incomplete_details)`` of the finished response."""
    reason = _INCOMPLETE.get(turn.finish_reason or "")
    if reason is None:
        return "completed", None
    return "incomplete", {"reason": reason}


def _finished(
    turn: ScriptedReply, ctx: RenderContext, output: list[dict[str, Any]]
) -> dict[str, Any]:
    status, details = _final_state(turn)
    body = _response(ctx, status, output)
    body["incomplete_details"] = details
    body["usage"] = _usage(resolve_usage(turn))
    return body


class _Events:
    """A stream's events, numbered in order, with each output item's events by its kind."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.events: list[bytes] = []

    def emit(self, obj: dict[str, Any]) -> None:
        events = self.events
        events.append(_event({"type": obj.pop("type"), "sequence_number": len(events), **obj}))

    def added(self, index: int, item: dict[str, Any]) -> None:
        self.emit({"type": "response.output_item.added", "output_index": index, "item": item})

    def reasoning(self, item: dict[str, Any], index: int) -> None:
        self.added(index, {**item, "summary": []})
        ids = {"item_id": item["id"], "output_index": index}
        for n, part in enumerate(item["summary"]):
            at = {**ids, "summary_index": n}
            empty = {"type": "summary_text", "text": ""}
            self.emit({"type": "response.reasoning_summary_part.added", **at, "part": empty})
            for piece in split_text(part["text"], self.size):
                self.emit({"type": "response.reasoning_summary_text.delta", **at, "delta": piece})
            self.emit({"type": "response.reasoning_summary_text.done", **at, "text": part["text"]})
            self.emit({"type": "response.reasoning_summary_part.done", **at, "part": part})

    def message(self, item: dict[str, Any], index: int) -> None:
        part = item["content"][0]
        text = part["text"]
        self.added(index, {**item, "status": "in_progress", "content": []})
        at = {"item_id": item["id"], "output_index": index, "content_index": 0}
        self.emit({"type": "response.content_part.added", **at, "part": _text_part("")})
        for piece in split_text(text, self.size):
            self.emit({"type": "response.output_text.delta", **at, "delta": piece, "logprobs": []})
        for n, annotation in enumerate(part["annotations"]):
            self.emit(
                {
                    "type": "response.output_text.annotation.added",
                    **at,
                    "annotation_index": n,
                    "annotation": annotation,
                }
            )
        self.emit({"type": "response.output_text.done", **at, "text": text, "logprobs": []})
        self.emit({"type": "response.content_part.done", **at, "part": part})

    def web_search(self, item: dict[str, Any], index: int) -> None:
        self.added(index, {"id": item["id"], "type": item["type"], "status": "in_progress"})
        for step in ("in_progress", "searching", "completed"):
            self.emit(
                {
                    "type": f"response.web_search_call.{step}",
                    "item_id": item["id"],
                    "output_index": index,
                }
            )

    def call(self, item: dict[str, Any], index: int) -> None:
        self.added(index, {**item, "status": "in_progress", "arguments": ""})
        ids = {"item_id": item["id"], "output_index": index}
        for piece in split_text(item["arguments"], self.size):
            self.emit({"type": "response.function_call_arguments.delta", **ids, "delta": piece})
        self.emit(
            {"type": "response.function_call_arguments.done", **ids, "arguments": item["arguments"]}
        )


# An output item's kind -> its events (any other kind is a function call).
_ITEM_EVENTS = {
    "reasoning": _Events.reasoning,
    "message": _Events.message,
    "web_search_call": _Events.web_search,
}


def render(turn: ScriptedReply, ctx: RenderContext) -> Reply:
    """The turn as a Responses API answer (event stream or finished response object)."""
    if turn.error is not None:
        e = turn.error
        return error_reply(e.status, e.type, e.message, retry_after=e.retry_after, code=e.code)
    items = _Items(turn, ctx).items
    if not ctx.stream:
        return _render_complete(turn, ctx, items)

    out = _Events(ctx.chunk_size)
    emit = out.emit
    created = _response(ctx, "in_progress", [])
    emit({"type": "response.created", "response": created})
    emit({"type": "response.in_progress", "response": created})
    for index, item in enumerate(items):
        _ITEM_EVENTS.get(item["type"], _Events.call)(out, item, index)
        emit({"type": "response.output_item.done", "output_index": index, "item": item})
    events = out.events
    content_end = len(events)

    if turn.stream_error is not None:
        se = turn.stream_error
        failed = _response(ctx, "failed", items)
        failed["error"] = {"code": _ERROR_CODE.get(se.type, se.type), "message": se.message}
        emit({"type": "response.failed", "response": failed})
        return Reply(200, SSE_HEADERS + _headers(ctx), events, abort=turn.abort)

    body = _finished(turn, ctx, items)
    final = "response.completed" if body["status"] == "completed" else "response.incomplete"
    emit({"type": final, "response": body})
    events = cut_events(events, content_end, turn.cut)
    return Reply(200, SSE_HEADERS + _headers(ctx), events, abort=turn.abort)


def _render_complete(turn: ScriptedReply, ctx: RenderContext, items: list[dict[str, Any]]) -> Reply:
    if turn.stream_error is not None:
        se = turn.stream_error
        return error_reply(status_for_anthropic_type(se.type), se.type, se.message)
    return Reply.complete_json(_finished(turn, ctx, items), _headers(ctx), turn.cut, turn.abort)
