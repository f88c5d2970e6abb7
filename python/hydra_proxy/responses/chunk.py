"""Reading one Responses stream event, the Responses decoder's reader (twin of
rust/src/responses/chunk.rs): an event is read whole, and a field of the wrong type counts
as missing (the Responses stream repeats its content in the done events, so nothing
depends on one field)."""

from __future__ import annotations

from typing import Any


def get_str(obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    return value if type(value) is str else None


def get_dict(obj: dict[str, Any], key: str) -> dict[str, Any]:
    value = obj.get(key)
    return value if type(value) is dict else {}


def get_list(obj: dict[str, Any], key: str) -> list[Any]:
    value = obj.get(key)
    return value if type(value) is list else []


def texts(parts: list[Any], kind: str, key: str = "text") -> list[str]:
    return [
        part[key]
        for part in parts
        if type(part) is dict and part.get("type") == kind and type(part.get(key)) is str
    ]
