"""Tool call arguments (a JSON object as a string, as both OpenAI APIs carry them) and the
canonical ``tool_use`` ``input`` object, both ways.

`tool_arguments` writes an input as arguments. Two readers go the other way:
`read_arguments`, for a client's own history, is strict (what is not a JSON object is a
400, so the client learns of it); `tool_input_from_arguments`, for what an upstream model
produced, loses nothing (see there).
"""

from __future__ import annotations

import json
from typing import Any

import orjson

from ..json_depth import MAX_EMBEDDED_DEPTH, nested_deeper_than
from .fields import bad, type_name

__all__ = ["RAW_ARGUMENTS_KEY", "read_arguments", "tool_arguments", "tool_input_from_arguments"]

# The key under which unparseable tool call arguments are kept (see below).
RAW_ARGUMENTS_KEY = "_raw_arguments"


def tool_arguments(value: Any) -> str:
    """A tool_use `input` as the compact JSON string Chat carries in `arguments`."""
    if value is None or value == {}:
        return "{}"
    try:
        return orjson.dumps(value).decode("utf-8")
    except TypeError:  # orjson refuses integers beyond 64 bits
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def tool_input_from_arguments(arguments: Any) -> dict[str, Any]:
    """A tool call's `arguments` (normally a JSON string) as an Anthropic `input` object.

    A JSON object string -> that object; empty, missing, ``null`` or ``"null"`` -> ``{}``;
    an object given directly (some servers) -> as is; a JSON string that itself holds an
    object (double-encoded, some servers) -> that object; anything else (invalid JSON,
    truncated at max_tokens, a non-object) -> ``{RAW_ARGUMENTS_KEY: "<the raw text>"}``,
    so nothing is lost: the client's tool validation reports the problem to the model,
    which sees its own arguments and can retry.
    """
    if arguments is None:
        return {}
    if isinstance(arguments, dict):
        return arguments
    if not isinstance(arguments, str):
        return {RAW_ARGUMENTS_KEY: orjson.dumps(arguments).decode("utf-8")}
    if not arguments.strip():
        return {}
    try:
        value = orjson.loads(arguments)
        if isinstance(value, str):
            value = orjson.loads(value)
    except orjson.JSONDecodeError:
        return {RAW_ARGUMENTS_KEY: arguments}
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    return {RAW_ARGUMENTS_KEY: arguments}


def read_arguments(value: Any, path: str) -> dict[str, Any]:
    """A client's tool call `arguments` (at `path`) as an input: a JSON object string,
    ``""``/whitespace -> ``{}``, or an object given directly."""
    if value is None:
        raise bad(path, "required: a JSON object as a string")
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        raise bad(path, f"must be a string holding a JSON object, got {type_name(value)}")
    if not value.strip():
        return {}
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise bad(path, f"is not valid JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise bad(path, f"must be a JSON object, got {type_name(parsed)}")
    if nested_deeper_than(parsed, MAX_EMBEDDED_DEPTH):  # its answer could not be written
        raise bad(path, f"is nested deeper than {MAX_EMBEDDED_DEPTH} levels")
    return parsed
