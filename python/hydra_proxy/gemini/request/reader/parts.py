"""Gemini content parts -> canonical content blocks.

``text`` -> text (whitespace-only dropped). ``inlineData {mimeType, data}`` -> an image
(jpeg, png, gif, webp), a PDF document, or a ``text/plain`` document (its decoded UTF-8
text), read as a ``data:`` URL is (`canonical.media`); any other type is a 400.
``fileData {fileUri, mimeType}``: an http(s) URI -> an image (an ``image/*`` mimeType) or a
URL document; any other URI (Google's Files API, ``gs://``) cannot be read through this
proxy: a 400. ``executableCode`` / ``codeExecutionResult`` (history of Gemini's own code
tool) -> their text. A part with none of these (``videoMetadata`` alone...) is a 400
naming it.
"""

from __future__ import annotations

from typing import Any

from ....canonical.content import Block
from ....canonical.fields import bad, required_string, type_name
from ....canonical.media import file_block, image_block_from_url
from .fields import field

__all__ = ["MEDIA_KEYS", "media_block", "text_of_part"]

MEDIA_KEYS = ("inlineData", "fileData")


def text_of_part(part: dict[str, Any], path: str) -> str | None:
    """The text a part shows (None: it is no text part)."""
    text = part.get("text")
    if text is not None:
        if not isinstance(text, str):
            raise bad(f"{path}.text", f"must be a string, got {type_name(text)}")
        return text
    code = field(part, "executableCode")
    if isinstance(code, dict) and isinstance(code.get("code"), str):
        return f"```{str(code.get('language') or '').lower()}\n{code['code']}\n```"
    result = field(part, "codeExecutionResult")
    if isinstance(result, dict):
        output = result.get("output")
        return output if isinstance(output, str) else str(result.get("outcome") or "")
    return None


def media_block(part: dict[str, Any], path: str) -> Block | None:
    """The image or document block of an ``inlineData`` / ``fileData`` part (None: neither)."""
    inline = _media(part, "inlineData", path)
    if inline is not None:
        ipath = f"{path}.inlineData"
        mime = required_string(field(inline, "mimeType"), ipath, "mimeType", "required")
        data = required_string(inline.get("data"), ipath, "data", "required: base64 data")
        media = {"file_data": f"data:{mime.lower()};base64,{data}"}
        return file_block(media, ipath)
    file_data = _media(part, "fileData", path)
    if file_data is not None:
        fpath = f"{path}.fileData"
        uri = required_string(field(file_data, "fileUri"), fpath, "fileUri", "required")
        file_mime: Any = field(file_data, "mimeType")
        if uri.split(":", 1)[0].lower() not in ("http", "https") or _files_api(uri):
            raise bad(
                f"{fpath}.fileUri",
                "only http(s) URLs can be read through this proxy (not Google's Files API "
                "or gs:// URIs); send the file as inlineData",
            )
        if isinstance(file_mime, str) and file_mime.lower().startswith("image/"):
            return image_block_from_url(uri, f"{fpath}.fileUri")
        return {"type": "document", "source": {"type": "url", "url": uri}}
    return None


def _media(part: dict[str, Any], key: str, path: str) -> dict[str, Any] | None:
    """A part's media object `key` (None: the part has none)."""
    media = field(part, key)
    if media is not None and not isinstance(media, dict):
        raise bad(f"{path}.{key}", f"must be an object, got {type_name(media)}")
    return media


def _files_api(uri: str) -> bool:
    return "generativelanguage.googleapis.com" in uri.lower()
