"""Canonical (Anthropic) system text and turns -> Chat messages.

System text: ``system`` (string or text blocks) and every ``role: "system"`` message in
``messages[]`` become ONE leading ``system`` message: the pieces, in request order, joined
with a blank line. Whitespace-only pieces are dropped. The ``x-anthropic-billing-header:
...`` block Claude Code puts first is Anthropic billing metadata, not an instruction, and
it changes per conversation (which defeats upstream prefix caching), so it is removed.

User turns: content blocks -> parts (`content`). A user turn whose content is only text
becomes a string (text pieces joined with a blank line; the most widely accepted shape),
otherwise a list of parts. Whitespace-only text is dropped; a user turn left empty (e.g.
only ``cache_control``) is dropped. Thinking/tool_use blocks in a user turn are dropped.

Tool results: each ``tool_result`` answering a ``tool_use`` of the immediately preceding
assistant turn becomes a ``role: "tool"`` message placed right after that assistant
message, in the order of its ``tool_calls``, before any other content of the same user
turn. Content: the string, or the text of its blocks joined with a newline (never a JSON
dump of the blocks). ``is_error: true`` prefixes the content with ``"Error: "``. Images
and PDFs in a tool result go into the user message that follows the tool messages
(labelled with the tool call id; the tool message says so), since tool messages cannot
carry them. A call left without a result gets a synthetic tool message
(`MISSING_TOOL_RESULT`): OpenAI rejects an assistant ``tool_calls`` message that is not
answered, and deleting the call would lose history. A ``tool_result`` that answers no
call of the preceding assistant turn (orphan) becomes user text ``"Result of tool call
<id>:\\n..."`` rather than an invalid tool message.

Assistant turns: text (joined with a blank line) -> ``content`` (``null`` when there is
none); ``tool_use`` -> ``tool_calls`` (ids verbatim, arguments: `tools`); thinking:
`thinking`. A ``replay_reasoning`` target gets ``reasoning_content`` on every assistant
message (``""`` when no verified reasoning exists) because DeepSeek-style APIs reject a
tool turn without the field. An assistant turn with neither text nor tool calls is
dropped.

Sequence: consecutive user messages and consecutive assistant messages are merged (strict
chat templates require alternation; OpenAI does not mind). When the first non-system
message would be an assistant turn, a user message `LEADING_USER_PLACEHOLDER` is put
before it (LiteLLM #42432: ``[assistant, tool]`` without a user turn is a 400 upstream). A
request with no non-empty message left is a 400 (Anthropic rejects it too).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from ..common import LEADING_USER_PLACEHOLDER, bad
from .content import (
    Part,
    block_type,
    content_blocks,
    document_parts,
    fallback_text,
    image_part,
    text_of,
)
from .thinking import replayed_reasoning
from .tools import tool_call_arguments

if TYPE_CHECKING:
    from .translate import ChatTarget

__all__ = ["BILLING_HEADER_PREFIX", "MISSING_TOOL_RESULT", "MessagesWriter", "tool_result_content"]

log = logging.getLogger(__name__)


BILLING_HEADER_PREFIX = "x-anthropic-billing-header:"
MISSING_TOOL_RESULT = "Error: no result was provided for this tool call."
TOOL_ERROR_PREFIX = "Error: "
MEDIA_MOVED_NOTE = (
    "[The image/document output of this tool call is attached in the next user message.]"
)
SYSTEM_SEPARATOR = "\n\n"
TEXT_SEPARATOR = "\n\n"
TOOL_TEXT_SEPARATOR = "\n"
_ROLES = ("user", "assistant", "system")


@dataclass
class _User:
    parts: list[Part] = field(default_factory=list)


@dataclass
class _Assistant:
    texts: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)


@dataclass
class _Tool:
    tool_call_id: str
    content: str


_Message: TypeAlias = "_User | _Assistant | _Tool"


class MessagesWriter:
    """Writes the system text and the turns, in order, as Chat messages (`finish`)."""

    def __init__(self, target: ChatTarget) -> None:
        self.target = target
        self.system_texts: list[str] = []
        self.out: list[_Message] = []
        # Tool call ids of the latest assistant turn that still wait for their results.
        self.pending: list[str] = []

    # -- system

    def system(self, system: Any) -> None:
        if system is None:
            return
        if isinstance(system, str):
            self._add_system_text(system)
            return
        if not isinstance(system, list):
            raise bad("system", "must be a string or a list of text blocks")
        self._system_blocks(system, "system")

    def _system_blocks(self, blocks: list[Any], path: str) -> None:
        for j, block in enumerate(blocks):
            bpath = f"{path}.{j}"
            btype = block_type(block, bpath)
            if btype == "text":
                self._add_system_text(text_of(block, bpath))
            else:
                text = fallback_text(block, btype, bpath)
                if text is not None:
                    self._add_system_text(text)

    def _add_system_text(self, text: str) -> None:
        if not text.strip() or text.lstrip().startswith(BILLING_HEADER_PREFIX):
            return
        self.system_texts.append(text)

    # -- messages

    def messages(self, messages: Any) -> None:
        if messages is None:
            raise bad("messages", "field required")
        if not isinstance(messages, list):
            raise bad("messages", "must be a list of messages")
        if not messages:
            raise bad("messages", "at least one message is required")
        for i, message in enumerate(messages):
            path = f"messages.{i}"
            if not isinstance(message, dict):
                raise bad(path, "message must be an object")
            role = message.get("role")
            if role not in _ROLES:
                raise bad(
                    f"{path}.role", f"role must be one of user, assistant, system (got {role!r})"
                )
            cpath = f"{path}.content"
            content = message.get("content")
            if role == "system":
                if isinstance(content, str):
                    self._add_system_text(content)
                else:
                    self._system_blocks(content_blocks(content, cpath), cpath)
            elif role == "assistant":
                self._assistant(content_blocks(content, cpath), cpath)
            else:
                self._user(content_blocks(content, cpath), cpath)

    def _answer_pending(self, results: dict[str, str]) -> None:
        for call_id in self.pending:
            self.out.append(_Tool(call_id, results.get(call_id, MISSING_TOOL_RESULT)))
        self.pending = []

    def _assistant(self, blocks: list[Any], path: str) -> None:
        self._answer_pending({})
        turn = _Assistant()
        for j, block in enumerate(blocks):
            bpath = f"{path}.{j}"
            btype = block_type(block, bpath)
            if btype == "text":
                text = text_of(block, bpath)
                if text.strip():
                    turn.texts.append(text)
            elif btype == "tool_use":
                call_id = block.get("id")
                name = block.get("name")
                if not isinstance(call_id, str) or not call_id:
                    raise bad(f"{bpath}.id", "tool_use block needs an id")
                if not isinstance(name, str) or not name:
                    raise bad(f"{bpath}.name", "tool_use block needs a name")
                turn.tool_calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": tool_call_arguments(block)},
                    }
                )
            elif btype == "thinking":
                if self.target.replay_reasoning:
                    reasoning = replayed_reasoning(block, self.target.signing_key)
                    if reasoning is not None:
                        turn.reasoning.append(reasoning)
            elif btype == "redacted_thinking":
                continue
            else:
                extra = fallback_text(block, btype, bpath)
                if extra is not None:
                    turn.texts.append(extra)
        if not turn.texts and not turn.tool_calls:
            return
        self.out.append(turn)
        self.pending = [call["id"] for call in turn.tool_calls]

    def _user(self, blocks: list[Any], path: str) -> None:
        parts: list[Part] = []
        results: list[tuple[str, dict[str, Any], str]] = []
        for j, block in enumerate(blocks):
            bpath = f"{path}.{j}"
            btype = block_type(block, bpath)
            if btype == "tool_result":
                call_id = block.get("tool_use_id")
                if not isinstance(call_id, str) or not call_id:
                    raise bad(f"{bpath}.tool_use_id", "tool_result block needs a tool_use_id")
                results.append((call_id, block, bpath))
            else:
                parts.extend(self._user_parts(block, btype, bpath))

        answered: dict[str, str] = {}
        lead: list[Part] = []  # media from answered results, then orphan results
        orphans: list[Part] = []
        for call_id, block, bpath in results:
            text, media = tool_result_content(block, bpath)
            if call_id in self.pending and call_id not in answered:
                if media:
                    text = f"{text}\n\n{MEDIA_MOVED_NOTE}" if text else MEDIA_MOVED_NOTE
                    lead.append({"type": "text", "text": f"Output of tool call {call_id}:"})
                    lead.extend(media)
                answered[call_id] = text
            else:
                orphans.append({"type": "text", "text": f"Result of tool call {call_id}:\n{text}"})
                orphans.extend(media)
        self._answer_pending(answered)
        parts = lead + orphans + parts
        if parts:
            self.out.append(_User(parts))

    def _user_parts(self, block: dict[str, Any], btype: str, path: str) -> list[Part]:
        if btype == "text":
            text = text_of(block, path)
            return [{"type": "text", "text": text}] if text.strip() else []
        if btype == "image":
            return [image_part(block, path)]
        if btype == "document":
            return document_parts(block, path)
        if btype in ("thinking", "redacted_thinking", "tool_use"):
            log.debug("dropped %s block in a user turn at %s", btype, path)
            return []
        extra = fallback_text(block, btype, path)
        return [{"type": "text", "text": extra}] if extra is not None else []

    # -- output

    def finish(self) -> list[dict[str, Any]]:
        self._answer_pending({})
        merged: list[_Message] = []
        for message in self.out:
            last = merged[-1] if merged else None
            if isinstance(message, _User) and isinstance(last, _User):
                last.parts.extend(message.parts)
            elif isinstance(message, _Assistant) and isinstance(last, _Assistant):
                last.texts.extend(message.texts)
                last.tool_calls.extend(message.tool_calls)
                last.reasoning.extend(message.reasoning)
            else:
                merged.append(message)
        if not merged:
            raise bad("messages", "no message has any non-empty content")
        if isinstance(merged[0], _Assistant):
            merged.insert(0, _User([{"type": "text", "text": LEADING_USER_PLACEHOLDER}]))

        out: list[dict[str, Any]] = []
        if self.system_texts:
            out.append({"role": "system", "content": SYSTEM_SEPARATOR.join(self.system_texts)})
        for message in merged:
            out.append(self._render(message))
        return out

    def _render(self, message: _Message) -> dict[str, Any]:
        if isinstance(message, _Tool):
            return {
                "role": "tool",
                "tool_call_id": message.tool_call_id,
                "content": message.content,
            }
        if isinstance(message, _User):
            if all(part["type"] == "text" for part in message.parts):
                content: Any = TEXT_SEPARATOR.join(part["text"] for part in message.parts)
            else:
                content = message.parts
            return {"role": "user", "content": content}
        rendered: dict[str, Any] = {
            "role": "assistant",
            "content": TEXT_SEPARATOR.join(message.texts) if message.texts else None,
        }
        if message.tool_calls:
            rendered["tool_calls"] = message.tool_calls
        if self.target.replay_reasoning:
            rendered["reasoning_content"] = "".join(message.reasoning)
        return rendered


def tool_result_content(block: dict[str, Any], path: str) -> tuple[str, list[Part]]:
    """The text of a tool_result and the media (images, PDFs) it carries."""
    content = block.get("content")
    cpath = f"{path}.content"
    texts: list[str] = []
    media: list[Part] = []
    if content is None:
        pass
    elif isinstance(content, str):
        texts.append(content)
    elif isinstance(content, list):
        for k, item in enumerate(content):
            ipath = f"{cpath}.{k}"
            itype = block_type(item, ipath)
            if itype == "text":
                texts.append(text_of(item, ipath))
            elif itype == "image":
                media.append(image_part(item, ipath))
            elif itype == "document":
                for part in document_parts(item, ipath):
                    if part["type"] == "text":
                        texts.append(part["text"])
                    else:
                        media.append(part)
            else:
                text = fallback_text(item, itype, ipath)
                if text is not None:
                    texts.append(text)
    else:
        raise bad(cpath, "must be a string or a list of content blocks")
    text = TOOL_TEXT_SEPARATOR.join(texts)
    if block.get("is_error") is True:
        text = f"{TOOL_ERROR_PREFIX}{text}" if text else TOOL_ERROR_PREFIX.rstrip(": ")
    return text, media
