"""How deep a JSON value nests, and the deepest a request may carry.

orjson writes at most 254 levels of arrays and objects; a request nested deeper than the
proxy can write back would end in a 500. The request body is bounded by ``max_json_depth``
(at most `config.schema.MAX_JSON_DEPTH`); JSON a request carries inside a string (Chat
tool call arguments, parsed into objects) by `MAX_EMBEDDED_DEPTH`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_EMBEDDED_DEPTH", "nested_deeper_than"]

# Within this, a value placed a few levels down in a translated request stays below 254.
MAX_EMBEDDED_DEPTH = 128


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` nests arrays and objects more than `limit` levels deep (an array or
    object is level 1, a scalar 0); iterative, so any depth is safe to ask about."""
    kind = type(value)
    if kind is not dict and kind is not list:
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        if depth > limit:
            return True
        for child in node.values() if type(node) is dict else node:
            kind = type(child)
            if kind is dict or kind is list:
                push((child, depth + 1))
    return False
