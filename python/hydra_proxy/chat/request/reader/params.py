"""Limits, stop sequences, ``top_k`` and stream options of a Chat request.

``max_completion_tokens`` (preferred) or ``max_tokens`` -> ``max_tokens`` (the default and
the clamp are `canonical.request`'s, after thinking has had its say). ``stop`` (string or
up to 4 strings) -> ``stop_sequences``; an empty or whitespace-only sequence is a 400
(Anthropic rejects it). ``top_k`` (a non-OpenAI extension some clients send) is passed
when a positive integer. ``temperature``, ``top_p``, ``user`` and ``response_format`` are
fields both OpenAI protocols share: `canonical.params` reads them.

Streaming: `Translation.include_usage` is ``stream_options.include_usage`` for streaming
requests (``stream_options`` on a non-streaming request is ignored).
"""

from __future__ import annotations

from typing import Any

from ....canonical.fields import bad, is_int, type_name
from ..limits import MAX_STOP_SEQUENCES

__all__ = [
    "read_include_usage",
    "read_max_tokens",
    "read_stop",
    "read_top_k",
]


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


def read_top_k(value: Any) -> int | None:
    if value is None:
        return None
    if not is_int(value) or value < 1:
        raise bad("top_k", f"must be a positive integer, got {value!r}")
    return value  # type: ignore[no-any-return]
