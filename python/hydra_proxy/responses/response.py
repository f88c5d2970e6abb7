"""Non-streamed replies: Anthropic Message <-> Responses ``response`` object.

Pure translation, no I/O; ids are passed in (or derived from the ones passed in), so the
output is reproducible. The per-piece helpers (`response_status`, `responses_usage`,
`item_id`, `reasoning_item`, `call_item`) are what the stream encoder uses too.

Message -> response (`response_from_message`; a Responses client on any upstream)
  ``id`` as given (``resp_...``), ``object: "response"``, ``created_at``, ``model``, the
  request echo of `ResponsesContext.echo`, ``error: null``. ``status`` from the stop
  reason (`response_status`): ``max_tokens`` / ``model_context_window_exceeded`` ->
  ``incomplete`` with ``incomplete_details.reason: "max_output_tokens"``, ``refusal`` ->
  ``incomplete`` with ``content_filter``, else ``completed``. ``output`` in block order:
  a run of thinking/redacted_thinking blocks -> one ``reasoning`` item (``rs_``; ``summary``
  one ``summary_text`` per non-empty thinking text when the request asked for a summary,
  else ``[]``; ``encrypted_content`` the client carrier of those blocks when ``include``
  asked for it and a key is set), a run of text blocks -> one assistant ``message`` item
  (``msg_``; one ``output_text`` with the texts joined, ``annotations`` one
  ``url_citation`` per text citation with a URL, spanning its text block, ``logprobs:
  []``; ``status: "incomplete"`` when it is the last item of an incomplete response),
  each ``tool_use`` -> a ``function_call`` item (``fc_``; ``call_id`` the tool_use id,
  ``name`` and ``namespace`` restored through `ToolNames`, ``arguments`` compact JSON) or
  a ``custom_tool_call`` item (``ctc_``; ``input`` the string) for a custom tool.
  Server-tool blocks ran at Anthropic and are left out (their findings are in the text).
  Item ids are ``<prefix>_<response id without resp_>_<output index>``.
  ``usage`` (`responses_usage`): ``input_tokens`` = input + cache read + cache write,
  ``input_tokens_details.cached_tokens`` = cache read, ``cache_write_tokens`` = cache
  write, ``output_tokens``, ``output_tokens_details.reasoning_tokens`` = the
  ``reasoning_tokens`` argument, at most ``output_tokens`` (Anthropic does not report it
  separately; the server may count `thinking_text` with its tokenizer, which this I/O-free
  module does not load), ``total_tokens``.

Response -> message (`message_from_response`; the ``responses`` provider kind)
  A failed response or one with an ``error`` raises `ProxyError` (`errors.upstream_failure`).
  ``reasoning`` items -> a thinking block: the text is the summary texts joined with a blank
  line (else the ``reasoning_text`` content), the signature the upstream carrier
  (`reasoning.sign_upstream_item`) of the item's ``id`` and ``encrypted_content`` so the
  request writer can replay it; an item without encrypted content is signed like Chat
  reasoning (``hydra1.``); an empty item without encrypted content is left out; an
  ``encrypted_content`` that is this proxy's own client carrier (a hydra upstream)
  restores its blocks as they were. ``message`` items -> text blocks (``output_text``;
  ``refusal`` as its text); ``function_call`` -> ``tool_use`` (id = ``call_id``, name
  flattened with its ``namespace`` if any, ``arguments`` read as the Chat response
  reader reads them); ``custom_tool_call`` -> ``tool_use`` with ``{"input": <input>}``;
  hosted tool items (web search...) are left out. ``stop_reason``: ``incomplete`` with
  ``max_output_tokens`` -> ``max_tokens``, with ``content_filter`` -> ``refusal``; else
  ``tool_use`` when there is a call, else ``end_turn``. ``usage``: ``input_tokens`` =
  input - cached - cache write, ``cache_read_input_tokens`` = cached,
  ``cache_creation_input_tokens`` = ``cache_write_tokens``, ``output_tokens``.
"""

from __future__ import annotations

import os
from typing import Any

from ..chat.response.writer import url_citations
from ..chat.tool_arguments import tool_arguments, tool_input_from_arguments
from ..errors import ProxyError
from ..signature import sign_thinking
from .context import ResponsesContext
from .errors import upstream_failure
from .reasoning import decode_carrier, encode_carrier, sign_upstream_item
from .tools import CUSTOM_INPUT_KEY, ToolNames, custom_input, flatten

__all__ = [
    "INCOMPLETE_REASONS",
    "call_item",
    "call_item_prefix",
    "item_id",
    "message_from_response",
    "new_response_id",
    "reasoning_item",
    "response_from_message",
    "response_status",
    "responses_usage",
    "thinking_text",
]

INCOMPLETE_REASONS: dict[str, str] = {
    "max_tokens": "max_output_tokens",
    "model_context_window_exceeded": "max_output_tokens",
    "refusal": "content_filter",
}
_STOP_REASONS = {"max_output_tokens": "max_tokens", "content_filter": "refusal"}
_THINKING = ("thinking", "redacted_thinking")

Block = dict[str, Any]
Item = dict[str, Any]


def new_response_id() -> str:
    return "resp_hydra" + os.urandom(12).hex()


def item_id(prefix: str, response_id: str, output_index: int) -> str:
    """A reproducible output item id: ``<prefix>_<response id without resp_>_<index>``."""
    return f"{prefix}_{response_id.removeprefix('resp_')}_{output_index}"


def response_status(stop_reason: Any) -> tuple[str, dict[str, str] | None]:
    """(``status``, ``incomplete_details``) for an Anthropic stop reason."""
    reason = INCOMPLETE_REASONS.get(stop_reason) if isinstance(stop_reason, str) else None
    if reason is None:
        return "completed", None
    return "incomplete", {"reason": reason}


def _count(usage: dict[str, Any], name: str) -> int:
    value = usage.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return 0
    return value


def responses_usage(usage: Any, reasoning_tokens: int = 0) -> dict[str, Any]:
    """Responses ``usage`` for an Anthropic usage object (cache reads/writes are input)."""
    if not isinstance(usage, dict):
        usage = {}
    cache_read = _count(usage, "cache_read_input_tokens")
    cache_write = _count(usage, "cache_creation_input_tokens")
    input_tokens = _count(usage, "input_tokens") + cache_read + cache_write
    output_tokens = _count(usage, "output_tokens")
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cache_read, "cache_write_tokens": cache_write},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": min(reasoning_tokens, output_tokens)},
        "total_tokens": input_tokens + output_tokens,
    }


def reasoning_item(
    blocks: list[Block], item: str, context: ResponsesContext, key: bytes | None
) -> Item:
    """The ``reasoning`` output item for a run of thinking/redacted_thinking blocks."""
    summary = []
    if context.summary:
        summary = [
            {"type": "summary_text", "text": block["thinking"]}
            for block in blocks
            if block.get("type") == "thinking"
            and isinstance(block.get("thinking"), str)
            and block["thinking"]
        ]
    out: Item = {"id": item, "type": "reasoning", "summary": summary}
    if context.include_encrypted and key:
        out["encrypted_content"] = encode_carrier(blocks, key)
    return out


def call_item(block: Block, item: str, names: ToolNames) -> Item:
    """The ``function_call`` / ``custom_tool_call`` output item for a tool_use block."""
    sent = block.get("name")
    origin = names.origin(sent if isinstance(sent, str) else "")
    call_id = block.get("id")
    out: Item
    if origin.custom:
        out = {
            "id": item,
            "type": "custom_tool_call",
            "call_id": call_id if isinstance(call_id, str) else "",
            "name": origin.name,
            "input": custom_input(block.get("input")),
        }
    else:
        out = {
            "id": item,
            "type": "function_call",
            "status": "completed",
            "call_id": call_id if isinstance(call_id, str) else "",
            "name": origin.name,
            "arguments": tool_arguments(block.get("input")),
        }
    if origin.namespace is not None:
        out["namespace"] = origin.namespace
    return out


def call_item_prefix(block: Block, names: ToolNames) -> str:
    """The item id prefix of a tool_use block's call item: ``ctc`` (custom) or ``fc``."""
    sent = block.get("name")
    return "ctc" if names.origin(sent if isinstance(sent, str) else "").custom else "fc"


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

    content = message.get("content")
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype in _THINKING:
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
    flush_thinking()
    flush_texts()
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


def _message_item(blocks: list[Block], item: str) -> Item:
    annotations: list[dict[str, Any]] = []
    pieces: list[str] = []
    offset = 0
    for block in blocks:
        text = block["text"]
        for citation in url_citations(block.get("citations"), offset, offset + len(text)):
            annotations.append({"type": "url_citation", **citation["url_citation"]})
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


# ----------------------------------------------------------------- response -> message


def message_from_response(
    response: Any, *, message_id: str, model: str, key: bytes = b""
) -> dict[str, Any]:
    """Translate a non-streamed Responses ``response`` object into an Anthropic Message."""
    if not isinstance(response, dict):
        raise ProxyError(
            500, "upstream returned a response that is not a JSON object", error_type="api_error"
        )
    failure = upstream_failure(response)
    if failure is not None:
        raise failure
    content: list[Block] = []
    output = response.get("output")
    for item in output if isinstance(output, list) else []:
        if not isinstance(item, dict):
            continue
        itype = item.get("type")
        if itype == "reasoning":
            content.extend(_thinking_blocks(item, key))
        elif itype == "message":
            content.extend(_text_blocks(item))
        elif itype in ("function_call", "custom_tool_call"):
            content.append(_tool_use(item, len(content), message_id))
    incomplete = response.get("incomplete_details")
    reason = incomplete.get("reason") if isinstance(incomplete, dict) else None
    stop_reason = _STOP_REASONS.get(reason) if isinstance(reason, str) else None
    if stop_reason is None:
        has_call = any(block["type"] == "tool_use" for block in content)
        stop_reason = "tool_use" if has_call else "end_turn"
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": _message_usage(response.get("usage")),
    }


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
            blocks.append({"type": "text", "text": text})
    return blocks


def _tool_use(item: dict[str, Any], index: int, message_id: str) -> Block:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        call_id = f"toolu_{message_id.removeprefix('msg_')}_{index}"
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
    total = _count(usage, "input_tokens")
    cached = min(_count(details, "cached_tokens"), total)
    written = min(_count(details, "cache_write_tokens"), total - cached)
    return {
        "input_tokens": total - cached - written,
        "output_tokens": _count(usage, "output_tokens"),
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": cached,
    }
