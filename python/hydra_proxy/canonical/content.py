"""Canonical content blocks, as the writers read them from a canonical request.

A message's ``content`` is a string (one text block) or a list of blocks, each an object
with a ``type``. Core blocks (text, image, document, tool_use, tool_result, thinking,
redacted_thinking) are each writer's to translate; every other block is tolerated, never
a 4xx: a block of an unknown type with a string ``text`` field keeps that text, any other
is dropped (debug log), and ``search_result`` / ``tool_reference`` blocks are rendered as
text (`fallback_text`). Malformed core blocks are a 400 naming the field
(``messages.3.content.1.id``). A block's ``cache_control`` is a prompt-cache breakpoint
(`breakpoint_of`), carried only to upstreams that honour one.
"""

from __future__ import annotations

import logging
from typing import Any

from .fields import bad

__all__ = [
    "THINKING_TYPES",
    "Block",
    "block_type",
    "breakpoint_of",
    "content_blocks",
    "fallback_text",
    "shown_text",
    "text_of",
    "tool_call",
    "well_formed_text",
]

log = logging.getLogger(__name__)

Block = dict[str, Any]
THINKING_TYPES = ("thinking", "redacted_thinking")


def block_type(block: Any, path: str) -> str:
    if not isinstance(block, dict):
        raise bad(path, "content block must be an object")
    btype = block.get("type")
    if not isinstance(btype, str) or not btype:
        raise bad(f"{path}.type", "content block type is required")
    return btype


def breakpoint_of(blocks: list[Any]) -> dict[str, Any] | None:
    """The last ``cache_control`` breakpoint among `blocks` (None: there is none)."""
    for block in reversed(blocks):
        marker = block.get("cache_control") if isinstance(block, dict) else None
        if isinstance(marker, dict):
            return marker
    return None


def content_blocks(content: Any, path: str) -> list[Any]:
    """A message's content as a list of blocks (a string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return content
    if content is None:
        raise bad(path, "field required (a string or a list of content blocks)")
    raise bad(path, "must be a string or a list of content blocks")


def well_formed_text(block: Any) -> str | None:
    """The text of a well-formed text block; None for any other block. Most blocks are
    text, and reading them so needs no path: paths are built for a 400 only."""
    if isinstance(block, dict) and block.get("type") == "text":
        text = block.get("text")
        if isinstance(text, str):
            return text
    return None


def text_of(block: dict[str, Any], path: str) -> str:
    text = block.get("text")
    if not isinstance(text, str):
        raise bad(f"{path}.text", "must be a string")
    return text


def tool_call(block: dict[str, Any], path: str) -> tuple[str, str]:
    """(id, name) of a tool_use block."""
    # Checked inline, not by fields.required_string: this runs for every block, and its
    # paths would be formatted even when nothing is wrong.
    call_id = block.get("id")
    name = block.get("name")
    if not isinstance(call_id, str) or not call_id:
        raise bad(f"{path}.id", "tool_use block needs an id")
    if not isinstance(name, str) or not name:
        raise bad(f"{path}.name", "tool_use block needs a name")
    return call_id, name


def shown_text(block: dict[str, Any], btype: str, path: str) -> str | None:
    """The text a block shows in an assistant turn: a text block's (None when blank), a
    non-core block's `fallback_text`; None for thinking, redacted thinking and tool calls."""
    if btype == "text":
        text = text_of(block, path)
        return text if text.strip() else None
    if btype in (*THINKING_TYPES, "tool_use"):
        return None
    return fallback_text(block, btype, path)


def fallback_text(block: dict[str, Any], btype: str, path: str) -> str | None:
    """Text for block types that are not core content (None: nothing to keep)."""
    if btype == "search_result":
        pieces = [p for p in (block.get("title"), block.get("source")) if isinstance(p, str) and p]
        inner = block.get("content")
        if isinstance(inner, list):
            pieces += [
                b["text"]
                for b in inner
                if isinstance(b, dict)
                and b.get("type") == "text"
                and isinstance(b.get("text"), str)
            ]
        return "\n".join(pieces) if pieces else None
    if btype == "tool_reference":
        name = block.get("tool_name")
        return f"Tool {name} is available." if isinstance(name, str) and name else None
    text = block.get("text")
    if isinstance(text, str) and text.strip():
        return text
    log.debug("dropped content block of type %r at %s", btype, path)
    return None
