"""Reading one Anthropic Messages stream event, the Anthropic decoder's reader (twin of
rust/src/anthropic/chunk.rs): only the fields the decoder uses, the whole event checked
before any of it is acted on."""

from __future__ import annotations

from typing import Any

from ..json_read import BadShape, opt_dict, opt_index, opt_str

Chunk = tuple[
    str | None,  # type
    int | None,  # index
    tuple[
        str | None, str | None, str | None, str | None, str | None, str | None, str | None, object
    ]
    | None,
    # content_block: type, id, name, text, thinking, data, tool_use_id, content
    tuple[str | None, str | None, str | None, str | None, str | None, str | None, object] | None,
    # delta: type, text, thinking, signature, partial_json, stop_reason, citation
    dict[str, Any] | None,  # usage (message_start's message.usage or message_delta's usage)
    tuple[str | None, str | None],  # message_start's message id and model (lenient)
    bool,  # has a non-null `error`
]


def _lenient_str(value: object) -> str | None:
    return value if type(value) is str else None


def read_chunk(payload: object) -> Chunk:
    """The fields of one event the decoder acts on, or BadShape."""
    if type(payload) is not dict:
        raise BadShape
    block = opt_dict(payload, "content_block")
    delta = opt_dict(payload, "delta")
    message = opt_dict(payload, "message")
    usage = payload.get("usage")
    if type(usage) is not dict:
        inner = message.get("usage") if message is not None else None
        usage = inner if type(inner) is dict else None
    return (
        opt_str(payload, "type"),
        opt_index(payload, "index"),
        None
        if block is None
        else (
            opt_str(block, "type"),
            opt_str(block, "id"),
            opt_str(block, "name"),
            opt_str(block, "text"),
            opt_str(block, "thinking"),
            opt_str(block, "data"),
            opt_str(block, "tool_use_id"),
            block.get("content"),
        ),
        None
        if delta is None
        else (
            opt_str(delta, "type"),
            opt_str(delta, "text"),
            opt_str(delta, "thinking"),
            opt_str(delta, "signature"),
            opt_str(delta, "partial_json"),
            opt_str(delta, "stop_reason"),
            delta.get("citation"),
        ),
        usage,
        (None, None)
        if message is None
        else (_lenient_str(message.get("id")), _lenient_str(message.get("model"))),
        payload.get("error") is not None,
    )
