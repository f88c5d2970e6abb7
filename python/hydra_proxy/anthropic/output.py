"""Anthropic Messages SSE events, as bytes (twin of rust/src/anthropic/output.rs).

Every event is `event: <type>\\ndata: <compact JSON>\\n\\n`; the SDKs dispatch on the `event:`
line. Strings are escaped by orjson, whose escaping equals serde_json's (control characters
as \\b \\t \\n \\f \\r or \\u00XX, everything else raw UTF-8), so both implementations emit the
same bytes.
"""

from __future__ import annotations

from orjson import dumps


def message_start(message_id: str, model: str, input_tokens: int) -> bytes:
    return (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":%s,"type":"message",'
        b'"role":"assistant","model":%s,"content":[],"stop_reason":null,"stop_sequence":null,'
        b'"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,'
        b'"output_tokens":0}}}\n\n' % (dumps(message_id), dumps(model), input_tokens)
    )


def text_start(index: int) -> bytes:
    return (
        b'event: content_block_start\ndata: {"type":"content_block_start","index":%d,'
        b'"content_block":{"type":"text","text":""}}\n\n' % index
    )


def thinking_start(index: int) -> bytes:
    return (
        b'event: content_block_start\ndata: {"type":"content_block_start","index":%d,'
        b'"content_block":{"type":"thinking","thinking":"","signature":""}}\n\n' % index
    )


def redacted_thinking_start(index: int, data: str) -> bytes:
    return (
        b'event: content_block_start\ndata: {"type":"content_block_start","index":%d,'
        b'"content_block":{"type":"redacted_thinking","data":%s}}\n\n' % (index, dumps(data))
    )


def tool_use_start(index: int, tool_id: str, name: str) -> bytes:
    return (
        b'event: content_block_start\ndata: {"type":"content_block_start","index":%d,'
        b'"content_block":{"type":"tool_use","id":%s,"name":%s,"input":{}}}\n\n'
        % (index, dumps(tool_id), dumps(name))
    )


def text_delta(index: int, text: str) -> bytes:
    return (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":%d,'
        b'"delta":{"type":"text_delta","text":%s}}\n\n' % (index, dumps(text))
    )


def thinking_delta(index: int, thinking: str) -> bytes:
    return (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":%d,'
        b'"delta":{"type":"thinking_delta","thinking":%s}}\n\n' % (index, dumps(thinking))
    )


def input_json_delta(index: int, partial_json: str) -> bytes:
    return (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":%d,'
        b'"delta":{"type":"input_json_delta","partial_json":%s}}\n\n' % (index, dumps(partial_json))
    )


def signature_delta(index: int, signature: str) -> bytes:
    return (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":%d,'
        b'"delta":{"type":"signature_delta","signature":%s}}\n\n' % (index, dumps(signature))
    )


def citations_delta(index: int, citation: str) -> bytes:
    """`citation` is JSON text, written as it is."""
    return (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":%d,'
        b'"delta":{"type":"citations_delta","citation":%s}}\n\n' % (index, citation.encode())
    )


def block_stop(index: int) -> bytes:
    return b'event: content_block_stop\ndata: {"type":"content_block_stop","index":%d}\n\n' % index


def message_delta(
    stop_reason: str, input_tokens: int, cache_read_input_tokens: int, output_tokens: int
) -> bytes:
    return (
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"%s",'
        b'"stop_sequence":null},"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,'
        b'"cache_read_input_tokens":%d,"output_tokens":%d}}\n\n'
        % (stop_reason.encode(), input_tokens, cache_read_input_tokens, output_tokens)
    )


MESSAGE_STOP = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'

PING = b'event: ping\ndata: {"type":"ping"}\n\n'


def error(error_type: str, message: str) -> bytes:
    return b'event: error\ndata: {"type":"error","error":{"type":"%s","message":%s}}\n\n' % (
        error_type.encode(),
        dumps(message),
    )


def server_tool_use_start(index: int, tool_id: str, name: str) -> bytes:
    return (
        b'event: content_block_start\ndata: {"type":"content_block_start","index":%d,'
        b'"content_block":{"type":"server_tool_use","id":%s,"name":%s,"input":{}}}\n\n'
        % (index, dumps(tool_id), dumps(name))
    )


def web_search_result(url: str, title: str) -> bytes:
    """One result of a web_search_tool_result (no encrypted content: these results come
    from another provider, and only Anthropic reads it)."""
    return (
        b'{"type":"web_search_result","title":%s,"url":%s,"encrypted_content":"","page_age":null}'
        % (
            dumps(title),
            dumps(url),
        )
    )


def web_search_tool_result(index: int, tool_use_id: str, results: list[bytes]) -> bytes:
    """The whole results block, its start and its stop."""
    return (
        b'event: content_block_start\ndata: {"type":"content_block_start","index":%d,'
        b'"content_block":{"type":"web_search_tool_result","tool_use_id":%s,"content":[%s]}}\n\n'
        % (index, dumps(tool_use_id), b",".join(results))
    ) + block_stop(index)
