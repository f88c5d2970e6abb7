"""Reading one Chat Completions stream chunk, the Chat decoder's reader (twin of
rust/src/chat/chunk.rs): only the fields the decoder uses, the whole chunk checked before
any of it is acted on, as the native side's typed deserialisation does, so a malformed
chunk produces no partial output."""

from __future__ import annotations

from typing import Any

from ..json_read import BadShape, opt_dict, opt_index, opt_list, opt_str

ToolCallDelta = tuple[int | None, str | None, str | None, str | None]  # index, id, name, args
Delta = tuple[
    str | None, str | None, str | None, list[ToolCallDelta]
]  # reasoning, content, refusal


def _objects(parent: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """A list member whose elements must be objects (none when absent)."""
    items = opt_list(parent, key) or []
    for item in items:
        if type(item) is not dict:
            raise BadShape
    return items


def read_chunk(
    chunk: object,
) -> tuple[object, dict[str, Any] | None, list[tuple[Delta | None, str | None]]]:
    """(error, usage, [(delta, finish_reason) of the first choice]) or BadShape."""
    if type(chunk) is not dict:
        raise BadShape
    usage = chunk.get("usage")
    if type(usage) is not dict:
        groq = chunk.get("x_groq")
        usage = groq.get("usage") if type(groq) is dict else None
        if type(usage) is not dict:
            usage = None
    read: list[tuple[Delta | None, str | None]] = []
    for choice in _objects(chunk, "choices"):
        index = opt_index(choice, "index")
        delta = opt_dict(choice, "delta")
        finish_reason = opt_str(choice, "finish_reason")
        read_delta = _read_delta(delta) if delta is not None else None
        if not index:  # only the first choice is translated (n > 1 is refused upstream)
            read.append((read_delta, finish_reason))
    return chunk.get("error"), usage, read


def _read_delta(delta: dict[str, Any]) -> Delta:
    reasoning = opt_str(delta, "reasoning_content")
    fallback = opt_str(delta, "reasoning")
    if not reasoning:
        reasoning = fallback  # Groq/OpenRouter name; some upstreams send both, duplicated
    calls: list[ToolCallDelta] = []
    for call in _objects(delta, "tool_calls"):
        upstream_index = opt_index(call, "index")
        tool_id = opt_str(call, "id")
        function = opt_dict(call, "function")
        name = arguments = None
        if function is not None:
            name = opt_str(function, "name")
            arguments = opt_str(function, "arguments")
        calls.append((upstream_index, tool_id, name, arguments))
    return reasoning, opt_str(delta, "content"), opt_str(delta, "refusal"), calls
