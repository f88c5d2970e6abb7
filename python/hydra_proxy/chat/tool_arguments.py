"""Tool call arguments between Chat (a JSON string) and Anthropic (an `input` object)."""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["RAW_ARGUMENTS_KEY", "tool_arguments", "tool_input_from_arguments"]

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
