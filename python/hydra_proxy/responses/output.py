"""OpenAI Responses SSE events, as bytes (twin of rust/src/responses/output.rs).

Every event is ``event: <type>\\ndata: <compact JSON>\\n\\n`` with ``type`` and
``sequence_number`` first, the shape of the recordings in tests/fixtures/responses/.
Strings are escaped by orjson, whose escaping equals serde_json's, so both implementations
emit the same bytes. Items are written once, as JSON text, and the same text is repeated in
the ``output`` of the closing ``response`` object.
"""

from __future__ import annotations

from orjson import dumps

PING = b": ping\n\n"


def _event(kind: bytes, sequence_number: int, body: bytes) -> bytes:
    return b'event: %s\ndata: {"type":"%s","sequence_number":%d,%s}\n\n' % (
        kind,
        kind,
        sequence_number,
        body,
    )


def response_object(
    response_id: str,
    created_at: int,
    status: str,
    model: str,
    output: list[bytes],
    echo: bytes,
    *,
    error: bytes = b"null",
    incomplete_details: bytes = b"null",
    usage: bytes = b"null",
) -> bytes:
    """A ``response`` object; `echo` is the inside of the request echo's JSON object."""
    return (
        b'{"id":%s,"object":"response","created_at":%d,"status":"%s","background":false,'
        b'"error":%s,"incomplete_details":%s,"model":%s,"output":[%s]%s,"usage":%s}'
        % (
            dumps(response_id),
            created_at,
            status.encode(),
            error,
            incomplete_details,
            dumps(model),
            b",".join(output),
            b"," + echo if echo else b"",
            usage,
        )
    )


def response_event(kind: bytes, sequence_number: int, response: bytes) -> bytes:
    return _event(kind, sequence_number, b'"response":%s' % response)


def item_event(kind: bytes, sequence_number: int, output_index: int, item: bytes) -> bytes:
    return _event(kind, sequence_number, b'"output_index":%d,"item":%s' % (output_index, item))


def _in_item(item_id: str, output_index: int) -> bytes:
    return b'"item_id":%s,"output_index":%d' % (dumps(item_id), output_index)


def text_part(text: str, annotations: list[bytes] | None = None) -> bytes:
    return b'{"type":"output_text","annotations":[%s],"logprobs":[],"text":%s}' % (
        b",".join(annotations or ()),
        dumps(text),
    )


def url_citation(start: int, end: int, title: str, url: str) -> bytes:
    return b'{"type":"url_citation","end_index":%d,"start_index":%d,"title":%s,"url":%s}' % (
        end,
        start,
        dumps(title),
        dumps(url),
    )


def annotation_added(
    sequence_number: int, item_id: str, output_index: int, index: int, annotation: bytes
) -> bytes:
    body = b'%s,"content_index":0,"annotation_index":%d,"annotation":%s' % (
        _in_item(item_id, output_index),
        index,
        annotation,
    )
    return _event(b"response.output_text.annotation.added", sequence_number, body)


def content_part(
    kind: bytes,
    sequence_number: int,
    item_id: str,
    output_index: int,
    text: str,
    annotations: list[bytes] | None = None,
) -> bytes:
    body = b'%s,"content_index":0,"part":%s' % (
        _in_item(item_id, output_index),
        text_part(text, annotations),
    )
    return _event(kind, sequence_number, body)


def text_delta(sequence_number: int, item_id: str, output_index: int, delta: str) -> bytes:
    body = b'%s,"content_index":0,"delta":%s,"logprobs":[]' % (
        _in_item(item_id, output_index),
        dumps(delta),
    )
    return _event(b"response.output_text.delta", sequence_number, body)


def text_done(sequence_number: int, item_id: str, output_index: int, text: str) -> bytes:
    body = b'%s,"content_index":0,"text":%s,"logprobs":[]' % (
        _in_item(item_id, output_index),
        dumps(text),
    )
    return _event(b"response.output_text.done", sequence_number, body)


def summary_part(
    kind: bytes, sequence_number: int, item_id: str, output_index: int, index: int, text: str
) -> bytes:
    body = b'%s,"summary_index":%d,"part":{"type":"summary_text","text":%s}' % (
        _in_item(item_id, output_index),
        index,
        dumps(text),
    )
    return _event(kind, sequence_number, body)


def summary_text(
    kind: bytes,
    field: bytes,
    sequence_number: int,
    item_id: str,
    output_index: int,
    index: int,
    text: str,
) -> bytes:
    """A ``reasoning_summary_text`` delta (`field` ``delta``) or done (``text``) event."""
    body = b'%s,"summary_index":%d,"%s":%s' % (
        _in_item(item_id, output_index),
        index,
        field,
        dumps(text),
    )
    return _event(kind, sequence_number, body)


def call_input(
    kind: bytes, field: bytes, sequence_number: int, item_id: str, output_index: int, text: str
) -> bytes:
    """A function call's arguments or a custom tool call's input: delta or done."""
    body = b'%s,"%s":%s' % (_in_item(item_id, output_index), field, dumps(text))
    return _event(kind, sequence_number, body)


def message_item(
    item_id: str, status: str, text: str | None, annotations: list[bytes] | None = None
) -> bytes:
    """An assistant ``message`` item; `text` None for the empty item of output_item.added."""
    content = b"" if text is None else text_part(text, annotations)
    return b'{"id":%s,"type":"message","status":"%s","content":[%s],"role":"assistant"}' % (
        dumps(item_id),
        status.encode(),
        content,
    )


def _namespace(namespace: str | None) -> bytes:
    return b"" if namespace is None else b',"namespace":%s' % dumps(namespace)


def call_item(
    item_id: str,
    status: str,
    text: str,
    call_id: str,
    name: str,
    namespace: str | None,
    custom: bool,
) -> bytes:
    """A ``function_call`` item (`text`: its arguments) or a ``custom_tool_call`` (its input)."""
    item_type, field = (
        (b"custom_tool_call", b"input") if custom else (b"function_call", b"arguments")
    )
    return b'{"id":%s,"type":"%s","status":"%s","%s":%s,"call_id":%s,"name":%s%s}' % (
        dumps(item_id),
        item_type,
        status.encode(),
        field,
        dumps(text),
        dumps(call_id),
        dumps(name),
        _namespace(namespace),
    )


def reasoning_item_added(item_id: str) -> bytes:
    """The empty ``reasoning`` item of output_item.added."""
    return b'{"id":%s,"type":"reasoning","summary":[]}' % dumps(item_id)


def error(code: str, message: str) -> bytes:
    return b'{"code":"%s","message":%s}' % (code.encode(), dumps(message))


def web_search_item(
    item_id: str, status: str, query: str | None, sources: list[str] | None = None
) -> bytes:
    """A ``web_search_call`` item; `query` None for the item of output_item.added; the
    `sources` are the URLs of the pages the search found."""
    found = b""
    if sources:
        found = b',"sources":[%s]' % b",".join(
            b'{"type":"url","url":%s}' % dumps(url) for url in sources
        )
    action = (
        b""
        if query is None
        else b',"action":{"type":"search","query":%s%s}' % (dumps(query), found)
    )
    return b'{"id":%s,"type":"web_search_call","status":"%s"%s}' % (
        dumps(item_id),
        status.encode(),
        action,
    )


def web_search_event(kind: bytes, sequence_number: int, item_id: str, output_index: int) -> bytes:
    """A web search's progress: in_progress, searching, completed."""
    return _event(kind, sequence_number, _in_item(item_id, output_index))
