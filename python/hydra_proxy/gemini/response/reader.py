"""The Gemini response reader: a ``GenerateContentResponse`` (non-streamed) -> the
canonical Anthropic ``Message``.

Pure translation, no I/O. Decisions (all covered by tests):

- Only ``candidates[0]`` is read (the request never asks for more). A body with an
  ``error`` object raises the `ProxyError` of hydra_proxy.gemini.errors; no candidate and
  a ``promptFeedback.blockReason`` (the prompt itself was blocked) -> an empty ``refusal``
  message; no candidate otherwise -> 500 ``api_error`` (clients retry).
- Parts in order: ``thought: true`` parts -> thinking text; a ``thoughtSignature`` (on any
  part) closes the thinking gathered so far into ONE thinking block that carries the
  signature (hydra_proxy.gemini.thought_signature), placed before the block of the part
  that carried it. Thinking with no signature after it is signed with the proxy's
  reasoning-text signature (`signature.sign_thinking`, ``""`` without a key) so Claude
  Code keeps it in history. ``text`` parts -> one text block each (whitespace-only text
  makes none); ``functionCall`` -> ``tool_use`` with ``args`` as ``input`` (missing ->
  ``{}``; a non-object -> ``{RAW_ARGUMENTS_KEY: json}``); ``executableCode`` /
  ``codeExecutionResult`` -> text; ``inlineData``/``fileData`` (model output media an
  Anthropic message cannot hold) -> a text note naming the MIME type.
- Tool ids: Gemini's ``functionCall.id`` when it is a valid Anthropic id, else
  `canonical.message.tool_use_id` (message id + the part's index): the same reply always gets the same ids.
- ``stop_reason`` and ``usage`` from hydra_proxy.gemini.mapping (the table the stream
  decoder uses); the finish reasons that mean a lost tool call raise its error.
  ``stop_sequence`` is null (Gemini does not say which one matched).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from ...canonical.message import anthropic_message, not_an_object, tool_use_id
from ...canonical.tools import RAW_ARGUMENTS_KEY
from ...errors import ProxyError
from ...signature import sign_thinking
from ..errors import gemini_error
from ..mapping import finish_error, stop_reason, usage
from ..thought_signature import thought_signature_block

__all__ = ["message_from_gemini_response"]

_ANTHROPIC_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def message_from_gemini_response(
    response: dict[str, Any], *, message_id: str, model: str, signing_key: bytes = b""
) -> dict[str, Any]:
    """Translate a non-streamed Gemini response into an Anthropic Message."""
    if not isinstance(response, dict):
        raise not_an_object("Gemini")
    if isinstance(response.get("error"), dict):
        code = response["error"].get("code")
        status = code if isinstance(code, int) and 400 <= code <= 599 else 500
        raise gemini_error(status, response)
    candidates = response.get("candidates")
    candidate = candidates[0] if isinstance(candidates, list) and candidates else None
    if not isinstance(candidate, dict):
        feedback = response.get("promptFeedback")
        if isinstance(feedback, dict) and feedback.get("blockReason"):
            return _message(message_id, model, [], "refusal", response)
        raise ProxyError(500, "Gemini response has no candidates", error_type="api_error")

    finish = candidate.get("finishReason")
    finish = finish if isinstance(finish, str) else None
    message = candidate.get("finishMessage")
    error = finish_error(finish, message if isinstance(message, str) else None)
    if error is not None:
        raise error

    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    blocks = _blocks(parts if isinstance(parts, list) else [], message_id, signing_key)
    has_calls = any(block["type"] == "tool_use" for block in blocks)
    return _message(message_id, model, blocks, stop_reason(finish, has_calls), response)


def _message(
    message_id: str, model: str, blocks: list[dict[str, Any]], stop: str, response: dict[str, Any]
) -> dict[str, Any]:
    return anthropic_message(message_id, model, blocks, stop, usage(response.get("usageMetadata")))


def _blocks(parts: list[Any], message_id: str, key: bytes) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    thoughts: list[str] = []

    def close_thinking(signature: str | None) -> None:
        text = "".join(thoughts)
        thoughts.clear()
        if signature is not None:
            block = thought_signature_block(signature, key, text)
            if block is not None:
                blocks.append(block)
                return
        if text.strip():
            blocks.append(
                {
                    "type": "thinking",
                    "thinking": text,
                    "signature": sign_thinking(text, key) if key else "",
                }
            )

    for index, part in enumerate(parts):
        if not isinstance(part, dict):
            continue
        raw_signature = part.get("thoughtSignature")
        signature = raw_signature if isinstance(raw_signature, str) and raw_signature else None
        if part.get("thought") is True:
            text = part.get("text")
            if isinstance(text, str):
                thoughts.append(text)
            if signature is not None:
                close_thinking(signature)
            continue
        if signature is not None or thoughts:
            close_thinking(signature)
        block = _part_block(part, index, message_id)
        if block is not None:
            blocks.append(block)
    close_thinking(None)
    return blocks


def _part_block(part: dict[str, Any], index: int, message_id: str) -> dict[str, Any] | None:
    call = part.get("functionCall")
    if isinstance(call, dict):
        call_id = call.get("id")
        if not isinstance(call_id, str) or not _ANTHROPIC_ID.fullmatch(call_id):
            call_id = tool_use_id(message_id, index)
        name = call.get("name")
        args = call.get("args")
        if args is None:
            args = {}
        elif not isinstance(args, dict):
            args = {RAW_ARGUMENTS_KEY: orjson.dumps(args).decode("utf-8")}
        return {
            "type": "tool_use",
            "id": call_id,
            "name": name if isinstance(name, str) else "",
            "input": args,
        }
    text = part.get("text")
    if isinstance(text, str):
        return {"type": "text", "text": text} if text.strip() else None
    code = part.get("executableCode")
    if isinstance(code, dict) and isinstance(code.get("code"), str):
        language = code.get("language")
        fence = (
            language.lower()
            if isinstance(language, str) and language != "LANGUAGE_UNSPECIFIED"
            else ""
        )
        return {"type": "text", "text": f"```{fence}\n{code['code']}\n```"}
    result = part.get("codeExecutionResult")
    if isinstance(result, dict) and isinstance(result.get("output"), str):
        return {"type": "text", "text": result["output"]}
    for key in ("inlineData", "fileData"):
        media = part.get(key)
        if isinstance(media, dict):
            mime = media.get("mimeType")
            kind = mime if isinstance(mime, str) and mime else "media"
            return {
                "type": "text",
                "text": f"[Gemini returned {kind} output, which is not shown here.]",
            }
    return None
