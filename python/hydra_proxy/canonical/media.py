"""Images and files a client sends by URL or as data -> canonical image and document blocks.

The Chat and Responses readers both take media this way. An image URL: ``data:`` (base64;
jpeg, png, gif, webp; ``image/jpg`` is read as jpeg, and when the bytes' magic number
names another of the four types that one is used, since Anthropic rejects a mismatch) ->
a base64 image source; ``http(s)`` -> a URL image source; any other scheme is a 400. A
file (``file_data``: a ``data:`` URL, or bare base64 of a PDF; ``filename``) -> a PDF
document (base64), a ``text/plain`` document (the decoded UTF-8 text) or an image; the
filename becomes the document ``title``. ``file_id`` (OpenAI's Files API, which the proxy
cannot read) is a 400, as is any other media type.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from .content import Block
from .fields import bad, optional_string, required_string

__all__ = ["file_block", "image_block_from_url"]

_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
_MEDIA_ALIASES = {"image/jpg": "image/jpeg", "image/pjpeg": "image/jpeg"}
_BASE64 = re.compile(r"[A-Za-z0-9+/]+")
_WHITESPACE = re.compile(r"\s+")


def image_block_from_url(url: str, path: str) -> Block:
    """An image block from a ``data:`` URL (base64) or an ``http(s)`` URL (URL source)."""
    scheme = url.split(":", 1)[0].lower()
    if scheme in ("http", "https"):
        return {"type": "image", "source": {"type": "url", "url": url}}
    if scheme != "data":
        raise bad(path, "must be a data: URL or an http(s) URL")
    media, data = _data_url(url, path)
    return _image_block(media, data, path)


def file_block(value: Any, path: str) -> Block:
    """A file object (``file_data``, ``filename``) as a document or image block."""
    if not isinstance(value, dict):
        raise bad(path, "required: an object with file_data")
    if value.get("file_id") is not None and value.get("file_data") is None:
        raise bad(
            f"{path}.file_id",
            "uploaded OpenAI files cannot be read through this proxy; send file_data instead",
        )
    data_path = f"{path}.file_data"
    file_data = required_string(
        value.get("file_data"),
        path,
        "file_data",
        "required: a data: URL (data:application/pdf;base64,...)",
    )
    filename = optional_string(value.get("filename"), path, "filename")
    if file_data[:5].lower() == "data:":
        media, data = _data_url(file_data, data_path)
    else:
        bare = _base64(file_data)
        if bare is None or _sniff(bare) != "application/pdf":
            raise bad(data_path, "must be a data: URL (data:application/pdf;base64,...)")
        media, data = "application/pdf", bare
    block: Block
    if media == "application/pdf":
        block = {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": data},
        }
    elif media == "text/plain":
        try:
            text = base64.b64decode(data).decode("utf-8")
        except (binascii.Error, ValueError):
            raise bad(data_path, "a text/plain file must be UTF-8") from None
        block = {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": text},
        }
    elif media in _IMAGE_TYPES:
        return _image_block(media, data, data_path)
    else:
        raise bad(
            data_path,
            f"unsupported file type {media!r}; Claude accepts PDF, plain text and images",
        )
    if filename:
        block["title"] = filename
    return block


def _data_url(url: str, path: str) -> tuple[str, str]:
    """(media type, base64 data) of a base64 data: URL."""
    header, comma, data = url[5:].partition(",")
    params = [p.strip().lower() for p in header.split(";")]
    if not comma or "base64" not in params[1:]:
        raise bad(path, "a data: URL must be base64: data:<media type>;base64,<data>")
    clean = _base64(data)
    if clean is None:
        raise bad(path, "the data: URL does not hold valid base64")
    media = params[0]
    return _MEDIA_ALIASES.get(media, media), clean


def _base64(data: str) -> str | None:
    """Standard base64 without whitespace and with its padding, or None when it is not."""
    data = _WHITESPACE.sub("", data).rstrip("=")
    if not data or not _BASE64.fullmatch(data) or len(data) % 4 == 1:
        return None
    return data + "=" * (-len(data) % 4)


def _sniff(data: str) -> str | None:
    try:
        head = base64.b64decode(data[:24] + "=" * (-len(data[:24]) % 4))
    except (binascii.Error, ValueError):
        return None
    if head.startswith(b"\x89PNG"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith(b"GIF8"):
        return "image/gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"%PDF"):
        return "application/pdf"
    return None


def _image_block(media: str, data: str, path: str) -> Block:
    if media not in _IMAGE_TYPES:
        raise bad(path, f"unsupported image type {media!r}; Claude accepts jpeg, png, gif and webp")
    sniffed = _sniff(data)
    if sniffed in _IMAGE_TYPES:
        media = sniffed
    return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}
