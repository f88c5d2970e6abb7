"""The Responses response writer: the canonical Anthropic Message (non-streamed) -> a
client Responses ``response`` object.

Pure translation, no I/O; ids are passed in (or derived from the ones passed in), so the
output is reproducible. ``id`` as given (``resp_...``), ``object: "response"``,
``created_at``, ``model``, the request echo of `ResponsesContext.echo`, ``error: null``,
``status``, ``usage`` and the items as `items` builds them (the stream encoder builds the
same). ``output`` in block order: a run of thinking blocks -> one ``reasoning`` item, a
run of text blocks -> one assistant ``message`` item (``msg_``; one ``output_text`` with
the texts joined, ``annotations`` one ``url_citation`` per text citation with a URL,
spanning its text block, ``logprobs: []``; ``status: "incomplete"`` when it is the last
item of an incomplete response), each ``tool_use`` -> a call item, each web search
(``server_tool_use`` named ``web_search``) -> a ``web_search_call`` item (``ws_``,
``action: {type: "search", query, sources}``, the sources the URLs of its
``web_search_tool_result`` when that follows it). Other server-tool blocks ran at Anthropic
and are left out (their findings are in the text).
"""

from __future__ import annotations

from typing import Any

from ...canonical.content import THINKING_TYPES
from ...canonical.message import typed_objects, url_citations
from ..context import ResponsesContext
from ..items import (
    call_item,
    call_item_prefix,
    item_id,
    reasoning_item,
    response_status,
    responses_usage,
)

__all__ = ["response_from_message", "thinking_text"]

Block = dict[str, Any]
Item = dict[str, Any]


def response_from_message(
    message: dict[str, Any],
    context: ResponsesContext,
    *,
    response_id: str,
    created_at: int,
    key: bytes | None,
    model: str | None = None,
    reasoning_tokens: int = 0,
) -> dict[str, Any]:
    """Translate a non-streamed Anthropic Message into a Responses ``response`` object."""
    status, incomplete = response_status(message.get("stop_reason"))
    output = _output(message, context, response_id, key)
    if status == "incomplete" and output and output[-1]["type"] == "message":
        output[-1]["status"] = "incomplete"

    usage = message.get("usage")
    out: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": incomplete,
        "model": model if model is not None else context.model,
        "output": output,
    }
    out.update(context.echo())
    out["usage"] = responses_usage(usage, reasoning_tokens)
    return out


def _output(
    message: dict[str, Any], context: ResponsesContext, response_id: str, key: bytes | None
) -> list[Item]:
    """The output items of a Message's blocks: a run of thinking blocks is one reasoning
    item, a run of text blocks one message item, each call and web search an item."""
    output: list[Item] = []
    thinking: list[Block] = []
    texts: list[Block] = []

    def flush_thinking() -> None:
        if thinking:
            rs = item_id("rs", response_id, len(output))
            output.append(reasoning_item(list(thinking), rs, context, key))
            thinking.clear()

    def flush_texts() -> None:
        if texts:
            output.append(_message_item(texts, item_id("msg", response_id, len(output))))
            texts.clear()

    search: tuple[Item, Any] | None = None  # the last search item, and its block's id
    for btype, block in typed_objects(message.get("content")):
        if btype in THINKING_TYPES:
            flush_texts()
            thinking.append(block)
        elif btype == "text" and isinstance(block.get("text"), str):
            flush_thinking()
            texts.append(block)
        elif btype == "tool_use":
            flush_thinking()
            flush_texts()
            prefix = call_item_prefix(block, context.tool_names)
            output.append(
                call_item(block, item_id(prefix, response_id, len(output)), context.tool_names)
            )
        elif btype == "server_tool_use" and block.get("name") == "web_search":
            flush_thinking()
            flush_texts()
            output.append(_search_item(block, item_id("ws", response_id, len(output))))
            search = (output[-1], block.get("id"))
            continue
        elif btype == "web_search_tool_result" and search is not None:
            item, search_id = search
            urls = _result_urls(block.get("content"))
            if block.get("tool_use_id") == search_id and urls:
                item["action"]["sources"] = [{"type": "url", "url": url} for url in urls]
        elif btype not in THINKING_TYPES and btype not in ("text", "tool_use"):
            continue  # other server tools: the search may still get its results
        search = None  # the results block must follow its search
    flush_thinking()
    flush_texts()
    return output


def thinking_text(message: dict[str, Any]) -> str:
    """The thinking text of a Message (what a reasoning-token estimate counts)."""
    content = message.get("content")
    return "".join(
        block["thinking"]
        for block in (content if isinstance(content, list) else [])
        if isinstance(block, dict)
        and block.get("type") == "thinking"
        and isinstance(block.get("thinking"), str)
    )


def _result_urls(content: Any) -> list[str]:
    """The URLs of a web_search_tool_result's results (an error is an object: none)."""
    return [
        result["url"]
        for result in (content if isinstance(content, list) else [])
        if isinstance(result, dict)
        and result.get("type") == "web_search_result"
        and isinstance(result.get("url"), str)
        and result["url"]
    ]


def _search_item(block: Block, item: str) -> Item:
    tool_input = block.get("input")
    query = tool_input.get("query") if isinstance(tool_input, dict) else None
    return {
        "id": item,
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "query": query if isinstance(query, str) else ""},
    }


def _message_item(blocks: list[Block], item: str) -> Item:
    annotations: list[dict[str, Any]] = []
    pieces: list[str] = []
    offset = 0
    for block in blocks:
        text = block["text"]
        for url, title in url_citations(block.get("citations")):
            annotations.append(
                {
                    "type": "url_citation",
                    "start_index": offset,
                    "end_index": offset + len(text),
                    "url": url,
                    "title": title,
                }
            )
        pieces.append(text)
        offset += len(text)
    return {
        "id": item,
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [
            {
                "type": "output_text",
                "text": "".join(pieces),
                "annotations": annotations,
                "logprobs": [],
            }
        ],
    }
