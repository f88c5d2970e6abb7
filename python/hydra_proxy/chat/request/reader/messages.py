"""Chat messages -> Anthropic system text and user/assistant turns.

System text: every ``system`` and ``developer`` message, wherever it sits, goes into the
top-level ``system`` string: the messages' texts (a string, or text parts joined with
``"\\n"``) joined with ``"\\n"``, in order, as Anthropic's compatibility layer does.
Whitespace-only pieces are dropped; no system text is ever sent as a user turn.

User content: see `content`; a user message left empty is dropped (Zed drops
whitespace-only user messages too).

Assistant content: the restored thinking blocks (`replay`), then ``content`` (string, or
``text``/``refusal`` parts) -> text blocks, then the message's ``refusal`` string -> a
text block, then ``tool_calls`` -> ``tool_use`` blocks (``arguments``:
`canonical.tools.read_arguments`; the same id for the call and its tool message; the
same id twice in one message is a 400). An assistant message left with no content is
dropped.

Cache breakpoints (``cache_control`` on a message, a part or a tool call): `caching`.

Sequence: consecutive ``tool`` messages -> one user turn of ``tool_result`` blocks
(content: the string, or text/image/file parts as blocks; empty content omitted); user
messages that follow join the same turn. A ``tool`` message must answer a call of the
latest assistant message, once, and every call must be answered before the next
assistant message: a 400 naming ``tool_call_id`` / the unanswered call's ``id``. The rest
(ids unique in the request, results first, merged turns, the leading user turn, no
trailing whitespace or thinking) is `canonical.turns`'s.
"""

from __future__ import annotations

from typing import Any

from ....canonical.content import Block, breakpoint_of
from ....canonical.fields import (
    bad,
    each_object,
    part_text,
    part_type,
    required_string,
    type_name,
    unknown_role,
)
from ....canonical.tools import read_arguments
from ....canonical.turns import CallWords, ConversationTurn, TurnBuilder, read_content
from .caching import count_marked, mark_last, read_breakpoint
from .content import content_block
from .replay import Replay, restore_from_content, restore_from_reasoning

__all__ = ["MessageReader"]

CALL_WORDS = CallWords(
    no_id="required: the id of the tool call it answers",
    repeated="answers this tool call a second time",
    stray="does not answer a tool call of the preceding assistant message",
    unanswered="tool call {call_id!r} has no tool message answering it "
    "(each tool call needs a tool message before the next assistant message)",
)


class MessageReader(TurnBuilder):
    """Reads the Chat messages in order into system texts and turns (`finish` merges them)."""

    conversation_field = "messages"
    system_separator = "\n"  # as Anthropic's compatibility layer joins them

    def __init__(self, key: bytes | None) -> None:
        super().__init__(CALL_WORDS)
        self.key = key
        self.skipped = 0  # assistant messages whose reasoning did not verify

    # -- entry points

    def add_messages(self, messages: Any) -> None:
        if messages is None:
            raise bad("messages", "required: a non-empty array of messages")
        if not isinstance(messages, list):
            raise bad("messages", f"must be an array, got {type_name(messages)}")
        if not messages:
            raise bad("messages", "must contain at least one message")
        for i, message in enumerate(messages):
            path = f"messages[{i}]"
            if not isinstance(message, dict):
                raise bad(path, f"must be an object, got {type_name(message)}")
            role = message.get("role")
            if role in ("system", "developer"):
                self._system(message, path)
            elif role == "user":
                self._user(message, path)
            elif role == "assistant":
                self._assistant(message, path)
            elif role == "tool":
                self._tool(message, path)
            elif role == "function":
                raise bad(
                    f"{path}.role",
                    "role 'function' (deprecated function calling) is not supported; "
                    "use tool messages",
                )
            else:
                raise unknown_role(role, path, "system, developer, user, assistant or tool")
        self.check_answered()

    # -- roles

    def _system(self, message: dict[str, Any], path: str) -> None:
        marker = _message_breakpoint(message, path)
        if marker is not None:
            self.system_breakpoint = marker
        content = message.get("content")
        if isinstance(content, str):
            texts = [content]
        elif isinstance(content, list):
            texts = []
            for j, part in enumerate(content):
                part_path = f"{path}.content[{j}]"
                ptype = part_type(part, part_path)
                if ptype != "text":
                    raise bad(
                        f"{part_path}.type",
                        f"{message['role']} messages take only text parts, not {ptype!r}",
                    )
                texts.append(part_text(part, part_path, "text"))
            texts = ["\n".join(texts)] if texts else []
        else:
            raise bad(
                f"{path}.content",
                f"must be a string or an array of text parts, got {type_name(content)}",
            )
        self.system.extend(text for text in texts if text.strip())

    def _user(self, message: dict[str, Any], path: str) -> None:
        blocks = read_content(message.get("content"), path, "content", content_block)
        mark_last(blocks, _message_breakpoint(message, path))
        self.breakpoints += count_marked(blocks)
        if blocks:
            self.user_turn().blocks.extend(blocks)

    def _tool(self, message: dict[str, Any], path: str) -> None:
        self.add_result(message, path, "tool_call_id", "content", content_block, required=False)
        results = self.user_turn().results
        result = results[-1]
        # A breakpoint inside the result's content is the result's (as Anthropic caches a
        # prefix up to a block of the message, never inside one).
        content = result.get("content")
        parts: list[Block] = content if isinstance(content, list) else []
        inner = breakpoint_of(parts)
        if inner is not None:
            result["content"] = [
                {k: v for k, v in part.items() if k != "cache_control"} for part in parts
            ]
        marker = _message_breakpoint(message, path) or inner
        if marker is not None:
            mark_last(results, marker)
            self.breakpoints += 1

    def _assistant(self, message: dict[str, Any], path: str) -> None:
        self.begin_assistant_turn()
        if message.get("function_call") is not None:
            raise bad(
                f"{path}.function_call",
                "deprecated function calling is not supported; use tool_calls",
            )
        if message.get("audio") is not None:
            raise bad(f"{path}.audio", "Claude cannot take audio; omit it")
        reasoning, reasoning_field = None, "reasoning_content"
        for name in ("reasoning_content", "reasoning"):
            value = message.get(name)
            if value is None:
                continue
            if not isinstance(value, str):
                raise bad(f"{path}.{name}", f"must be a string, got {type_name(value)}")
            if value and reasoning is None:
                reasoning, reasoning_field = value, name
        if reasoning is not None:
            replay = restore_from_reasoning(reasoning, self.key, f"{path}.{reasoning_field}")
        else:
            replay = Replay()

        texts = self._assistant_texts(message.get("content"), path)
        if texts:
            texts = restore_from_content(texts, self.key, path, replay)
        blocks: list[Block] = list(replay.blocks)
        blocks.extend({"type": "text", "text": text} for text, _ in texts if text.strip())

        refusal = message.get("refusal")
        if refusal is not None and not isinstance(refusal, str):
            raise bad(f"{path}.refusal", f"must be a string, got {type_name(refusal)}")
        if refusal and refusal.strip():
            blocks.append({"type": "text", "text": refusal})

        blocks.extend(self._tool_calls(message.get("tool_calls"), path))
        mark_last(blocks, _message_breakpoint(message, path))
        self.breakpoints += count_marked(blocks)
        if replay.skipped:
            self.skipped += 1
        if blocks:
            self.turns.append(ConversationTurn("assistant", blocks))

    # -- pieces

    def _assistant_texts(self, content: Any, path: str) -> list[tuple[str, str]]:
        """(text, path) pieces of an assistant message's content."""
        if content is None:
            return []
        if isinstance(content, str):
            return [(content, f"{path}.content")]
        if not isinstance(content, list):
            raise bad(
                f"{path}.content",
                f"must be a string, an array of text parts or null, got {type_name(content)}",
            )
        texts = []
        for j, part in enumerate(content):
            part_path = f"{path}.content[{j}]"
            ptype = part_type(part, part_path)
            if ptype not in ("text", "refusal"):
                raise bad(
                    f"{part_path}.type",
                    f"assistant messages take only text and refusal parts, not {ptype!r}",
                )
            texts.append((part_text(part, part_path, ptype), part_path))
        return texts

    def _tool_calls(self, calls: Any, path: str) -> list[Block]:
        if calls is None:
            return []
        blocks: list[Block] = []
        for call_path, call in each_object(calls, f"{path}.tool_calls"):
            ctype = call.get("type", "function")
            if ctype != "function":
                raise bad(
                    f"{call_path}.type", f"only function tool calls are supported, not {ctype!r}"
                )
            call_id = required_string(
                call.get("id"), call_path, "id", "required: a non-empty string"
            )
            if call_id in self.pending:
                raise bad(f"{call_path}.id", f"duplicate tool call id {call_id!r} in one message")
            function = call.get("function")
            if not isinstance(function, dict):
                raise bad(f"{call_path}.function", "required: an object with name and arguments")
            name = required_string(
                function.get("name"), call_path, "function.name", "required: a non-empty string"
            )
            arguments = read_arguments(function.get("arguments"), f"{call_path}.function.arguments")
            sent_id = self.open_call(call_id, f"{call_path}.id", call_path)
            block: Block = {"type": "tool_use", "id": sent_id, "name": name, "input": arguments}
            marker = read_breakpoint(call.get("cache_control"), f"{call_path}.cache_control")
            if marker is not None:
                block["cache_control"] = marker
            blocks.append(block)
        return blocks


def _message_breakpoint(message: dict[str, Any], path: str) -> dict[str, Any] | None:
    """A message's own ``cache_control``, or the last of its content parts' (assistant and
    system parts are read as texts: their breakpoint counts as the message's)."""
    marker = None
    if "cache_control" in message:
        marker = read_breakpoint(message["cache_control"], f"{path}.cache_control")
    content = message.get("content")
    if marker is None and message.get("role") != "user" and isinstance(content, list):
        for j, part in enumerate(content):
            if isinstance(part, dict) and "cache_control" in part:
                found = read_breakpoint(
                    part.get("cache_control"), f"{path}.content[{j}].cache_control"
                )
                marker = found or marker
    return marker
