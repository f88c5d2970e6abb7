"""Reading upstream JSON the way the native core does (twin of rust/src/json/read.rs).

Strict where content could be lost: a field that is present and not null must have the
expected type, else the event is "of an unexpected shape" (BadShape). Lenient for counts:
a usage number that is not a non-negative integer is ignored.
"""

from __future__ import annotations

from typing import Any

from orjson import JSONDecodeError, loads


class BadShape(Exception):
    """A field has an unexpected type."""


def uint(value: object) -> int | None:
    """A non-negative 64-bit integer, else None (bools are not integers here)."""
    if type(value) is int and 0 <= value < 1 << 64:
        return value
    return None


def opt_str(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is None or type(value) is str:
        return value
    raise BadShape


def opt_dict(obj: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = obj.get(key)
    if value is None or type(value) is dict:
        return value
    raise BadShape


def opt_list(obj: dict[str, Any], key: str) -> list[Any] | None:
    value = obj.get(key)
    if value is None or type(value) is list:
        return value
    raise BadShape


def opt_index(obj: dict[str, Any], key: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    index = uint(value)
    if index is None:
        raise BadShape
    return index


def loads_lossy(data: bytes) -> object:
    """Parse JSON; invalid UTF-8 is decoded with replacement first, as the native side does."""
    try:
        return loads(data)
    except JSONDecodeError:
        return loads(data.decode("utf-8", "replace"))


JSON_WS = b" \t\n\r"

__all__ = [
    "JSON_WS",
    "BadShape",
    "JSONDecodeError",
    "loads_lossy",
    "opt_dict",
    "opt_index",
    "opt_list",
    "opt_str",
    "uint",
]
