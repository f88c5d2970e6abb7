"""User and tool content parts -> canonical content blocks.

A string -> one text block (in `messages`); parts: ``text`` -> text; ``image_url`` (an
object with ``url``; a bare string is accepted too) -> an image (`canonical.media`: a
``data:`` URL as base64, an ``http(s)`` URL as a URL source); ``file`` (``file_data``,
``filename``) -> a document or an image (`canonical.media.file_block`). Whitespace-only
text parts are dropped (Anthropic rejects whitespace-only text blocks). ``input_audio``
and ``file_id`` are refused (see `validation`). A part's ``cache_control`` goes on its
block (`caching`).
"""

from __future__ import annotations

from typing import Any

from ....canonical.content import Block
from ....canonical.fields import bad, part_text, part_type
from ....canonical.media import file_block, image_block_from_url
from .caching import read_breakpoint

__all__ = ["content_block"]


def content_block(part: Any, path: str) -> Block | None:
    """A user (or tool) content part as a canonical block; None for whitespace-only text."""
    block = _block(part, path)
    if "cache_control" in part:  # (a part is an object once `_block` has read it)
        marker = read_breakpoint(part["cache_control"], f"{path}.cache_control")
        if block is not None and marker is not None:
            block["cache_control"] = marker
    return block


def _block(part: Any, path: str) -> Block | None:
    ptype = part_type(part, path)
    if ptype == "text":
        text = part_text(part, path, "text")
        return {"type": "text", "text": text} if text.strip() else None
    if ptype == "image_url":
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, dict) else image
        url_path = f"{path}.image_url.url" if isinstance(image, dict) else f"{path}.image_url"
        if not isinstance(url, str) or not url:
            raise bad(url_path, "required: a data: or https URL")
        return image_block_from_url(url, url_path)
    if ptype == "file":
        return file_block(part.get("file"), f"{path}.file")
    if ptype == "input_audio":
        raise bad(f"{path}.type", "Claude does not accept audio input")
    raise bad(f"{path}.type", f"unsupported content part type {ptype!r}")
