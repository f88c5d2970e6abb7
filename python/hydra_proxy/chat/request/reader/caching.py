"""Prompt-cache breakpoints a Chat client marks -> ``cache_control`` on canonical blocks.

Chat has no caching field of its own; clients of Claude borrow Anthropic's
``cache_control`` (``{"type": "ephemeral"}``, optionally with ``ttl`` ``"5m"`` or
``"1h"``) and put it where their SDK lets them: on a content part (OpenRouter's form), on a
whole message (opencode marks the system message and the last two), or on an assistant
message's tool call (opencode, when the message has tool calls). A part's breakpoint goes
on the block that part becomes; a message's (or any of its parts') on the last block the
message becomes (system messages: the system text; a tool message: its ``tool_result``);
a tool call's on its ``tool_use`` block. How many are kept is `canonical.request`'s.
Anything else in the field is a 400 naming it.
"""

from __future__ import annotations

from typing import Any

from ....canonical.content import THINKING_TYPES, Block
from ....canonical.fields import bad, type_name

__all__ = ["count_marked", "mark_last", "read_breakpoint"]

_TTLS = ("5m", "1h")


def read_breakpoint(value: Any, path: str) -> dict[str, Any] | None:
    """The ``cache_control`` at `path` (None: not sent), checked."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise bad(path, f"must be an object, got {type_name(value)}")
    if value.get("type") != "ephemeral":
        raise bad(f"{path}.type", "must be 'ephemeral'")
    ttl = value.get("ttl")
    if ttl is None:
        return {"type": "ephemeral"}
    if ttl not in _TTLS:
        raise bad(f"{path}.ttl", "must be '5m' or '1h'")
    return {"type": "ephemeral", "ttl": ttl}


def mark_last(blocks: list[Block], marker: dict[str, Any] | None) -> None:
    """Put `marker` on the last block of `blocks` that can carry one (not thinking)."""
    if marker is None:
        return
    for i in range(len(blocks) - 1, -1, -1):
        if blocks[i]["type"] not in THINKING_TYPES:
            blocks[i] = {**blocks[i], "cache_control": marker}
            return


def count_marked(blocks: list[Block]) -> int:
    """How many of `blocks` carry a breakpoint."""
    return sum("cache_control" in block for block in blocks)
