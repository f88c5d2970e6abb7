"""Responses ``instructions`` and ``input`` items -> canonical system text and turns.

System text: ``instructions``, then every ``system`` / ``developer`` message wherever it
sits (whitespace-only pieces dropped).

Input: a string -> one user text block. Items: ``message`` (also without ``type``: the
"easy" form ``{role, content}``), content a string or parts (`content`).
``function_call`` -> a ``tool_use`` block on the assistant turn (``call_id`` as the id,
`canonical.turns`; ``arguments`` a JSON object string; ``namespace`` + ``name`` -> the
flattened name, `responses.tools.ToolNames`), ``custom_tool_call`` -> ``tool_use`` with
``{"input": <input>}``. ``function_call_output`` / ``custom_tool_call_output`` ->
``tool_result`` blocks (``output`` a string or ``input_text``/``input_image``/
``input_file`` parts): consecutive outputs form one user turn right after the calling
assistant turn, ahead of any user text in that turn. An output must answer a call of the
latest assistant turn, once, and every call must be answered before the next assistant
turn and by the end of the input: else a 400 naming ``input[i].call_id``. ``reasoning``
items: `replay`. Items of OpenAI-hosted tools (``web_search_call``, ``file_search_call``,
``computer_call``, ``image_generation_call``, ``code_interpreter_call``,
``local_shell_call``, ``mcp_*``...) ran at OpenAI and cannot be replayed anywhere else:
skipped and reported in `Translation.dropped_items`. A ``compaction`` item the proxy wrote
(`responses.compaction`) becomes the summary it carries, as user text at its place; any
other (OpenAI's encrypted one) is noted in `foreign_compaction` (the ingress refuses it
unless an OpenAI Responses upstream gets the request as it is). ``compaction_trigger``,
only as the last item, asks for a compaction (`compaction_asked`). The sequence rules
(merged turns, the leading user turn, no trailing thinking or whitespace) are
`canonical.turns`'s.
"""

from __future__ import annotations

import logging
from typing import Any

from ....canonical.fields import bad, required_string, type_name, unknown_role
from ....canonical.tools import read_arguments
from ....canonical.turns import CallWords, ConversationTurn, TurnBuilder, read_content
from ...compaction import decode_compaction, restored_summary
from ...reasoning import is_carrier
from ...tools import CUSTOM_INPUT_KEY, ToolNames
from .content import input_part, read_texts
from .replay import MAX_FORGED, restore_reasoning
from .validation import NO_STATE

__all__ = ["InputReader"]

log = logging.getLogger(__name__)

CALL_WORDS = CallWords(
    no_id="required: the call_id of the call it answers",
    repeated="answers this call a second time",
    stray="does not answer a call of the latest assistant turn",
    unanswered="call {call_id!r} has no function_call_output answering it "
    "(each call needs its output before the next assistant turn)",
)
_CALLS = {"function_call": False, "custom_tool_call": True}  # type -> custom
_OUTPUTS = ("function_call_output", "custom_tool_call_output")


class InputReader(TurnBuilder):
    """Reads the input items in order into system texts and turns (`finish` merges them)."""

    conversation_field = "input"
    system_separator = "\n\n"

    def __init__(self, key: bytes | None, names: ToolNames) -> None:
        super().__init__(CALL_WORDS)
        self.key = key
        self.names = names
        self.skipped = 0  # reasoning items that were not a valid carrier
        self.dropped: list[str] = []  # hosted-tool item types, in order, once each
        self.dropped_seen: set[str] = set()
        self.forged = 0  # carriers that did not verify
        self.compaction_asked = False  # the input ends with a compaction_trigger
        self.foreign_compaction: str | None = None  # the first compaction item not ours

    def add_input(self, value: Any) -> None:
        if value is None:
            raise bad("input", "required: a string or an array of input items")
        if isinstance(value, str):
            if value.strip():
                self.user_turn().blocks.append({"type": "text", "text": value})
            return
        if not isinstance(value, list):
            raise bad("input", f"must be a string or an array, got {type_name(value)}")
        last = len(value) - 1
        for i, item in enumerate(value):
            if isinstance(item, dict) and item.get("type") == "compaction_trigger":
                if i != last:
                    raise bad(f"input[{i}].type", "compaction_trigger must be the last item")
                self.compaction_asked = True
                continue
            self._item(item, f"input[{i}]")
        self.check_answered()

    def _item(self, item: Any, path: str) -> None:
        if not isinstance(item, dict):
            raise bad(path, f"must be an object, got {type_name(item)}")
        itype = item.get("type")
        if itype is None and "role" in item:
            itype = "message"
        if not isinstance(itype, str) or not itype:
            raise bad(f"{path}.type", "required")
        if itype == "message":
            self._message(item, path)
        elif itype in _CALLS:
            self._call(item, path, _CALLS[itype])
        elif itype in _OUTPUTS:
            self._output(item, path)
        elif itype == "reasoning":
            self._reasoning(item, path)
        elif itype == "compaction":
            self._compaction(item, path)
        elif itype == "item_reference":
            raise bad(
                f"{path}.type",
                f"{NO_STATE}; item_reference cannot be resolved, send the item itself",
            )
        else:
            # Hosted-tool calls and their outputs, compaction items...: they ran at OpenAI.
            log.debug("%s: %s input item skipped (not replayable here)", path, itype)
            if itype not in self.dropped_seen:  # a set: distinct types by the thousand
                self.dropped_seen.add(itype)
                self.dropped.append(itype)

    def _reasoning(self, item: dict[str, Any], path: str) -> None:
        """A reasoning item the proxy carried: its thinking blocks restored (an item that is
        no valid carrier is skipped). Past MAX_FORGED carriers that did not verify, the rest
        are skipped unchecked: each check is a MAC, and a request may hold thousands."""
        blocks = restore_reasoning(item, path, self.key, verify=self.forged < MAX_FORGED)
        if blocks is None:
            self.skipped += 1
            encrypted = item.get("encrypted_content")
            self.forged += isinstance(encrypted, str) and is_carrier(encrypted)
        elif blocks:
            self._assistant_turn().blocks.extend(blocks)

    def _compaction(self, item: dict[str, Any], path: str) -> None:
        """A compaction item the proxy made: its summary as user text (another's is noted)."""
        summary = decode_compaction(item.get("encrypted_content"), self.key)
        if summary is not None:
            self.user_turn().blocks.append({"type": "text", "text": restored_summary(summary)})
        elif self.foreign_compaction is None:
            self.foreign_compaction = path

    def _message(self, item: dict[str, Any], path: str) -> None:
        role = item.get("role")
        content = item.get("content")
        if role in ("system", "developer"):
            texts = read_texts(content, path, ("input_text",), role)
            self.system.extend(text for text in texts if text.strip())
        elif role == "user":
            blocks = read_content(content, path, "content", input_part)
            if blocks:
                self.user_turn().blocks.extend(blocks)
        elif role == "assistant":
            texts = read_texts(content, path, ("output_text", "input_text", "refusal"), role)
            blocks = [{"type": "text", "text": text} for text in texts if text.strip()]
            if blocks:
                self._assistant_turn().blocks.extend(blocks)
        else:
            raise unknown_role(role, path, "user, assistant, system or developer")

    def _call(self, item: dict[str, Any], path: str, custom: bool) -> None:
        call_id = required_string(
            item.get("call_id"), path, "call_id", "required: a non-empty string"
        )
        if call_id in self.pending:
            raise bad(f"{path}.call_id", f"duplicate call_id {call_id!r}")
        name = required_string(item.get("name"), path, "name", "required: a non-empty string")
        namespace = item.get("namespace")
        if namespace is not None and not isinstance(namespace, str):
            raise bad(f"{path}.namespace", f"must be a string, got {type_name(namespace)}")
        tool_input: dict[str, Any]
        if custom:
            raw = item.get("input")
            if not isinstance(raw, str):
                raise bad(f"{path}.input", f"must be a string, got {type_name(raw)}")
            tool_input = {CUSTOM_INPUT_KEY: raw}
        else:
            tool_input = read_arguments(item.get("arguments"), f"{path}.arguments")
        turn = self._assistant_turn()
        sent_id = self.open_call(call_id, f"{path}.call_id", path)
        turn.blocks.append(
            {
                "type": "tool_use",
                "id": sent_id,
                "name": self.names.sent_name(name, namespace),
                "input": tool_input,
            }
        )

    def _output(self, item: dict[str, Any], path: str) -> None:
        self.add_result(item, path, "call_id", "output", input_part, required=True)

    def _assistant_turn(self) -> ConversationTurn:
        if not self.turns or self.turns[-1].role != "assistant":
            self.begin_assistant_turn()
            self.turns.append(ConversationTurn("assistant"))
        return self.turns[-1]
