"""Sampling, limits, stop sequences, user id, response format and stream options.

``max_completion_tokens`` (preferred) or ``max_tokens`` -> ``max_tokens`` (the default and
the clamp are applied in `translate`, after thinking has had its say). ``stop`` (string or
up to 4 strings) -> ``stop_sequences``; an empty or whitespace-only sequence is a 400
(Anthropic rejects it). ``temperature`` 0-2 and ``top_p`` 0-1 are range-checked here (how
they are sent depends on thinking: `translate`). ``top_k`` (a non-OpenAI extension some
clients send) is passed when a positive integer. ``user`` (else ``safety_identifier``) ->
``metadata.user_id``, verbatim up to 256 characters, else its SHA-256 hex digest.

Response format: ``text`` -> nothing; ``json_schema`` -> ``output_config.format``
``{type: json_schema, schema}`` (``name``/``strict``/``description`` dropped; ``schema``
required); ``json_object`` -> Anthropic has no "any JSON object" mode, so
`JSON_OBJECT_INSTRUCTION` is appended to the system text.

Streaming: `Translation.include_usage` is ``stream_options.include_usage`` for streaming
requests (``stream_options`` on a non-streaming request is ignored).
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..common import MAX_STOP_SEQUENCES
from .validation import bad, is_int, is_number, type_name

__all__ = [
    "JSON_OBJECT_INSTRUCTION",
    "MAX_USER_ID_CHARS",
    "read_include_usage",
    "read_max_tokens",
    "read_number",
    "read_response_format",
    "read_stop",
    "read_top_k",
    "read_user_id",
]

MAX_USER_ID_CHARS = 256
JSON_OBJECT_INSTRUCTION = (
    "Respond with a single valid JSON object and nothing else: no prose, no Markdown code fence."
)


def read_include_usage(body: dict[str, Any], stream: bool) -> bool:
    options = body.get("stream_options")
    if options is None:
        return False
    if not isinstance(options, dict):
        raise bad("stream_options", f"must be an object, got {type_name(options)}")
    include = options.get("include_usage")
    if include is not None and not isinstance(include, bool):
        raise bad("stream_options.include_usage", f"must be a boolean, got {type_name(include)}")
    return stream and include is True


def read_max_tokens(body: dict[str, Any]) -> int | None:
    chosen: int | None = None
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if value is None:
            continue
        if not is_int(value) or value < 1:
            raise bad(name, f"must be a positive integer, got {value!r}")
        if chosen is None:
            chosen = value
    return chosen


def read_stop(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        items: list[Any] = [value]
        paths = ["stop"]
    elif isinstance(value, list):
        if len(value) > MAX_STOP_SEQUENCES:
            raise bad("stop", f"at most {MAX_STOP_SEQUENCES} stop sequences, got {len(value)}")
        items = value
        paths = [f"stop[{i}]" for i in range(len(value))]
    else:
        raise bad("stop", f"must be a string or an array of strings, got {type_name(value)}")
    out: list[str] = []
    for item, path in zip(items, paths, strict=True):
        if not isinstance(item, str):
            raise bad(path, f"must be a string, got {type_name(item)}")
        if not item.strip():
            raise bad(path, "Claude does not accept empty or whitespace-only stop sequences")
        out.append(item)
    return out


def read_number(body: dict[str, Any], name: str, low: float, high: float) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if not is_number(value):
        raise bad(name, f"must be a number, got {type_name(value)}")
    if not low <= value <= high:
        raise bad(name, f"must be between {low:g} and {high:g}, got {value!r}")
    return value  # type: ignore[no-any-return]


def read_top_k(value: Any) -> int | None:
    if value is None:
        return None
    if not is_int(value) or value < 1:
        raise bad("top_k", f"must be a positive integer, got {value!r}")
    return value  # type: ignore[no-any-return]


def read_user_id(body: dict[str, Any]) -> str | None:
    for name in ("user", "safety_identifier"):
        value = body.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise bad(name, f"must be a string, got {type_name(value)}")
        if not value:
            continue
        if len(value) > MAX_USER_ID_CHARS:
            return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
        return value
    return None


def read_response_format(value: Any) -> tuple[dict[str, Any] | None, bool]:
    if value is None:
        return None, False
    if not isinstance(value, dict):
        raise bad("response_format", f"must be an object, got {type_name(value)}")
    rtype = value.get("type")
    if rtype == "text":
        return None, False
    if rtype == "json_object":
        return None, True
    if rtype != "json_schema":
        raise bad("response_format.type", "must be 'text', 'json_object' or 'json_schema'")
    spec = value.get("json_schema")
    if not isinstance(spec, dict):
        raise bad("response_format.json_schema", "required: an object with name and schema")
    name = spec.get("name")
    if name is not None and not isinstance(name, str):
        raise bad("response_format.json_schema.name", "must be a string")
    schema = spec.get("schema")
    if not isinstance(schema, dict):
        raise bad("response_format.json_schema.schema", "required: a JSON Schema object")
    return {"type": "json_schema", "schema": schema}, False
