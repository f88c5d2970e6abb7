"""Canonical content -> Gemini parts: the leaves of `canonical.content.Parts`.

text -> ``text``; image base64 -> ``inlineData {mimeType, data}``; image URL -> ``fileData
{fileUri, mimeType}`` (mimeType from the URL's extension, omitted when it cannot be told);
document base64 -> ``inlineData`` (PDF unless the source says otherwise); document URL ->
``fileData application/pdf``; text/content documents -> text (and images). ``file``
sources (the Anthropic Files API) -> 400.
"""

from __future__ import annotations

import mimetypes
from urllib.parse import urlparse

from ....canonical.content import Part, Parts

__all__ = ["GEMINI_PARTS", "GeminiParts"]


class GeminiParts(Parts):
    upstream = "Gemini"
    document_sources = "base64, a URL or text"
    takes_document_urls = True

    def text(self, text: str) -> Part:
        return {"text": text}

    def text_in(self, part: Part) -> str | None:
        return part.get("text")

    def base64_image(self, media_type: str, data: str) -> Part:
        return {"inlineData": {"mimeType": media_type, "data": data}}

    def url_image(self, url: str) -> Part:
        file_data: dict[str, str] = {"fileUri": url}
        mime_type, _ = mimetypes.guess_type(urlparse(url).path)
        if mime_type is not None and mime_type.startswith("image/"):
            file_data["mimeType"] = mime_type
        return {"fileData": file_data}

    def base64_document(self, media_type: str, data: str, title: str | None) -> Part:
        return {"inlineData": {"mimeType": media_type, "data": data}}

    def url_document(self, url: str) -> Part:
        return {"fileData": {"mimeType": "application/pdf", "fileUri": url}}


GEMINI_PARTS = GeminiParts()
