"""The pieces of a Responses ``response`` object that the non-streamed writer
(`response.writer`) and the stream encoder build alike (what the native encoder needs of
them is in rust/src/responses/items.rs).

``status`` from the stop reason (`response_status`): ``max_tokens`` /
``model_context_window_exceeded`` -> ``incomplete`` with ``incomplete_details.reason:
"max_output_tokens"``, ``refusal`` -> ``incomplete`` with ``content_filter``, else
``completed``. Item ids are ``<prefix>_<response id without resp_>_<output index>``
(`item_id`). A run of thinking/redacted_thinking blocks -> one ``reasoning`` item
(`reasoning_item`: ``summary`` one ``summary_text`` per non-empty thinking text when the
request asked for a summary, else ``[]``; ``encrypted_content`` the client carrier of
those blocks when ``include`` asked for it and a key is set); a ``tool_use`` -> a
``function_call`` item (``fc_``; ``call_id`` the tool_use id, ``name`` and ``namespace``
restored through `ToolNames`, ``arguments`` compact JSON) or a ``custom_tool_call`` item
(``ctc_``; ``input`` the string) for a custom tool (`call_item`). ``usage``
(`responses_usage`): ``input_tokens`` = input + cache read + cache write,
``input_tokens_details.cached_tokens`` = cache read, ``cache_write_tokens`` = cache write,
``output_tokens``, ``output_tokens_details.reasoning_tokens`` = the ``reasoning_tokens``
argument, at most ``output_tokens`` (Anthropic does not report it separately; the server
may count it with its tokenizer), ``total_tokens``.
"""

from __future__ import annotations

from typing import Any

from ..canonical.tools import tool_arguments
from .context import ResponsesContext
from .reasoning import encode_carrier
from .tools import ToolNames, custom_input

__all__ = [
    "INCOMPLETE_REASONS",
    "call_item",
    "call_item_prefix",
    "item_id",
    "reasoning_item",
    "response_status",
    "responses_usage",
    "token_count",
]

INCOMPLETE_REASONS: dict[str, str] = {
    "max_tokens": "max_output_tokens",
    "model_context_window_exceeded": "max_output_tokens",
    "refusal": "content_filter",
}

Block = dict[str, Any]
Item = dict[str, Any]


def item_id(prefix: str, response_id: str, output_index: int) -> str:
    """A reproducible output item id: ``<prefix>_<response id without resp_>_<index>``."""
    return f"{prefix}_{response_id.removeprefix('resp_')}_{output_index}"


def response_status(stop_reason: Any) -> tuple[str, dict[str, str] | None]:
    """(``status``, ``incomplete_details``) for an Anthropic stop reason."""
    reason = INCOMPLETE_REASONS.get(stop_reason) if isinstance(stop_reason, str) else None
    if reason is None:
        return "completed", None
    return "incomplete", {"reason": reason}


def token_count(usage: dict[str, Any], name: str) -> int:
    value = usage.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return 0
    return value


def responses_usage(usage: Any, reasoning_tokens: int = 0) -> dict[str, Any]:
    """Responses ``usage`` for an Anthropic usage object (cache reads/writes are input)."""
    if not isinstance(usage, dict):
        usage = {}
    cache_read = token_count(usage, "cache_read_input_tokens")
    cache_write = token_count(usage, "cache_creation_input_tokens")
    input_tokens = token_count(usage, "input_tokens") + cache_read + cache_write
    output_tokens = token_count(usage, "output_tokens")
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
