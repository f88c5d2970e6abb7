"""Gemini ``systemInstruction`` and ``contents`` -> canonical system text and turns.

System text: ``systemInstruction`` (a Content, or a bare string) -> its text parts, each a
system text (whitespace-only dropped; other parts are a 400).

Contents: role ``user`` (and a missing role, and the older ``function`` role of function
responses) -> a user turn, ``model`` -> an assistant turn, any other role a 400. Parts:
`parts` (text, media), and:

- ``functionCall {id?, name, args}`` (model turns only) -> a ``tool_use`` block; its id is
  the client's (`canonical.turns`), or, when it has none, one derived from its place in
  the request (the same request always gets the same ids).
- ``functionResponse {id?, name, response, parts?}`` (user turns only) -> a
  ``tool_result`` answering the call with that id, else the first unanswered call of that
  name in the latest model turn: ``{"output": text}`` -> that text, ``{"error": text}``
  -> that text as an error, any other response -> its JSON; images in its ``parts`` go
  with it. A response that answers no call, and a call left without one before the next
  model turn, are a 400 naming the field (Gemini rejects both).
- ``thought: true`` parts are the model's reasoning summaries: they are not sent back.
- ``thoughtSignature``: a verified carrier of this proxy (`gemini.carrier`) restores its
  thinking blocks, in order, just before the block of the part that carries it (where
  the encoder put it, after the thinking). Any other signature (Gemini's own, the
  ``skip_thought_signature_validator`` sentinel, one that does not verify) is dropped and
  counted (`ContentsReader.skipped`), never turned into text.
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from ....canonical.content import Block
from ....canonical.fields import bad, each_object, type_name
from ....canonical.tools import tool_name
from ....canonical.turns import CallWords, ConversationTurn, TurnBuilder
from ...carrier import restored_blocks
from .fields import field, has
from .parts import MEDIA_KEYS, media_block, text_of_part

__all__ = ["ContentsReader"]

trace = logging.getLogger("hydra_proxy.continuation")

CALL_WORDS = CallWords(
    no_id="required: the id or name of the functionCall it answers",
    repeated="answers this functionCall a second time",
    stray="does not answer a functionCall of the preceding model turn",
    unanswered="functionCall {call_id!r} has no functionResponse answering it "
    "(each call needs its response in the next user turn)",
)
_USER_ROLES = (None, "user", "function")


class ContentsReader(TurnBuilder):
    """Reads the contents in order into system texts and turns (`finish` merges them)."""

    conversation_field = "contents"
    system_separator = "\n\n"

    def __init__(self, key: bytes | None) -> None:
        super().__init__(CALL_WORDS)
        self.key = key
        self.skipped = 0  # thought signatures that were not a valid carrier
        self.calls: list[tuple[str, str]] = []  # (call key, name) of the latest model turn

    def add_system(self, value: Any) -> None:
        if value is None:
            return
        if isinstance(value, str):
            texts = [value]
        elif isinstance(value, dict):
            texts = []
            for path, part in each_object(value.get("parts"), "systemInstruction.parts"):
                text = text_of_part(part, path)
                if text is None:
                    raise bad(path, "a system instruction holds text parts only")
                texts.append(text)
        else:
            raise bad("systemInstruction", f"must be a Content object, got {type_name(value)}")
        self.system.extend(text for text in texts if text.strip())

    def add_contents(self, value: Any) -> None:
        if value is None:
            raise bad("contents", "required: an array of Content objects")
        if not isinstance(value, list) or not value:
            raise bad("contents", "must be a non-empty array of Content objects")
        for path, content in each_object(value, "contents"):
            role = content.get("role")
            if role == "model":
                self._model(content, path)
            elif role in _USER_ROLES:
                self._user(content, path)
            else:
                raise bad(f"{path}.role", f"unknown role {role!r}; expected user or model")
        self.check_answered()

    def _parts(self, content: dict[str, Any], path: str) -> Any:
        return each_object(content.get("parts"), f"{path}.parts")

    def _model(self, content: dict[str, Any], path: str) -> None:
        self.begin_assistant_turn()
        self.calls = []
        turn = ConversationTurn("assistant")
        self.turns.append(turn)
        for ppath, part in self._parts(content, path):
            if has(part, "thoughtSignature"):
                self._restore(field(part, "thoughtSignature"), f"{ppath}.thoughtSignature", turn)
            if part.get("thought") is True:
                continue  # a reasoning summary: not sent back
            call = field(part, "functionCall")
            if call is not None:
                self._call(call, f"{ppath}.functionCall", turn)
                continue
            if has(part, "functionResponse"):
                raise bad(f"{ppath}.functionResponse", "belongs in a user turn")
            text = text_of_part(part, ppath)
            if text is not None:
                if text.strip():
                    turn.blocks.append({"type": "text", "text": text})
                continue
            if any(has(part, key) for key in MEDIA_KEYS):
                raise bad(ppath, "a model turn cannot hold media parts here")
            if not has(part, "thoughtSignature"):
                raise bad(ppath, "a part needs text, functionCall or inlineData")

    def _restore(self, signature: Any, path: str, turn: ConversationTurn) -> None:
        if not isinstance(signature, str):
            raise bad(path, f"must be a string, got {type_name(signature)}")
        blocks = restored_blocks(signature, self.key)
        if blocks is None:
            self.skipped += 1
            trace.debug("%s: thought signature not made by this proxy, dropped", path)
            return
        turn.blocks.extend(blocks)

    def _call(self, call: Any, path: str, turn: ConversationTurn) -> None:
        if not isinstance(call, dict):
            raise bad(path, f"must be an object, got {type_name(call)}")
        name = tool_name(call.get("name"), path)
        call_id = call.get("id")
        if call_id is not None and (not isinstance(call_id, str) or not call_id):
            raise bad(f"{path}.id", "must be a non-empty string")
        if call_id is not None and call_id in self.pending:
            raise bad(f"{path}.id", f"duplicate functionCall id {call_id!r}")
        key = call_id if call_id is not None else f"{path}#{name}"  # hashed: no id chars
        args = call.get("args")
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise bad(f"{path}.args", f"must be an object, got {type_name(args)}")
        sent = self.open_call(key, f"{path}.id" if call_id is not None else f"{path}.name", path)
        self.calls.append((key, name))
        turn.blocks.append({"type": "tool_use", "id": sent, "name": name, "input": args})

    def _user(self, content: dict[str, Any], path: str) -> None:
        for ppath, part in self._parts(content, path):
            if has(part, "functionResponse"):
                self._response(field(part, "functionResponse"), f"{ppath}.functionResponse")
                continue
            if has(part, "functionCall"):
                raise bad(f"{ppath}.functionCall", "belongs in a model turn")
            if part.get("thought") is True:
                continue
            block = self._user_block(part, ppath)
            if block is not None:
                self.user_turn().blocks.append(block)

    def _user_block(self, part: dict[str, Any], path: str) -> Block | None:
        text = text_of_part(part, path)
        if text is not None:
            return {"type": "text", "text": text} if text.strip() else None
        block = media_block(part, path)
        if block is None and not has(part, "thoughtSignature"):
            raise bad(path, "a part needs text, inlineData, fileData or functionResponse")
        return block

    def _response(self, answer: Any, path: str) -> None:
        if not isinstance(answer, dict):
            raise bad(path, f"must be an object, got {type_name(answer)}")
        name = answer.get("name")
        call_id = answer.get("id")
        key: str | None
        if isinstance(call_id, str) and call_id in self.pending:
            key, field = call_id, "id"
        else:
            key = next((k for k, n in self.calls if n == name and k in self.pending), None)
            field = "name"
        if key is None:
            if not call_id and (not isinstance(name, str) or not name):
                raise bad(f"{path}.name", CALL_WORDS.no_id)
            field = "id" if call_id else "name"
            raise bad(f"{path}.{field}", f"{call_id or name!r} {CALL_WORDS.stray}")
        sent = self.answer_call(key, path, field)
        result: Block = {"type": "tool_result", "tool_use_id": sent}
        text, is_error = _response_text(answer.get("response"), f"{path}.response")
        media = [
            block
            for ppath, part in each_object(answer.get("parts") or [], f"{path}.parts")
            if (block := media_block(part, ppath)) is not None
        ]
        if media:
            result["content"] = ([{"type": "text", "text": text}] if text else []) + media
        elif text:
            result["content"] = text
        if is_error:
            result["is_error"] = True
        self.user_turn().results.append(result)


def _response_text(response: Any, path: str) -> tuple[str, bool]:
    """(text, is an error) of a functionResponse's ``response``."""
    if response is None:
        return "", False
    if not isinstance(response, dict):
        raise bad(path, f"must be an object, got {type_name(response)}")
    if len(response) == 1:
        ((key, value),) = response.items()
        if key in ("output", "error") and isinstance(value, str):
            return value, key == "error"
    return orjson.dumps(response).decode("utf-8"), False
