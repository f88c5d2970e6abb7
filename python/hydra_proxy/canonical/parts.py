"""Canonical user content -> an upstream protocol's content parts: the rules once, the
protocol's leaves in a `Parts` subclass.

A writer says how its protocol writes a text, an image (base64 or by URL) and a document
(base64, and by URL where it can); `Parts` does the rest the same for every upstream:

- Images: a base64 source needs ``media_type`` and ``data``, a URL source a ``url``; any
  other source type cannot be sent: a 400 naming ``...source``.
- Documents: base64 (``media_type`` defaults to PDF) and, where the upstream takes them,
  URL sources are the protocol's; ``text`` documents -> their text (after the title and a
  blank line); ``content`` documents -> the title, then their text and image blocks; any
  other source (``file``: the Anthropic Files API) is a 400.
- User turns (`user_turn`): text (whitespace-only dropped), image and document blocks ->
  parts; thinking and tool_use blocks in a user turn are dropped (debug log); other
  blocks by `content.fallback_text`. ``tool_result`` blocks are read apart
  (`ToolResult`): their text (text blocks and text documents joined with a newline,
  never a JSON dump) and their media (images, PDFs), which most protocols cannot put in a
  tool answer. `match_results` pairs them with the calls they answer; a result that
  answers no call of the preceding assistant turn (an orphan) becomes user text
  ``"Result of tool call <id>:\\n..."`` (`orphan`) rather than an invalid answer, and a
  call left without a result is answered with `MISSING_TOOL_RESULT` by the writer
  (upstreams reject an unanswered call, and deleting the call would lose history).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from .content import block_type, content_blocks, fallback_text, text_of, well_formed_text
from .fields import bad, required_string

__all__ = ["MISSING_TOOL_RESULT", "Part", "Parts", "ToolResult", "match_results"]

log = logging.getLogger(__name__)

Part = dict[str, Any]

MISSING_TOOL_RESULT = "Error: no result was provided for this tool call."
TOOL_ERROR_PREFIX = "Error: "
TOOL_TEXT_SEPARATOR = "\n"


@dataclass(slots=True)
class ToolResult:
    """A ``tool_result`` block of a user turn, read."""

    call_id: str  # the tool_use_id
    text: str  # its text content, pieces joined with a newline
    media: list[Part]  # the images and documents it carries, as parts
    is_error: bool

    @property
    def error_text(self) -> str:
        """The text, marked as an error when it is one (for protocols without the flag)."""
        if not self.is_error:
            return self.text
        return f"{TOOL_ERROR_PREFIX}{self.text}" if self.text else TOOL_ERROR_PREFIX.rstrip(": ")


def match_results(
    results: list[ToolResult], pending: Collection[str]
) -> tuple[dict[str, ToolResult], list[ToolResult]]:
    """The results that answer a pending call (the first for each, by call id, in order)
    and the orphans."""
    answered: dict[str, ToolResult] = {}
    orphans: list[ToolResult] = []
    for result in results:
        if result.call_id in pending and result.call_id not in answered:
            answered[result.call_id] = result
        else:
            orphans.append(result)
    return answered, orphans


class Parts(ABC):
    """How one upstream protocol writes canonical content as its parts."""

    upstream = "this model"  # who cannot take a source, in a 400
    document_sources = "base64 (PDF) or text"  # the document sources it takes, in a 400
    takes_document_urls = False

    # -- the protocol's leaves

    @abstractmethod
    def text(self, text: str) -> Part: ...

    @abstractmethod
    def text_in(self, part: Part) -> str | None:
        """The text of a text part (None: the part is media)."""

    @abstractmethod
    def base64_image(self, media_type: str, data: str) -> Part: ...

    @abstractmethod
    def url_image(self, url: str) -> Part: ...

    @abstractmethod
    def base64_document(self, media_type: str, data: str, title: str | None) -> Part: ...

    def url_document(self, url: str) -> Part:
        raise NotImplementedError  # only called when takes_document_urls

    # -- the rules

    @staticmethod
    def filename(media_type: str, title: str | None) -> str:
        """The file name a document is sent with: its title, else ``document.pdf`` (a PDF's
        name ends in ``.pdf``, which the OpenAI APIs go by)."""
        filename = title or "document.pdf"
        if media_type == "application/pdf" and not filename.lower().endswith(".pdf"):
            filename += ".pdf"
        return filename

    def image(self, block: dict[str, Any], path: str) -> Part:
        source = block.get("source")
        spath = f"{path}.source"
        if not isinstance(source, dict):
            raise bad(spath, "image source must be an object of type base64 or url")
        stype = source.get("type")
        if stype == "base64":
            media_type = required_string(
                source.get("media_type"),
                spath,
                "media_type",
                "base64 image source needs a media_type",
            )
            data = required_string(
                source.get("data"), spath, "data", "base64 image source needs data"
            )
            return self.base64_image(media_type, data)
        if stype == "url":
            url = required_string(source.get("url"), spath, "url", "url image source needs a url")
            return self.url_image(url)
        raise bad(
            spath,
            f"image source type {stype!r} cannot be sent to {self.upstream}; use base64 or url",
        )

    def document(self, block: dict[str, Any], path: str) -> list[Part]:
        source = block.get("source")
        spath = f"{path}.source"
        if not isinstance(source, dict):
            raise bad(spath, "document source must be an object")
        stype = source.get("type")
        title = block.get("title") if isinstance(block.get("title"), str) else None
        if stype == "base64":
            data = required_string(
                source.get("data"), spath, "data", "base64 document source needs data"
            )
            media_type = source.get("media_type")
            if not isinstance(media_type, str) or not media_type:
                media_type = "application/pdf"
            return [self.base64_document(media_type, data, title)]
        if stype == "url" and self.takes_document_urls:
            url = required_string(
                source.get("url"), spath, "url", "url document source needs a url"
            )
            return [self.url_document(url)]
        if stype == "text":
            plain = source.get("data")
            if not isinstance(plain, str):
                raise bad(f"{spath}.data", "text document source needs data")
            text = f"{title}\n\n{plain}" if title else plain
            return [self.text(text)] if text.strip() else []
        if stype == "content":
            return self._content_document(source.get("content"), title, f"{spath}.content")
        raise bad(
            spath,
            f"document source type {stype!r} cannot be sent to {self.upstream}; "
            f"send the document as {self.document_sources}",
        )

    def _content_document(self, content: Any, title: str | None, path: str) -> list[Part]:
        """A ``content`` document: the title, then its text and image blocks."""
        parts: list[Part] = [self.text(title)] if title else []
        for j, item in enumerate(content_blocks(content, path)):
            ipath = f"{path}.{j}"
            itype = block_type(item, ipath)
            if itype == "text":
                text = text_of(item, ipath)
                if text.strip():
                    parts.append(self.text(text))
            elif itype == "image":
                parts.append(self.image(item, ipath))
        return parts

    def user_turn(self, blocks: list[Any], path: str) -> tuple[list[ToolResult], list[Part]]:
        """A user turn's tool results, in order, and the rest of its content as parts."""
        parts: list[Part] = []
        results: list[tuple[str, dict[str, Any], str]] = []
        for j, block in enumerate(blocks):
            text = well_formed_text(block)
            if text is not None:  # the common block, read without a path or a call more
                if text.strip():
                    parts.append(self.text(text))
                continue
            bpath = f"{path}.{j}"
            btype = block_type(block, bpath)
            if btype == "text":
                text_of(block, bpath)  # raises: its text is no string
            elif btype == "tool_result":
                call_id = block.get("tool_use_id")
                if not isinstance(call_id, str) or not call_id:
                    raise bad(f"{bpath}.tool_use_id", "tool_result block needs a tool_use_id")
                results.append((call_id, block, bpath))
            else:
                parts.extend(self.user_parts(block, btype, bpath))
        if not results:
            return [], parts
        return [self.tool_result(call_id, block, bpath) for call_id, block, bpath in results], parts

    def user_parts(self, block: dict[str, Any], btype: str, path: str) -> list[Part]:
        """A user turn's block other than text and tool results, as parts."""
        if btype == "image":
            return [self.image(block, path)]
        if btype == "document":
            return self.document(block, path)
        if btype in ("thinking", "redacted_thinking", "tool_use"):
            log.debug("dropped %s block in a user turn at %s", btype, path)
            return []
        extra = fallback_text(block, btype, path)
        return [self.text(extra)] if extra is not None else []

    def tool_result(self, call_id: str, block: dict[str, Any], path: str) -> ToolResult:
        content = block.get("content")
        cpath = f"{path}.content"
        texts: list[str] = []
        media: list[Part] = []
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            for j, item in enumerate(content):
                ipath = f"{cpath}.{j}"
                itype = block_type(item, ipath)
                for piece in self._result_pieces(item, itype, ipath):
                    if isinstance(piece, str):
                        texts.append(piece)
                    else:
                        media.append(piece)
        elif content is not None:
            raise bad(cpath, "must be a string or a list of content blocks")
        return ToolResult(
            call_id, TOOL_TEXT_SEPARATOR.join(texts), media, block.get("is_error") is True
        )

    def _result_pieces(self, item: dict[str, Any], itype: str, path: str) -> list[str | Part]:
        """A block of a tool result as texts and media parts."""
        if itype == "text":
            return [text_of(item, path)]
        if itype == "image":
            return [self.image(item, path)]
        if itype == "document":
            return [
                part if (text := self.text_in(part)) is None else text
                for part in self.document(item, path)
            ]
        text = fallback_text(item, itype, path)
        return [] if text is None else [text]

    def orphan(self, result: ToolResult) -> list[Part]:
        """A result that answers no pending call, as user content."""
        return [
            self.text(f"Result of tool call {result.call_id}:\n{result.error_text}"),
            *result.media,
        ]
