"""Canonical content -> Responses input parts: the leaves of `canonical.content.Parts`.

text -> ``input_text``; image -> ``input_image`` (base64 as a ``data:`` URL, or the URL;
``detail: "auto"``); a base64 document -> ``input_file`` with ``filename``
(`Parts.filename`) and ``file_data`` (a ``data:`` URL); text/content documents -> text.
Document sources ``url``/``file`` are a 400, as for a Chat upstream.
"""

from __future__ import annotations

from ....canonical.content import Part, Parts

__all__ = ["RESPONSES_PARTS", "ResponsesParts"]


class ResponsesParts(Parts):
    def text(self, text: str) -> Part:
        return {"type": "input_text", "text": text}

    def text_in(self, part: Part) -> str | None:
        return part["text"] if part["type"] == "input_text" else None

    def base64_image(self, media_type: str, data: str) -> Part:
        return self.url_image(f"data:{media_type};base64,{data}")

    def url_image(self, url: str) -> Part:
        return {"type": "input_image", "image_url": url, "detail": "auto"}

    def base64_document(self, media_type: str, data: str, title: str | None) -> Part:
        return {
            "type": "input_file",
            "filename": self.filename(media_type, title),
            "file_data": f"data:{media_type};base64,{data}",
        }


RESPONSES_PARTS = ResponsesParts()
