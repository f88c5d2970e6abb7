"""The Chat response reader: an upstream OpenAI `chat.completion` (non-streaming) -> the
canonical Anthropic `Message` (a Chat upstream's reply, for any client).

Pure translation, no I/O. Decisions (all covered by tests):

- Only ``choices[0]`` is used (the request never asks for ``n > 1``). A body with an
  ``error`` object (OpenRouter and others report failures inside a 200) raises
  `ProxyError` with the Anthropic error type for its code/type; a body without choices
  raises a 500 ``api_error`` (clients retry).
- Content order is Anthropic's: ``thinking`` (from ``reasoning_content``, else
  ``reasoning``), then ``text``, then one ``tool_use`` per tool call.
- The thinking block is signed with `signature.sign_thinking` whenever ``signing_key`` is
  set, whether or not the route replays reasoning: the signature marks the block as made
  by this proxy, so a replay to a ``replay_reasoning`` target can restore it and the
  Anthropic passthrough can recognise and strip it. Without a key the signature is ``""``.
  ``replay_reasoning`` is accepted for symmetry with `ChatTarget` and does not change the
  output.
- Empty or whitespace-only text and reasoning produce no block (Anthropic rejects
  whitespace-only text blocks when Claude Code replays them). ``content`` given as a list
  of parts is joined. A refusal (``message.refusal``) is shown as the text when there is
  no content; the stop reason still follows ``finish_reason`` (an OpenAI refusal is the
  model's answer, not Anthropic's policy-classifier ``refusal``).
- Tool call ``arguments`` -> ``input`` by `canonical.tools.tool_input_from_arguments` (nothing is
  lost: what does not parse is kept under ``RAW_ARGUMENTS_KEY``). A call without an id
  gets ``toolu_<message id>_<n>``. The legacy ``function_call`` field is read too.
- ``stop_reason`` from `mapping.stop_reason` (tool calls win over a plain stop);
  ``stop_sequence`` is always present and null (Chat does not say which stop matched).
- Usage by `usage.anthropic_usage`: ``input_tokens = prompt_tokens - cached_tokens``,
  ``cache_read_input_tokens = cached_tokens``, ``cache_creation_input_tokens = 0``.
"""

from __future__ import annotations

from typing import Any

from ...canonical.message import anthropic_message, not_an_object, tool_use_id
from ...canonical.tools import tool_input_from_arguments
from ...errors import ProxyError, anthropic_error_type, status_for_anthropic_type
from ...signature import sign_thinking
from ..mapping import anthropic_usage, stop_reason

__all__ = ["message_from_chat_completion"]


def message_from_chat_completion(
    completion: dict[str, Any],
    *,
    message_id: str,
    model: str,
    signing_key: bytes = b"",
    replay_reasoning: bool = False,
) -> dict[str, Any]:
    """Translate a non-streaming Chat completion into an Anthropic Message."""
    del replay_reasoning  # signing does not depend on it; see the module docstring
    if not isinstance(completion, dict):
        raise not_an_object()
    error = completion.get("error")
    if error is not None:
        raise _upstream_error(error)
    choices = completion.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ProxyError(500, "upstream response has no choices", error_type="api_error")
    choice = choices[0]
    reply = choice.get("message")
    if not isinstance(reply, dict):
        reply = {}

    content: list[dict[str, Any]] = []
    reasoning = _reasoning(reply)
    if reasoning:
        signature = sign_thinking(reasoning, signing_key) if signing_key else ""
        content.append({"type": "thinking", "thinking": reasoning, "signature": signature})
    text = _text(reply.get("content"))
    if not text.strip():
        refusal = reply.get("refusal")
        text = refusal if isinstance(refusal, str) else ""
    if text.strip():
        content.append({"type": "text", "text": text})
    for n, (call_id, name, arguments) in enumerate(_tool_calls(reply)):
        content.append(
            {
                "type": "tool_use",
                "id": call_id or tool_use_id(message_id, n),
                "name": name,
                "input": tool_input_from_arguments(arguments),
            }
        )

    has_tool_calls = any(block["type"] == "tool_use" for block in content)
    finish = choice.get("finish_reason")
    return anthropic_message(
        message_id,
        model,
        content,
        stop_reason(finish if isinstance(finish, str) else None, has_tool_calls),
        anthropic_usage(completion.get("usage")),
    )


def _upstream_error(error: Any) -> ProxyError:
    if isinstance(error, dict):
        message = error.get("message")
        code = error.get("code")
        kind = error.get("type")
        status = code if isinstance(code, int) and not isinstance(code, bool) else None
        if status is not None and not 400 <= status <= 599:
            status = None
        if not isinstance(kind, str):
            kind = code if isinstance(code, str) else None
        error_type = anthropic_error_type(status, kind)
        text = message if isinstance(message, str) and message else "upstream error"
    else:
        error_type = "api_error"
        text = error if isinstance(error, str) and error else "upstream error"
    return ProxyError(status_for_anthropic_type(error_type), text, error_type=error_type)


def _reasoning(message: dict[str, Any]) -> str:
    for key in ("reasoning_content", "reasoning"):
        value = message.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return ""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def _tool_calls(message: dict[str, Any]) -> list[tuple[str, str, Any]]:
    calls: list[tuple[str, str, Any]] = []
    raw = message.get("tool_calls")
    if isinstance(raw, list):
        for call in raw:
            if not isinstance(call, dict):
                continue
            function = call.get("function")
            if not isinstance(function, dict):
                function = {}
            call_id = call.get("id")
            name = function.get("name")
            calls.append(
                (
                    call_id if isinstance(call_id, str) else "",
                    name if isinstance(name, str) else "",
                    function.get("arguments"),
                )
            )
    legacy = message.get("function_call")
    if not calls and isinstance(legacy, dict):
        name = legacy.get("name")
        calls.append(("", name if isinstance(name, str) else "", legacy.get("arguments")))
    return calls
