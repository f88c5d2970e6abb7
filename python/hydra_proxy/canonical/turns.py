"""The turns a reader builds from a client's conversation, and the rules of their order.

A reader (Chat messages, Responses input items) fills a `TurnBuilder`: system texts, and
user and assistant `ConversationTurn`s in the client's order. What every reader then does
the same:

- Tool calls and their answers are linked: a call gets the id it is sent with (verbatim
  when it matches Anthropic's ``[A-Za-z0-9_-]+``, else hashed: `tools.tool_id`; an id an
  earlier call of the request already took, as clients that number calls per turn do,
  is hashed with its path, since Anthropic wants ids unique in the request). An answer
  must answer a call of the latest assistant turn, once, and every call must be answered
  before the next assistant turn: a 400 naming the field otherwise (OpenAI enforces
  both; Anthropic would reject the translation). `CallWords` says it in the client's words.
- Tool results go first in their user turn (Anthropic requires the ``tool_result``
  blocks before other content, so user text that arrives after the results still goes
  after them; `ConversationTurn.content`).
- `TurnBuilder.finish`: thinking blocks at the end of an assistant turn are removed
  ("The final block in an assistant message cannot be thinking"), empty turns dropped,
  consecutive same-role turns merged, and a conversation that starts with an assistant
  turn gets a user turn `LEADING_USER_PLACEHOLDER` before it (Anthropic: "first message
  must use the user role"; strict chat templates want the same).
- `strip_final_whitespace`: trailing whitespace is removed from a final assistant turn
  (a prefill; Anthropic rejects it), and `finish_turns` writes the turns as messages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .content import THINKING_TYPES, Block
from .fields import bad, required_string, type_name
from .tools import hashed_id, tool_id

__all__ = [
    "LEADING_USER_PLACEHOLDER",
    "CallWords",
    "ConversationTurn",
    "TurnBuilder",
    "finish_turns",
    "read_content",
    "strip_final_whitespace",
]

# The user turn put before a conversation that starts with an assistant turn.
LEADING_USER_PLACEHOLDER = "(continued)"

PartReader = Callable[[Any, str], "Block | None"]
"""(part, path) -> the canonical block of a client content part (None: nothing to send)."""


@dataclass(slots=True)
class ConversationTurn:
    """One user or assistant turn of the canonical conversation a reader builds."""

    role: str  # "user" or "assistant"
    blocks: list[Block] = field(default_factory=list)
    results: list[Block] = field(default_factory=list)  # tool_result blocks (user turns)

    def content(self) -> list[Block]:
        return self.results + self.blocks


@dataclass(frozen=True)
class CallWords:
    """How a client protocol's 400s name a call and its answer."""

    no_id: str  # an answer without the id of its call
    repeated: str  # an answer to a call that was answered already
    stray: str  # an answer to no call of the latest assistant turn
    unanswered: str  # a call without its answer; "{call_id!r}" stands for the call


class TurnBuilder:
    """System texts and turns in the client's order, and the calls they link.

    A reader subclasses it for its protocol's conversation field.
    """

    conversation_field = "messages"  # the client's field the turns come from (a 400 names it)
    system_separator = "\n\n"  # how the system texts are joined

    def __init__(self, words: CallWords) -> None:
        self.words = words
        self.system: list[str] = []
        # The client's breakpoint on its system text (a prompt-cache prefix up to it), and
        # how many it put on blocks of the turns.
        self.system_breakpoint: dict[str, Any] | None = None
        self.breakpoints = 0
        self.turns: list[ConversationTurn] = []
        # Calls of the latest assistant turn not answered yet: id -> (path of its id, sent id).
        self.pending: dict[str, tuple[str, str]] = {}
        self.answered: set[str] = set()
        self.sent_ids: set[str] = set()

    def user_turn(self) -> ConversationTurn:
        """The user turn being written (a new one unless the latest turn is the user's)."""
        if not self.turns or self.turns[-1].role != "user":
            self.turns.append(ConversationTurn("user"))
        return self.turns[-1]

    def begin_assistant_turn(self) -> None:
        """A new assistant turn starts: every call of the previous one must be answered."""
        self.check_answered()
        self.answered = set()

    def open_call(self, call_id: str, id_path: str, where: str) -> str:
        """Record a call of the current assistant turn; the id it is sent with."""
        sent_id = tool_id(call_id)
        if sent_id in self.sent_ids:
            sent_id = hashed_id(f"{call_id}\x00{where}")
        self.sent_ids.add(sent_id)
        self.pending[call_id] = (id_path, sent_id)
        return sent_id

    def answer_call(self, call_id: str, path: str, id_field: str) -> str:
        """The sent id of the call an answer (at `path`, the id in `id_field`) answers."""
        if call_id not in self.pending:
            problem = self.words.repeated if call_id in self.answered else self.words.stray
            raise bad(f"{path}.{id_field}", f"{call_id!r} {problem}")
        _, sent_id = self.pending.pop(call_id)
        self.answered.add(call_id)
        return sent_id

    def add_result(
        self,
        answer: dict[str, Any],
        path: str,
        id_field: str,
        content_field: str,
        read_part: PartReader,
        *,
        required: bool,
    ) -> None:
        """An answer to a call (the object at `path`: the call's id in `id_field`, its
        content in `content_field`, a string or parts; `required`: no content at all is a
        400) as a tool_result of the user turn."""
        call_id = required_string(answer.get(id_field), path, id_field, self.words.no_id)
        result: Block = {
            "type": "tool_result",
            "tool_use_id": self.answer_call(call_id, path, id_field),
        }
        content = answer.get(content_field)
        if isinstance(content, str):
            if content.strip():
                result["content"] = content
        elif isinstance(content, list):
            blocks = read_content(content, path, content_field, read_part)
            if blocks:
                result["content"] = blocks
        elif content is not None or required:
            raise bad(
                f"{path}.{content_field}",
                f"must be a string or an array of content parts, got {type_name(content)}",
            )
        self.user_turn().results.append(result)

    def check_answered(self) -> None:
        if self.pending:
            call_id, (id_path, _) = next(iter(self.pending.items()))
            raise bad(id_path, self.words.unanswered.format(call_id=call_id))

    def finish(self) -> list[ConversationTurn]:
        turns: list[ConversationTurn] = []
        for turn in self.turns:
            if turn.role == "assistant":
                while turn.blocks and turn.blocks[-1]["type"] in THINKING_TYPES:
                    turn.blocks.pop()
            if not turn.blocks and not turn.results:
                continue
            if turns and turns[-1].role == turn.role:
                turns[-1].blocks.extend(turn.blocks)
                turns[-1].results.extend(turn.results)
            else:
                turns.append(turn)
        if turns and turns[0].role == "assistant":
            placeholder = ConversationTurn(
                "user", [{"type": "text", "text": LEADING_USER_PLACEHOLDER}]
            )
            turns.insert(0, placeholder)
        return turns


def read_content(content: Any, path: str, field: str, read_part: PartReader) -> list[Block]:
    """A message's content (field `field` of the message at `path`): a string (a text
    block unless blank) or parts, as blocks."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    if not isinstance(content, list):
        raise bad(
            f"{path}.{field}",
            f"must be a string or an array of content parts, got {type_name(content)}",
        )
    blocks = []
    for j, part in enumerate(content):
        block = read_part(part, f"{path}.{field}[{j}]")
        if block is not None:
            blocks.append(block)
    return blocks


def strip_final_whitespace(turns: list[ConversationTurn]) -> None:
    final = next((t for t in reversed(turns) if t.blocks or t.results), None)
    if final is None or final.role != "assistant":
        return
    while final.blocks and final.blocks[-1]["type"] == "text":
        text = final.blocks[-1]["text"].rstrip()
        if text:
            final.blocks[-1] = {**final.blocks[-1], "text": text}
            return
        final.blocks.pop()


def finish_turns(turns: list[ConversationTurn]) -> list[dict[str, Any]]:
    """The turns as Anthropic messages (consecutive same-role turns as one)."""
    messages: list[dict[str, Any]] = []
    for turn in turns:
        content = turn.content()
        if not content:
            continue
        if messages and messages[-1]["role"] == turn.role:
            messages[-1]["content"].extend(content)
        else:
            messages.append({"role": turn.role, "content": content})
    return messages
