"""The Gemini response writer: the canonical Message -> a ``GenerateContentResponse``
(non-streamed), with the stream encoder's decisions (hydra_proxy.gemini.encoder), so a
streamed and a non-streamed reply say the same:

thinking -> a ``thought: true`` text part (unless the client asked for no thoughts); the
signed and redacted thinking -> the ``thoughtSignature`` carrier on the next part (the
final empty text part when none follows); text -> ``text``; ``tool_use`` ->
``functionCall {id, name, args}``; server-tool blocks have no Gemini form. The
``finishReason`` and ``usageMetadata`` as `gemini.output` writes them; ``modelVersion``
is the model the client asked for, ``responseId`` the proxy's.
"""

from __future__ import annotations

from typing import Any

from ... import continuation
from ..carrier import thought_signature
from ..output import finish_reason

__all__ = ["gemini_response_from_message"]


def gemini_response_from_message(
    message: dict[str, Any],
    *,
    response_id: str,
    model: str,
    include_thoughts: bool = True,
    signing_key: bytes | None = None,
) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    replay: list[continuation.Block] = []

    def signed(part: dict[str, Any]) -> dict[str, Any]:
        if replay:
            if signing_key:
                part["thoughtSignature"] = thought_signature(list(replay), signing_key)
            replay.clear()
        return part

    for block in message.get("content") or ():
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "thinking":
            thinking = block.get("thinking")
            text = thinking if isinstance(thinking, str) else ""
            if include_thoughts and text:
                parts.append({"text": text, "thought": True})
            signature = block.get("signature")
            if isinstance(signature, str) and signature:
                replay.append(continuation.ThinkingBlock(text, signature))
        elif btype == "redacted_thinking" and isinstance(block.get("data"), str):
            replay.append(continuation.RedactedBlock(block["data"]))
        elif btype == "text" and isinstance(block.get("text"), str):
            parts.append(signed({"text": block["text"]}))
        elif btype == "tool_use":
            args = block.get("input")
            call = {"id": block.get("id"), "name": block.get("name"), "args": args or {}}
            parts.append(signed({"functionCall": call}))
    if replay or not parts:
        parts.append(signed({"text": ""}))
    return {
        "candidates": [
            {
                "content": {"parts": parts, "role": "model"},
                "finishReason": finish_reason(message.get("stop_reason")),
                "index": 0,
            }
        ],
        "usageMetadata": _usage_metadata(message.get("usage")),
        "modelVersion": model,
        "responseId": response_id,
    }


def _usage_metadata(found: Any) -> dict[str, int]:
    """A Message's usage as Gemini counts it: the prompt holds the cached and cache-written
    tokens that Anthropic's input leaves out."""
    usage: dict[str, Any] = found if isinstance(found, dict) else {}
    cached = _count(usage, "cache_read_input_tokens")
    prompt = _count(usage, "input_tokens") + cached + _count(usage, "cache_creation_input_tokens")
    output = _count(usage, "output_tokens")
    metadata: dict[str, int] = {"promptTokenCount": prompt, "candidatesTokenCount": output}
    if cached:
        metadata["cachedContentTokenCount"] = cached
    metadata["totalTokenCount"] = prompt + output
    return metadata


def _count(usage: dict[str, Any], name: str) -> int:
    value = usage.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
