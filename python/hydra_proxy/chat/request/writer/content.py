"""Canonical (Anthropic) content blocks -> Chat content parts and text.

text -> text; image (base64 -> ``data:`` URL, url -> URL) -> ``image_url`` part; PDF
document (base64) -> ``file`` part with ``file_data`` + ``filename`` (title, else
``document.pdf``); text/content documents -> text. Document sources ``url``/``file`` and
image sources other than base64/url cannot be sent to a Chat upstream: 400 naming
``...source``.

Unknown content blocks are tolerated, never a 4xx: a block of an unknown type with a
string ``text`` field keeps that text; any other is dropped (debug log). ``search_result``
and ``tool_reference`` blocks are rendered as text (`fallback_text`).
"""

from __future__ import annotations

import logging
from typing import Any

from ..common import bad

__all__ = [
    "Part",
    "block_type",
    "content_blocks",
    "document_parts",
    "fallback_text",
    "image_part",
    "text_of",
]

log = logging.getLogger(__name__)

Part = dict[str, Any]


def block_type(block: Any, path: str) -> str:
    if not isinstance(block, dict):
        raise bad(path, "content block must be an object")
    btype = block.get("type")
    if not isinstance(btype, str) or not btype:
        raise bad(f"{path}.type", "content block type is required")
    return btype


def content_blocks(content: Any, path: str) -> list[Any]:
    """A message's content as a list of blocks (a string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return content
    if content is None:
        raise bad(path, "field required (a string or a list of content blocks)")
    raise bad(path, "must be a string or a list of content blocks")


def text_of(block: dict[str, Any], path: str) -> str:
    text = block.get("text")
    if not isinstance(text, str):
        raise bad(f"{path}.text", "must be a string")
    return text


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


def image_part(block: dict[str, Any], path: str) -> Part:
    source = block.get("source")
    spath = f"{path}.source"
    if not isinstance(source, dict):
        raise bad(spath, "image source must be an object of type base64 or url")
    stype = source.get("type")
    if stype == "base64":
        media_type = source.get("media_type")
        data = source.get("data")
        if not isinstance(media_type, str) or not media_type:
            raise bad(f"{spath}.media_type", "base64 image source needs a media_type")
        if not isinstance(data, str) or not data:
            raise bad(f"{spath}.data", "base64 image source needs data")
        return {"type": "image_url", "image_url": {"url": f"data:{media_type};base64,{data}"}}
    if stype == "url":
        url = source.get("url")
        if not isinstance(url, str) or not url:
            raise bad(f"{spath}.url", "url image source needs a url")
        return {"type": "image_url", "image_url": {"url": url}}
    raise bad(
        spath,
        f"image source type {stype!r} cannot be sent to this model; use base64 or url",
    )


def document_parts(block: dict[str, Any], path: str) -> list[Part]:
    source = block.get("source")
    spath = f"{path}.source"
    if not isinstance(source, dict):
        raise bad(spath, "document source must be an object")
    stype = source.get("type")
    title = block.get("title") if isinstance(block.get("title"), str) else None
    if stype == "base64":
        data = source.get("data")
        if not isinstance(data, str) or not data:
            raise bad(f"{spath}.data", "base64 document source needs data")
        media_type = source.get("media_type")
        if not isinstance(media_type, str) or not media_type:
            media_type = "application/pdf"
        filename = title or "document.pdf"
        if media_type == "application/pdf" and not filename.lower().endswith(".pdf"):
            filename += ".pdf"
        return [
            {
                "type": "file",
                "file": {"filename": filename, "file_data": f"data:{media_type};base64,{data}"},
            }
        ]
    if stype == "text":
        data = source.get("data")
        if not isinstance(data, str):
            raise bad(f"{spath}.data", "text document source needs data")
        text = f"{title}\n\n{data}" if title else data
        return [{"type": "text", "text": text}] if text.strip() else []
    if stype == "content":
        inner = source.get("content")
        cpath = f"{spath}.content"
        parts: list[Part] = [{"type": "text", "text": title}] if title else []
        for k, item in enumerate(content_blocks(inner, cpath)):
            ipath = f"{cpath}.{k}"
            itype = block_type(item, ipath)
            if itype == "text":
                text = text_of(item, ipath)
                if text.strip():
                    parts.append({"type": "text", "text": text})
            elif itype == "image":
                parts.append(image_part(item, ipath))
        return parts
    raise bad(
        spath,
        f"document source type {stype!r} cannot be sent to this model; "
        "send the document as base64 (PDF) or text",
    )
