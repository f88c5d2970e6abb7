"""Canonical content -> Chat content parts: the leaves of `canonical.parts.Parts`.

text -> ``text``; image (base64 -> ``data:`` URL, url -> URL) -> ``image_url`` part; a
base64 document -> ``file`` part with ``file_data`` + ``filename`` (`Parts.filename`);
text/content documents -> text. Document
sources ``url``/``file`` cannot be sent to a Chat upstream: 400 naming ``...source``.
"""

from __future__ import annotations

from ....canonical.parts import Part, Parts

__all__ = ["CHAT_PARTS", "ChatParts"]


class ChatParts(Parts):
    def text(self, text: str) -> Part:
        return {"type": "text", "text": text}

    def text_in(self, part: Part) -> str | None:
        return part["text"] if part["type"] == "text" else None

    def base64_image(self, media_type: str, data: str) -> Part:
        return {"type": "image_url", "image_url": {"url": f"data:{media_type};base64,{data}"}}

    def url_image(self, url: str) -> Part:
        return {"type": "image_url", "image_url": {"url": url}}

    def base64_document(self, media_type: str, data: str, title: str | None) -> Part:
        filename = self.filename(media_type, title)
        return {
            "type": "file",
            "file": {"filename": filename, "file_data": f"data:{media_type};base64,{data}"},
        }


CHAT_PARTS = ChatParts()
