"""Reading a Gemini request's fields by either name: Gemini reads protobuf JSON, which takes
a field's lowerCamelCase name and its original snake_case one (the google-genai Python SDK
sends ``thinkingConfig: {"include_thoughts": ...}``), so the reader does too."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["field", "has"]

_CAPITAL = re.compile(r"([A-Z])")


def _snake(name: str) -> str:
    return _CAPITAL.sub(lambda m: "_" + m.group(1).lower(), name)


def field(obj: dict[str, Any], name: str, default: Any = None) -> Any:
    """The field `name` (lowerCamelCase) of `obj`, under either of its names."""
    if name in obj:
        return obj[name]
    return obj.get(_snake(name), default)


def has(obj: dict[str, Any], name: str) -> bool:
    return name in obj or _snake(name) in obj
