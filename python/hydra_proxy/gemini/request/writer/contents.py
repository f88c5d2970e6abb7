"""Canonical system text and turns -> Gemini ``systemInstruction`` and ``contents``.

System text (`canonical.content`), joined with a blank line ->
``systemInstruction: {"parts": [{"text": ...}]}``.

Contents: user -> ``role: "user"``, assistant -> ``role: "model"``; consecutive contents of
one role are merged; a conversation whose first content would be the model's starts with
a user `LEADING_USER_PLACEHOLDER`. No content left -> 400.

User parts: `content`, by `canonical.content`.

Tool results: each ``tool_use`` of an assistant turn is answered, in call order, at the
start of the next user content by a ``functionResponse {name, response}`` part (the name
looked up by ``tool_use_id``): ``{"output": text}``, or ``{"error": text}`` for
``is_error: true`` (the keys Gemini documents for a result and a failure). Images and
PDFs inside a result stay in the same user content, right after the function responses,
labelled with the call, since a function response cannot carry them. Gemini rejects a
function-call turn that is not fully answered, so a call left without a result gets
``{"error": MISSING_TOOL_RESULT}``; a result answering no call of the preceding turn
becomes text. Call ids are not sent (Vertex rejects ``id``; Gemini pairs calls and
responses by order and name).

Assistant parts: text -> ``text``; ``tool_use`` -> ``functionCall {name, args}`` (the
input, an object). A thinking block that is a verified Gemini-signature carrier
(hydra_proxy.gemini.thought_signature) gives its ``thoughtSignature``, byte-exact, to the
next text/functionCall part of the turn (or to an empty text part when none follows),
which is where Gemini put it. Every other thinking block (other proxy signatures,
Anthropic's) and all ``redacted_thinking`` are dropped, never sent as text. A target with
``require_call_signatures`` (Gemini 3) gets Google's documented
``skip_thought_signature_validator`` on a turn's first function call when it has no
signature (history made by another model), instead of a 400.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ....canonical.content import (
    MISSING_TOOL_RESULT,
    ConversationWriter,
    Part,
    block_type,
    match_results,
    shown_text,
    text_of,
    tool_call,
)
from ....canonical.fields import bad
from ....canonical.turns import LEADING_USER_PLACEHOLDER
from ...thought_signature import SKIP_VALIDATOR, carried_thought_signature
from .content import GEMINI_PARTS
from .target import GeminiTarget

__all__ = ["ContentsWriter"]

MEDIA_NOTE = "[The image/document output of this call follows the function responses.]"


@dataclass(slots=True)
class _Content:
    role: Literal["user", "model"]
    parts: list[Part] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Call:
    call_id: str
    name: str


def _function_response(name: str, text: str, *, error: bool) -> Part:
    return {"functionResponse": {"name": name, "response": {"error" if error else "output": text}}}


class _ModelParts:
    """A model turn's parts, with a carried thoughtSignature waiting for the part it goes
    on (the next one)."""

    def __init__(self) -> None:
        self.parts: list[Part] = []
        self.signature: str | None = None

    def add(self, part: Part) -> None:
        if self.signature is not None:
            part["thoughtSignature"] = self.signature
            self.signature = None
        self.parts.append(part)

    def carry(self, signature: str) -> None:
        if self.signature is not None:
            self.add({"text": ""})  # two carriers in a row: the first stood alone
        self.signature = signature

    def finish(self) -> list[Part]:
        if self.signature is not None:
            self.add({"text": ""})  # a carrier with no part after it stands alone
        return self.parts


def _function_call(block: dict[str, Any], path: str) -> tuple[Part, _Call]:
    """A tool_use block as a ``functionCall`` part, and the call its answer must name."""
    call_id, name = tool_call(block, path)
    args = block.get("input")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise bad(f"{path}.input", "tool_use input must be an object")
    return {"functionCall": {"name": name, "args": args}}, _Call(call_id, name)


def _sign_first_call(parts: list[Part]) -> None:
    """Gemini 3 refuses a function-call turn whose first call has no thoughtSignature: it
    gets the validator-skip one when no carried signature is there."""
    first_call = next((p for p in parts if "functionCall" in p), None)
    if first_call is not None and "thoughtSignature" not in first_call:
        first_call["thoughtSignature"] = SKIP_VALIDATOR


class ContentsWriter(ConversationWriter):
    """Writes the turns, in order, as Gemini contents (`finish`)."""

    def __init__(self, target: GeminiTarget) -> None:
        super().__init__()
        self.target = target
        self.out: list[_Content] = []
        # Calls of the latest model turn that still wait for their function responses.
        self.pending: list[_Call] = []

    def _answer_pending(self) -> None:
        """Synthetic responses for calls the conversation never answered."""
        if self.pending:
            parts = [
                _function_response(call.name, MISSING_TOOL_RESULT, error=True)
                for call in self.pending
            ]
            self.out.append(_Content("user", parts))
        self.pending = []

    def assistant(self, blocks: list[Any], path: str) -> None:
        self._answer_pending()
        turn = _ModelParts()
        calls: list[_Call] = []
        for j, block in enumerate(blocks):
            bpath = f"{path}.{j}"
            btype = block_type(block, bpath)
            if btype == "text":
                text = text_of(block, bpath)
                if text.strip() or turn.signature is not None:
                    turn.add({"text": text})
            elif btype == "tool_use":
                part, call = _function_call(block, bpath)
                turn.add(part)
                calls.append(call)
            elif btype == "thinking":
                carried = carried_thought_signature(block, self.target.signing_key)
                if carried is not None:
                    turn.carry(carried)
            else:
                extra = shown_text(block, btype, bpath)
                if extra is not None:
                    turn.add({"text": extra})
        parts = turn.finish()
        if self.target.require_call_signatures:
            _sign_first_call(parts)
        if not parts:
            return
        self.out.append(_Content("model", parts))
        self.pending = calls

    def user(self, blocks: list[Any], path: str) -> None:
        results, parts = GEMINI_PARTS.user_turn(blocks, path)
        by_id = {call.call_id: call for call in self.pending}
        answered, orphans = match_results(results, by_id)
        responses: dict[str, Part] = {}
        media_parts: list[Part] = []
        for call_id, result in answered.items():
            call = by_id[call_id]
            text = result.text
            if result.media:
                text = f"{text}\n\n{MEDIA_NOTE}" if text else MEDIA_NOTE
                media_parts.append(
                    GEMINI_PARTS.text(f"Output of tool call {call.name} ({call_id}):")
                )
                media_parts.extend(result.media)
            responses[call_id] = _function_response(call.name, text, error=result.is_error)
        answers = [
            responses.get(call.call_id)
            or _function_response(call.name, MISSING_TOOL_RESULT, error=True)
            for call in self.pending
        ]
        self.pending = []
        for orphan in orphans:
            media_parts.extend(GEMINI_PARTS.orphan(orphan))
        parts = answers + media_parts + parts
        if parts:
            self.out.append(_Content("user", parts))

    def finish(self) -> list[dict[str, Any]]:
        self._answer_pending()
        merged: list[_Content] = []
        for content in self.out:
            if merged and merged[-1].role == content.role:
                merged[-1].parts.extend(content.parts)
            else:
                merged.append(content)
        if not merged:
            raise bad("messages", "no message has any non-empty content")
        if merged[0].role == "model":
            merged.insert(0, _Content("user", [{"text": LEADING_USER_PLACEHOLDER}]))
        return [{"role": c.role, "parts": c.parts} for c in merged]
