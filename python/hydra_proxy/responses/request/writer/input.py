"""Canonical system text and turns -> Responses ``instructions`` and ``input`` items.

System text (`canonical.content`) -> ``instructions``, pieces joined with a blank
line (as the Chat writer makes one leading system message).

User turns: ``tool_result`` blocks answering the preceding assistant turn's calls ->
``function_call_output`` items first (``output`` the result's text, ``is_error``
prefixed ``"Error: "`` like the Chat writer; with images/PDFs an array of ``input_text``
/ ``input_image`` / ``input_file`` parts), a call left unanswered gets
`MISSING_TOOL_RESULT` (OpenAI rejects a call without output), a result answering no call
becomes user text; then one user ``message`` with the other parts (`content`).

Assistant turns, in block order: ``thinking`` whose signature is this proxy's upstream
carrier (`reasoning.verify_upstream_item`, made by the Responses response reader) -> the
original ``reasoning`` item (``id``, ``encrypted_content``, the text as one
``summary_text``); every other thinking block and all ``redacted_thinking`` are dropped
(another model's reasoning cannot be replayed to OpenAI); runs of text -> one assistant
``message`` item (texts joined with a blank line); ``tool_use`` -> ``function_call``
(``call_id`` = the id, ``arguments`` compact JSON).

A conversation that starts with an assistant turn gets a user `LEADING_USER_PLACEHOLDER`
first; a request with no item left is a 400.
"""

from __future__ import annotations

from typing import Any

from ....canonical.content import (
    MISSING_TOOL_RESULT,
    ConversationWriter,
    ToolResult,
    block_type,
    match_results,
    shown_text,
    tool_call,
)
from ....canonical.fields import bad
from ....canonical.tools import tool_arguments
from ....canonical.turns import LEADING_USER_PLACEHOLDER
from ...reasoning import verify_upstream_item
from .content import RESPONSES_PARTS
from .target import ResponsesTarget

__all__ = ["TEXT_SEPARATOR", "InputWriter"]

TEXT_SEPARATOR = "\n\n"

Item = dict[str, Any]


class InputWriter(ConversationWriter):
    """Writes the turns, in order, as Responses input items (`finish`)."""

    def __init__(self, target: ResponsesTarget) -> None:
        super().__init__()
        self.target = target
        self.items: list[Item] = []
        self.pending: list[str] = []  # calls of the latest assistant turn without output
        self.texts: list[str] = []  # assistant text not yet written as a message item

    def finish(self) -> list[Item]:
        self._flush_text()
        self._answer_pending({})
        if not self.items:
            raise bad("messages", "no message has any non-empty content")
        first = self.items[0]
        if first.get("role") != "user" and first.get("type") != "function_call_output":
            self.items.insert(0, _message("user", LEADING_USER_PLACEHOLDER))
        return self.items

    def assistant(self, blocks: list[Any], path: str) -> None:
        self._answer_pending({})
        calls: list[str] = []
        for j, block in enumerate(blocks):
            bpath = f"{path}.{j}"
            btype = block_type(block, bpath)
            if btype == "tool_use":
                call_id, name = tool_call(block, bpath)
                self._flush_text()
                self.items.append(
                    {
                        "type": "function_call",
                        "call_id": call_id,
                        "name": name,
                        "arguments": tool_arguments(block.get("input")),
                    }
                )
                calls.append(call_id)
            elif btype == "thinking":
                self._reasoning(block)
            else:
                text = shown_text(block, btype, bpath)
                if text is not None:
                    self.texts.append(text)
        self._flush_text()
        self.pending = calls

    def user(self, blocks: list[Any], path: str) -> None:
        self._flush_text()
        results, parts = RESPONSES_PARTS.user_turn(blocks, path)
        if results:
            answered, orphans = match_results(results, self.pending)
            self._answer_pending({call_id: _output(result) for call_id, result in answered.items()})
            parts = [part for orphan in orphans for part in RESPONSES_PARTS.orphan(orphan)] + parts
        else:
            self._answer_pending({})
        if parts:
            self.items.append({"type": "message", "role": "user", "content": parts})

    def _reasoning(self, block: dict[str, Any]) -> None:
        thinking = block.get("thinking")
        thinking = thinking if isinstance(thinking, str) else ""
        item = verify_upstream_item(thinking, block.get("signature"), self.target.signing_key)
        if item is None:
            return  # not replayable to OpenAI: another model's reasoning
        self._flush_text()
        summary = [{"type": "summary_text", "text": thinking}] if thinking else []
        self.items.append(
            {
                "type": "reasoning",
                "id": item["id"],
                "summary": summary,
                "encrypted_content": item["encrypted_content"],
            }
        )

    def _flush_text(self) -> None:
        if self.texts:
            self.items.append(_message("assistant", TEXT_SEPARATOR.join(self.texts)))
            self.texts = []

    def _answer_pending(self, outputs: dict[str, Any]) -> None:
        for call_id in self.pending:
            output = outputs.get(call_id, MISSING_TOOL_RESULT)
            self.items.append(
                {"type": "function_call_output", "call_id": call_id, "output": output}
            )
        self.pending = []


def _output(result: ToolResult) -> Any:
    """A result's ``function_call_output`` output: its text, or parts when it has media."""
    text = result.error_text
    if not result.media:
        return text
    return ([RESPONSES_PARTS.text(text)] if text else []) + result.media


def _message(role: str, text: str) -> Item:
    # The "easy" input message form: accepted for every role, no item id needed.
    return {"type": "message", "role": role, "content": text}
