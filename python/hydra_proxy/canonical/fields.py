"""Checking a request's fields: the 400 that names a field, and the tests behind it.

Every reader and writer refuses bad input with `bad`: a 400 ``invalid_request_error``
whose `param` is the field's path in the client's notation (``messages[2].content[0]``
for OpenAI clients, ``messages.3.content.1`` for Anthropic ones) and whose message starts
with that path, so a client sees at once which field to fix.

`part_type` and `part_text` read a content part of an OpenAI request (an object with a
``type``, text under ``text`` or ``refusal``): the Chat and Responses readers share them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from ..errors import ProxyError, invalid_request

__all__ = [
    "bad",
    "each_object",
    "is_int",
    "is_number",
    "optional_object",
    "optional_string",
    "part_text",
    "part_type",
    "required_string",
    "type_name",
    "unknown_role",
]


def bad(path: str, problem: str) -> ProxyError:
    """A 400 for the request field at `path` (the message starts with the path)."""
    return invalid_request(f"{path}: {problem}", path)


# bool before int: True is an int to Python, not to JSON.
_JSON_TYPES = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def unknown_role(role: Any, path: str, expected: str) -> ProxyError:
    """The 400 of a message (at `path`) without a role, or with one its protocol lacks."""
    if role is None:
        return bad(f"{path}.role", "required")
    return bad(f"{path}.role", f"unknown role {role!r}; expected {expected}")


def type_name(value: Any) -> str:
    """The JSON name of a value's type, for "must be X, got Y" messages."""
    if value is None:
        return "null"
    for kind, name in _JSON_TYPES:
        if isinstance(value, kind):
            return name
    return type(value).__name__


# The field helpers take the path of the object and the field's name, and join them only
# for a 400: they run for every tool and block of a request, mostly on good input.


def required_string(value: Any, path: str, field: str, problem: str) -> str:
    """`value` (field `field` of the object at `path`) when it is a non-empty string."""
    if not isinstance(value, str) or not value:
        raise bad(f"{path}.{field}", problem)
    return value


def optional_string(value: Any, path: str, field: str) -> str | None:
    """`value` (field `field` of the object at `path`) when it is a string or missing."""
    if value is not None and not isinstance(value, str):
        raise bad(f"{path}.{field}", "must be a string")
    return value


def optional_object(value: Any, path: str) -> dict[str, Any] | None:
    """`value` when it is an object or missing (None); else a 400 at `path`."""
    if value is not None and not isinstance(value, dict):
        raise bad(path, f"must be an object, got {type_name(value)}")
    return value


def each_object(value: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(path, object) of each item of the array at `path`, which holds objects only."""
    if not isinstance(value, list):
        raise bad(path, f"must be an array, got {type_name(value)}")
    for i, item in enumerate(value):
        item_path = f"{path}[{i}]"
        if not isinstance(item, dict):
            raise bad(item_path, f"must be an object, got {type_name(item)}")
        yield item_path, item


def is_int(value: Any) -> bool:
    """A JSON integer (``true`` is not one, though Python says so)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """A finite JSON number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value)


def part_type(part: Any, path: str) -> str:
    """The ``type`` of a client content part (an object with a non-empty string type)."""
    if not isinstance(part, dict):
        raise bad(path, f"must be an object, got {type_name(part)}")
    return required_string(part.get("type"), path, "type", "required")


def part_text(part: dict[str, Any], path: str, key: str) -> str:
    """The string under `key` of a client content part."""
    text = part.get(key)
    if not isinstance(text, str):
        raise bad(f"{path}.{key}", f"must be a string, got {type_name(text)}")
    return text
