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


def _block_start(content_block: bytes) -> bytes:
    """A content_block_start event's template: `%d` for the index, then `content_block` (with
    its own placeholders)."""
    return (
        b'event: content_block_start\ndata: {"type":"content_block_start","index":%d,'
        b'"content_block":' + content_block + b"}\n\n"
    )


def _block_delta(delta_type: bytes, field: bytes) -> bytes:
    """A content_block_delta event's template: `%d` for the index, `%s` for the field's
    JSON value."""
    return (
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":%d,'
        b'"delta":{"type":"' + delta_type + b'","' + field + b'":%s}}\n\n'
    )


_TEXT_START = _block_start(b'{"type":"text","text":""}')
_THINKING_START = _block_start(b'{"type":"thinking","thinking":"","signature":""}')
_REDACTED_THINKING_START = _block_start(b'{"type":"redacted_thinking","data":%s}')
# tool_use and server_tool_use
_TOOL_START = _block_start(b'{"type":"%s","id":%s,"name":%s,"input":{}}')
_RESULTS_START = _block_start(b'{"type":"web_search_tool_result","tool_use_id":%s,"content":[%s]}')

_TEXT_DELTA = _block_delta(b"text_delta", b"text")
_THINKING_DELTA = _block_delta(b"thinking_delta", b"thinking")
_INPUT_JSON_DELTA = _block_delta(b"input_json_delta", b"partial_json")
_SIGNATURE_DELTA = _block_delta(b"signature_delta", b"signature")
_CITATIONS_DELTA = _block_delta(b"citations_delta", b"citation")


def text_start(index: int) -> bytes:
    return _TEXT_START % index


def thinking_start(index: int) -> bytes:
    return _THINKING_START % index


def redacted_thinking_start(index: int, data: str) -> bytes:
    return _REDACTED_THINKING_START % (index, dumps(data))


def tool_use_start(index: int, tool_id: str, name: str) -> bytes:
    return _TOOL_START % (index, b"tool_use", dumps(tool_id), dumps(name))


def server_tool_use_start(index: int, tool_id: str, name: str) -> bytes:
    return _TOOL_START % (index, b"server_tool_use", dumps(tool_id), dumps(name))


def text_delta(index: int, text: str) -> bytes:
    return _TEXT_DELTA % (index, dumps(text))


def thinking_delta(index: int, thinking: str) -> bytes:
    return _THINKING_DELTA % (index, dumps(thinking))


def input_json_delta(index: int, partial_json: str) -> bytes:
    return _INPUT_JSON_DELTA % (index, dumps(partial_json))


def signature_delta(index: int, signature: str) -> bytes:
    return _SIGNATURE_DELTA % (index, dumps(signature))


def citations_delta(index: int, citation: str) -> bytes:
    """`citation` is JSON text, written as it is."""
    return _CITATIONS_DELTA % (index, citation.encode())


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
    start = _RESULTS_START % (index, dumps(tool_use_id), b",".join(results))
    return start + block_stop(index)
