"""Canonical content blocks, as the writers read them from a canonical request.

A message's ``content`` is a string (one text block) or a list of blocks, each an object
with a ``type``. Core blocks (text, image, document, tool_use, tool_result, thinking,
redacted_thinking) are each writer's to translate; every other block is tolerated, never
a 4xx: a block of an unknown type with a string ``text`` field keeps that text, any other
is dropped (debug log), and ``search_result`` / ``tool_reference`` blocks are rendered as
text (`fallback_text`). Malformed core blocks are a 400 naming the field
(``messages.3.content.1.id``). A block's ``cache_control`` is a prompt-cache breakpoint
(`breakpoint_of`), carried only to upstreams that honour one.

Canonical user content -> an upstream protocol's content parts: the rules once, the
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

Walking a canonical request's conversation in order: what every writer reads the same.

System text: ``system`` (a string or text blocks) and every ``role: "system"`` message in
``messages[]`` (Claude Code sends some mid-conversation) are collected, in request order,
into `ConversationWriter.system_texts`; each writer joins them its protocol's way.
Whitespace-only pieces are dropped; the ``system`` field's last ``cache_control``
breakpoint is `ConversationWriter.system_breakpoint`. The ``x-anthropic-billing-header: ...`` block Claude
Code puts first is Anthropic billing metadata, not an instruction, and it changes per
conversation (which defeats upstream prefix caching), so it is removed.

Messages: ``messages`` must be a non-empty list of objects with a role of user, assistant
or system and a content (a string or a list of blocks); each user and assistant message
is handed to the writer's `user` / `assistant`, in order.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from .fields import bad, required_string

__all__ = [
    "BILLING_HEADER_PREFIX",
    "MISSING_TOOL_RESULT",
    "THINKING_TYPES",
    "Block",
    "ConversationWriter",
    "Part",
    "Parts",
    "ToolResult",
    "block_type",
    "breakpoint_of",
    "content_blocks",
    "fallback_text",
    "match_results",
    "shown_text",
    "text_of",
    "tool_call",
    "well_formed_text",
]


log = logging.getLogger(__name__)

Block = dict[str, Any]
THINKING_TYPES = ("thinking", "redacted_thinking")


def without_typed(
    items: list[Any], kind: str, field: str, drop: Callable[[Any], bool]
) -> list[Any]:
    """``items`` but the objects of type ``kind`` whose ``field`` ``drop`` picks."""
    return [
        item
        for item in items
        if not (isinstance(item, dict) and item.get("type") == kind and drop(item.get(field)))
    ]


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


BILLING_HEADER_PREFIX = "x-anthropic-billing-header:"
_ROLES = ("user", "assistant", "system")


class ConversationWriter(ABC):
    """Reads the system text and the messages in order; a subclass writes the turns."""

    def __init__(self) -> None:
        self.system_texts: list[str] = []
        # The breakpoint of the ``system`` field's blocks (None: none there).
        self.system_breakpoint: dict[str, Any] | None = None

    def write(self, body: dict[str, Any]) -> None:
        self._system(body.get("system"))
        messages = body.get("messages")
        if messages is None:
            raise bad("messages", "field required")
        if not isinstance(messages, list):
            raise bad("messages", "must be a list of messages")
        if not messages:
            raise bad("messages", "at least one message is required")
        start = self.resume(body, messages)
        for i in range(start, len(messages)):
            self.mark()
            message = messages[i]
            path = f"messages.{i}"
            if not isinstance(message, dict):
                raise bad(path, "message must be an object")
            role = message.get("role")
            if role not in _ROLES:
                raise bad(
                    f"{path}.role", f"role must be one of user, assistant, system (got {role!r})"
                )
            cpath = f"{path}.content"
            blocks = content_blocks(message.get("content"), cpath)
            if role == "system":
                self._system_blocks(blocks, cpath)
            elif role == "assistant":
                self.assistant(blocks, cpath)
            else:
                self.user(blocks, cpath)

    def resume(self, body: dict[str, Any], messages: list[Any]) -> int:
        """Where to start writing `messages`: a subclass that kept its state from an
        earlier request of the same conversation restores it and skips what it wrote then."""
        return 0

    def mark(self) -> None:  # noqa: B027 - a hook: most writers keep no state to note
        """Called before each message is written (a subclass notes its state)."""

    @abstractmethod
    def assistant(self, blocks: list[Any], path: str) -> None: ...

    @abstractmethod
    def user(self, blocks: list[Any], path: str) -> None: ...

    def _system(self, system: Any) -> None:
        if system is None:
            return
        if isinstance(system, str):
            self._system_text(system)
            return
        if not isinstance(system, list):
            raise bad("system", "must be a string or a list of text blocks")
        self._system_blocks(system, "system")
        self.system_breakpoint = breakpoint_of(system)

    def _system_blocks(self, blocks: list[Any], path: str) -> None:
        for j, block in enumerate(blocks):
            text = well_formed_text(block)
            if text is None:
                bpath = f"{path}.{j}"
                btype = block_type(block, bpath)
                text = (
                    text_of(block, bpath) if btype == "text" else fallback_text(block, btype, bpath)
                )
            if text is not None:
                self._system_text(text)

    def _system_text(self, text: str) -> None:
        if text.strip() and not text.lstrip().startswith(BILLING_HEADER_PREFIX):
            self.system_texts.append(text)
