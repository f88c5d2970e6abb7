"""The Responses response reader: an upstream Responses ``response`` object (non-streamed,
the ``responses`` provider kind) -> the canonical Anthropic Message.

Pure translation, no I/O. A failed response or one with an ``error`` raises `ProxyError`
(`errors.upstream_failure`). ``reasoning`` items -> a thinking block: the text is the
summary texts joined with a blank line (else the ``reasoning_text`` content), the
signature the upstream carrier (`reasoning.sign_upstream_item`) of the item's ``id`` and
``encrypted_content`` so the request writer can replay it; an item without encrypted
content is signed like Chat reasoning (``hydra1.``); an empty item without encrypted
content is left out; an ``encrypted_content`` that is this proxy's own client carrier (a
hydra upstream) restores its blocks as they were. ``message`` items -> text blocks
(``output_text``; ``refusal`` as its text); ``function_call`` -> ``tool_use`` (id =
``call_id``, name flattened with its ``namespace`` if any, ``arguments`` read as the Chat
response reader reads them); ``custom_tool_call`` -> ``tool_use`` with ``{"input":
<input>}``; ``web_search_call`` -> a ``server_tool_use`` block named ``web_search``
(input ``{"query"}`` for a search) and, when its ``action.sources`` name pages, a
``web_search_tool_result`` of their URLs; a text part's ``url_citation`` annotations ->
its ``citations`` (``web_search_result_location``, the stream's form); other hosted tool
items are left out. ``stop_reason``:
``incomplete`` with ``max_output_tokens`` -> ``max_tokens``, with ``content_filter`` ->
``refusal``; else ``tool_use`` when there is a call, else ``end_turn``. ``usage``:
``input_tokens`` = input - cached - cache write, ``cache_read_input_tokens`` = cached,
``cache_creation_input_tokens`` = ``cache_write_tokens``, ``output_tokens``.
"""

from __future__ import annotations

from typing import Any

from ...canonical.message import anthropic_message, not_an_object, tool_use_id, typed_objects
from ...canonical.tools import tool_input_from_arguments
from ...signature import sign_thinking
from ..errors import upstream_failure
from ..items import token_count
from ..reasoning import decode_carrier, sign_upstream_item
from ..tools import CUSTOM_INPUT_KEY, flatten

__all__ = ["message_from_response"]

_STOP_REASONS = {"max_output_tokens": "max_tokens", "content_filter": "refusal"}

Block = dict[str, Any]


def message_from_response(
    response: Any, *, message_id: str, model: str, key: bytes = b""
) -> dict[str, Any]:
    """Translate a non-streamed Responses ``response`` object into an Anthropic Message."""
    if not isinstance(response, dict):
        raise not_an_object()
    failure = upstream_failure(response)
    if failure is not None:
        raise failure
    content: list[Block] = []
    for itype, item in typed_objects(response.get("output")):
        if itype == "reasoning":
            content.extend(_thinking_blocks(item, key))
        elif itype == "message":
            content.extend(_text_blocks(item))
        elif itype in ("function_call", "custom_tool_call"):
            content.append(_tool_use(item, len(content), message_id))
        elif itype == "web_search_call":
            content.extend(_search_blocks(item))
    incomplete = response.get("incomplete_details")
    reason = incomplete.get("reason") if isinstance(incomplete, dict) else None
    stop_reason = _STOP_REASONS.get(reason) if isinstance(reason, str) else None
    if stop_reason is None:
        has_call = any(block["type"] == "tool_use" for block in content)
        stop_reason = "tool_use" if has_call else "end_turn"
    return anthropic_message(
        message_id, model, content, stop_reason, _message_usage(response.get("usage"))
    )


def _strings(parts: Any, kind: str) -> list[str]:
    if not isinstance(parts, list):
        return []
    return [
        part["text"]
        for part in parts
        if isinstance(part, dict) and part.get("type") == kind and isinstance(part.get("text"), str)
    ]


def _thinking_blocks(item: dict[str, Any], key: bytes) -> list[Block]:
    encrypted = item.get("encrypted_content")
    own = decode_carrier(encrypted, key) if key else None
    if own is not None:
        return own
    text = "\n\n".join(_strings(item.get("summary"), "summary_text"))
    if not text:
        text = "".join(_strings(item.get("content"), "reasoning_text"))
    item_ref = item.get("id")
    if isinstance(encrypted, str) and encrypted and isinstance(item_ref, str) and key:
        signature = sign_upstream_item(text, item_ref, encrypted, key)
    elif text:
        signature = sign_thinking(text, key) if key else ""
    else:
        return []
    return [{"type": "thinking", "thinking": text, "signature": signature}]


def _text_blocks(item: dict[str, Any]) -> list[Block]:
    blocks: list[Block] = []
    content = item.get("content")
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        key = "refusal" if part.get("type") == "refusal" else "text"
        text = part.get(key)
        if part.get("type") in ("output_text", "refusal") and isinstance(text, str) and text:
            block: Block = {"type": "text", "text": text}
            citations = _citations(part.get("annotations"))
            if citations:
                block["citations"] = citations
            blocks.append(block)
    return blocks


def _citations(annotations: Any) -> list[Block]:
    return [
        {
            "type": "web_search_result_location",
            "cited_text": "",
            "url": a["url"],
            "title": a["title"] if isinstance(a.get("title"), str) else "",
            "encrypted_index": "",
        }
        for a in (annotations if isinstance(annotations, list) else [])
        if isinstance(a, dict)
        and a.get("type") == "url_citation"
        and isinstance(a.get("url"), str)
        and a["url"]
    ]


def _search_blocks(item: dict[str, Any]) -> list[Block]:
    search_id = item.get("id") if isinstance(item.get("id"), str) else ""
    raw_action = item.get("action")
    action: dict[str, Any] = raw_action if isinstance(raw_action, dict) else {}
    query = action.get("query")
    tool_input = {"query": query} if action.get("type") == "search" and query else {}
    blocks: list[Block] = [
        {"type": "server_tool_use", "id": search_id, "name": "web_search", "input": tool_input}
    ]
    sources = action.get("sources")
    urls = [
        source["url"]
        for source in (sources if isinstance(sources, list) else [])
        if isinstance(source, dict) and isinstance(source.get("url"), str) and source["url"]
    ]
    if urls:
        results = [
            {
                "type": "web_search_result",
                "title": "",
                "url": url,
                "encrypted_content": "",
                "page_age": None,
            }
            for url in urls
        ]
        blocks.append(
            {"type": "web_search_tool_result", "tool_use_id": search_id, "content": results}
        )
    return blocks


def _tool_use(item: dict[str, Any], index: int, message_id: str) -> Block:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        call_id = tool_use_id(message_id, index)
    name = item.get("name")
    name = name if isinstance(name, str) else ""
    namespace = item.get("namespace")
    if isinstance(namespace, str) and namespace:
        name = flatten(namespace, name)
    if item.get("type") == "custom_tool_call":
        raw = item.get("input")
        tool_input: dict[str, Any] = {CUSTOM_INPUT_KEY: raw if isinstance(raw, str) else ""}
    else:
        tool_input = tool_input_from_arguments(item.get("arguments"))
    return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}


def _message_usage(usage: Any) -> dict[str, int]:
    if not isinstance(usage, dict):
        usage = {}
    details = usage.get("input_tokens_details")
    details = details if isinstance(details, dict) else {}
    total = token_count(usage, "input_tokens")
    cached = min(token_count(details, "cached_tokens"), total)
    written = min(token_count(details, "cache_write_tokens"), total - cached)
    return {
        "input_tokens": total - cached - written,
        "output_tokens": token_count(usage, "output_tokens"),
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": cached,
    }
