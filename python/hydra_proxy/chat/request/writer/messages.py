"""Canonical system text and turns -> Chat messages.

System text (`canonical.content`) -> ONE leading ``system`` message: the pieces
joined with a blank line.

User turns: content blocks -> parts (`content`, by `canonical.content`). A user turn whose
content is only text becomes a string (text pieces joined with a blank line; the most
widely accepted shape), otherwise a list of parts. A user turn left empty (e.g. only
``cache_control``) is dropped.

Tool results: each ``tool_result`` answering a ``tool_use`` of the immediately preceding
assistant turn becomes a ``role: "tool"`` message placed right after that assistant
message, in the order of its ``tool_calls``, before any other content of the same user
turn. Content: the result's text; ``is_error: true`` prefixes it with ``"Error: "``.
Images and PDFs in a tool result go into the user message that follows the tool messages
(labelled with the tool call id; the tool message says so), since tool messages cannot
carry them. A call left without a result gets a synthetic tool message
(`MISSING_TOOL_RESULT`); a result that answers no call becomes user text
(`canonical.content`).

Assistant turns: text (joined with a blank line) -> ``content`` (``null`` when there is
none); ``tool_use`` -> ``tool_calls`` (ids verbatim, ``arguments`` the input as compact
JSON: missing/``{}`` -> ``"{}"``); thinking: `thinking`. A ``replay_reasoning`` target
gets ``reasoning_content`` on every assistant message (``""`` when no verified reasoning
exists) because DeepSeek-style APIs reject a tool turn without the field. An assistant
turn with neither text nor tool calls is dropped.

Breakpoints (a ``cache_control`` target only): a ``cache_control`` on a system block
marks the end of the system message; one on a user turn's blocks marks the turn's last
part, or its last tool message when the turn is only tool results; the request's
top-level ``cache_control`` (automatic caching) marks the last message. Such a target
always gets list content for system, user and tool messages, so that the bytes of a
message stay the same when the breakpoint moves on to a later turn.

Sequence: consecutive user messages and consecutive assistant messages are merged (strict
chat templates require alternation; OpenAI does not mind). When the first non-system
message would be an assistant turn, a user message `LEADING_USER_PLACEHOLDER` is put
before it (LiteLLM #42432: ``[assistant, tool]`` without a user turn is a 400 upstream). A
request with no non-empty message left is a 400 (Anthropic rejects it too).

What a Chat upstream model accepts (from the route and provider configuration).

Canonical content -> Chat content parts: the leaves of `canonical.content.Parts`.

text -> ``text``; image (base64 -> ``data:`` URL, url -> URL) -> ``image_url`` part; a
base64 document -> ``file`` part with ``file_data`` + ``filename`` (`Parts.filename`);
text/content documents -> text. Document
sources ``url``/``file`` cannot be sent to a Chat upstream: 400 naming ``...source``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import orjson

from ....canonical.content import (
    MISSING_TOOL_RESULT,
    ConversationWriter,
    Part,
    Parts,
    ToolResult,
    block_type,
    breakpoint_of,
    match_results,
    shown_text,
    tool_call,
)
from ....canonical.fields import bad
from ....canonical.tools import tool_arguments
from ....canonical.turns import LEADING_USER_PLACEHOLDER
from .thinking import replayed_reasoning

__all__ = ["CHAT_PARTS", "ChatParts", "ChatTarget", "MessagesWriter", "WriterRecord"]


MEDIA_MOVED_NOTE = (
    "[The image/document output of this tool call is attached in the next user message.]"
)
SYSTEM_SEPARATOR = "\n\n"
TEXT_SEPARATOR = "\n\n"


@dataclass(slots=True)
class _User:
    parts: list[Part] = field(default_factory=list)


@dataclass(slots=True)
class _Assistant:
    texts: list[str] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Tool:
    tool_call_id: str
    content: str
    cache_control: Any = None


_Message: TypeAlias = "_User | _Assistant | _Tool"


@dataclass(slots=True)
class WriterRecord:
    """What a MessagesWriter wrote for one request, with its state before each message
    (`marks`: the length of `out`, the pending calls, how many system texts the messages
    gave). The session's next request resumes after the leading messages it shares with
    this one, as the same objects (server/pipeline/previous_turn.py), for the same target: what a
    message writes depends only on the target and the messages up to it (the ``system``
    field is read afresh: Claude Code's billing line in it changes every request), and
    nothing in `out` changes once written (the writer replaces what it changes)."""

    target: ChatTarget
    messages: list[Any]
    out: list[_Message]
    message_system_texts: list[str]
    """The system texts of ``system``-role messages, in order."""
    marks: list[tuple[int, list[str], int]]
    resumed: int = 0
    """How many leading messages were the previous request's, not written again."""
    rendered: dict[int, tuple[_Message, orjson.Fragment]] = field(default_factory=dict)
    """Each message of `out` as JSON text, by the message's id (kept with it)."""


class MessagesWriter(ConversationWriter):
    """Writes the system text and the turns, in order, as Chat messages (`finish`);
    `previous`: the record of the session's previous request to resume from (`record`:
    this one's, once written)."""

    def __init__(
        self, target: ChatTarget, previous: WriterRecord | None = None, *, keep: bool = False
    ) -> None:
        super().__init__()
        self.target = target
        self.out: list[_Message] = []
        # Tool call ids of the latest assistant turn that still wait for their results.
        self.pending: list[str] = []
        self.previous = previous
        self.marks: list[tuple[int, list[str], int]] = []
        self.record: WriterRecord | None = None
        self.field_texts = 0  # how many system texts the ``system`` field gave
        self.resumed = 0
        # `keep`: the record is kept for the next request, and `finish` gives each message
        # it wrote (and kept) as its JSON text, rendered once for the whole session.
        self.keep = keep

    def resume(self, body: dict[str, Any], messages: list[Any]) -> int:
        self.field_texts = len(self.system_texts)  # the ``system`` field's, read already
        previous = self.previous
        if previous is None or previous.target != self.target:
            return 0
        old = previous.messages
        same, limit = 0, min(len(messages), len(old))
        while same < limit and messages[same] is old[same]:
            same += 1
        if same:
            length, self.pending, texts = previous.marks[same]
            self.out = previous.out[:length]
            self.system_texts += previous.message_system_texts[:texts]
            self.marks = previous.marks[:same]
        self.resumed = same
        return same

    def mark(self) -> None:
        texts = len(self.system_texts) - self.field_texts
        self.marks.append((len(self.out), self.pending, texts))

    def _answer_pending(self, results: dict[str, str]) -> None:
        for call_id in self.pending:
            self.out.append(_Tool(call_id, results.get(call_id, MISSING_TOOL_RESULT)))
        self.pending = []

    def assistant(self, blocks: list[Any], path: str) -> None:
        self._answer_pending({})
        turn = _Assistant()
        for j, block in enumerate(blocks):
            bpath = f"{path}.{j}"
            btype = block_type(block, bpath)
            if btype == "tool_use":
                call_id, name = tool_call(block, bpath)
                arguments = tool_arguments(block.get("input"))
                turn.tool_calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    }
                )
            elif btype == "thinking":
                if self.target.replay_reasoning:
                    reasoning = replayed_reasoning(block, self.target.signing_key)
                    if reasoning is not None:
                        turn.reasoning.append(reasoning)
            else:
                text = shown_text(block, btype, bpath)
                if text is not None:
                    turn.texts.append(text)
        if not turn.texts and not turn.tool_calls:
            return
        self.out.append(turn)
        self.pending = [call["id"] for call in turn.tool_calls]

    def user(self, blocks: list[Any], path: str) -> None:
        results, parts = CHAT_PARTS.user_turn(blocks, path)
        answered = len(self.out)
        if results:
            parts = self._answer(results) + parts
        else:
            self._answer_pending({})
        marker = breakpoint_of(blocks) if self.target.cache_control else None
        if parts:
            if marker is not None:
                parts[-1] = {**parts[-1], "cache_control": marker}
            self.out.append(_User(parts))
        elif marker is not None and len(self.out) > answered:
            last = self.out[-1]
            if isinstance(last, _Tool):
                last.cache_control = marker

    def write(self, body: dict[str, Any]) -> None:
        super().write(body)
        self.mark()  # the state after the last message
        self.record = WriterRecord(
            self.target,
            body["messages"],
            list(self.out),
            self.system_texts[self.field_texts :],
            self.marks,
            self.resumed,
        )
        marker = body.get("cache_control")
        if self.target.cache_control and isinstance(marker, dict) and self.out:
            last = self.out[-1]
            if isinstance(last, _User) and last.parts:
                parts = list(last.parts)
                parts[-1] = {**parts[-1], "cache_control": marker}
                self.out[-1] = _User(parts)
            elif isinstance(last, _Tool):
                self.out[-1] = _Tool(last.tool_call_id, last.content, marker)

    def _answer(self, results: list[ToolResult]) -> list[Part]:
        """Tool messages for the pending calls; the user content that goes before the rest
        of the turn: the media of the answered results, then the orphans."""
        answered, orphans = match_results(results, self.pending)
        lead: list[Part] = []
        texts: dict[str, str] = {}
        for call_id, result in answered.items():
            text = result.error_text
            if result.media:
                text = f"{text}\n\n{MEDIA_MOVED_NOTE}" if text else MEDIA_MOVED_NOTE
                lead.append(CHAT_PARTS.text(f"Output of tool call {call_id}:"))
                lead.extend(result.media)
            texts[call_id] = text
        self._answer_pending(texts)
        for orphan in orphans:
            lead.extend(CHAT_PARTS.orphan(orphan))
        return lead

    # -- output

    def finish(self) -> list[Any]:
        self._answer_pending({})
        merged, copied = self._merged()
        out: list[Any] = []  # dicts, or orjson.Fragment when kept
        if self.system_texts:
            out.append(self._system_message())
        if not self.keep:
            out.extend(self._render(message) for message in merged)
            return out
        known = self.previous.rendered if self.previous is not None else {}
        rendered: dict[int, tuple[_Message, orjson.Fragment]] = {}
        for message in merged:
            before = known.get(id(message))
            if before is not None and before[0] is message:
                text = before[1]
            else:
                text = orjson.Fragment(orjson.dumps(self._render(message)))
            if message is not copied:  # a merged copy is this request's alone
                rendered[id(message)] = (message, text)
            out.append(text)
        if self.record is not None:
            self.record.rendered = rendered
        return out

    def _merged(self) -> tuple[list[_Message], _Message | None]:
        """The messages with each run of one role merged (Chat wants roles to alternate),
        a user turn first; and the last merged message when it is this call's own copy."""
        merged: list[_Message] = []
        copied: _Message | None = None
        for message in self.out:
            last = merged[-1] if merged else None
            if isinstance(message, _User) and isinstance(last, _User):
                if last is not copied:  # what `out` holds is never changed (WriterRecord)
                    merged[-1] = last = copied = _User(list(last.parts))
                last.parts.extend(message.parts)
            elif isinstance(message, _Assistant) and isinstance(last, _Assistant):
                if last is not copied:
                    last = _Assistant(list(last.texts), list(last.tool_calls), list(last.reasoning))
                    merged[-1] = copied = last
                last.texts.extend(message.texts)
                last.tool_calls.extend(message.tool_calls)
                last.reasoning.extend(message.reasoning)
            else:
                merged.append(message)
        if not merged:
            raise bad("messages", "no message has any non-empty content")
        if isinstance(merged[0], _Assistant):
            merged.insert(0, _User([{"type": "text", "text": LEADING_USER_PLACEHOLDER}]))
        return merged, copied

    def _system_message(self) -> dict[str, Any]:
        """The system message: its texts joined, as one part when it may carry a cache
        breakpoint."""
        system = SYSTEM_SEPARATOR.join(self.system_texts)
        if not self.target.cache_control:
            return {"role": "system", "content": system}
        part: dict[str, Any] = {"type": "text", "text": system}
        if self.system_breakpoint is not None:
            part["cache_control"] = self.system_breakpoint
        return {"role": "system", "content": [part]}

    def _render(self, message: _Message) -> dict[str, Any]:
        if isinstance(message, _Tool):
            content: Any = message.content
            if self.target.cache_control:
                content = [{"type": "text", "text": message.content}]
                if message.cache_control is not None:
                    content[0]["cache_control"] = message.cache_control
            return {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}
        if isinstance(message, _User):
            if not self.target.cache_control and all(
                part["type"] == "text" for part in message.parts
            ):
                content = TEXT_SEPARATOR.join(part["text"] for part in message.parts)
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


@dataclass(frozen=True)
class ChatTarget:
    """What the upstream model accepts (from the route/provider configuration)."""

    model: str
    # o-series and GPT-5 take only max_completion_tokens.
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    max_tokens_limit: int | None = None
    # The model takes `reasoning_effort`.
    reasoning: bool = False
    # How it takes a reasoning level (canonical.effort: reasoning_effort | thinking |
    # enable_thinking | none; None: reasoning_effort when `reasoning`) and, for
    # reasoning_effort, the levels it names (empty: OpenAI's).
    effort_form: str | None = None
    effort_levels: tuple[str, ...] = ()
    # DeepSeek/Kimi-style: needs `reasoning_content` back on assistant turns.
    replay_reasoning: bool = False
    # Key for hydra_proxy.signature.
    signing_key: bytes = b""
    include_usage: bool = True
    # The model accepts temperature/top_p (o-series/GPT-5 reasoning models reject them).
    sampling: bool = True
    # The route's reasoning effort (canonical.effort): sent as `reasoning_effort` whatever
    # the request asks (None: the request's, for a `reasoning` target).
    effort: str | None = None
    # Sent as `prompt_cache_key` (the client's session; None: none sent).
    prompt_cache_key: str | None = None
    # The upstream honours Anthropic-style `cache_control` on content parts (OpenRouter):
    # the request's breakpoints are carried, and message content is always a list of parts
    # (a breakpoint moving to the next turn must not change the earlier message's bytes).
    cache_control: bool = False


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
