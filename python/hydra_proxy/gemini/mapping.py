"""Gemini finish reasons and usage in Anthropic terms: ONE table for the non-streamed
reader (`response`) and the stream decoder (twin of rust/src/gemini/mapping.rs).

Finish reasons (``Candidate.finishReason``):

- ``STOP`` (and unset, ``FINISH_REASON_UNSPECIFIED``, ``OTHER``, ``LANGUAGE``, unknown
  values) -> ``end_turn``, or ``tool_use`` when the reply holds function calls: Gemini
  ends a function-calling reply with STOP, and Claude Code only runs tools on ``tool_use``.
- ``MAX_TOKENS`` -> ``max_tokens``.
- Content stopped by Google's filters (``SAFETY``, ``RECITATION``, ``BLOCKLIST``,
  ``PROHIBITED_CONTENT``, ``SPII``, ``IMAGE_SAFETY``, ``IMAGE_PROHIBITED_CONTENT``,
  ``IMAGE_RECITATION``) -> ``refusal``.
- ``MALFORMED_FUNCTION_CALL``, ``UNEXPECTED_TOOL_CALL``, ``TOO_MANY_TOOL_CALLS``: the model
  tried to call a tool and Gemini threw the call away (the reply holds no call). Decision:
  an error, not a stop reason. An ``end_turn`` would end Claude Code's agent loop with the
  leftover narration as if it were the answer; an ``api_error`` (HTTP 500 when not
  streamed, an ``error`` event in a stream) is retried by the client, and a fresh
  generation usually produces a well-formed call. The message names the finish reason and
  Gemini's ``finishMessage``.

Usage (``usageMetadata``): ``input_tokens = promptTokenCount - cachedContentTokenCount``
(Gemini's prompt count includes the cached part; Anthropic's input_tokens exclude it),
``cache_read_input_tokens = cachedContentTokenCount``, ``cache_creation_input_tokens =
0``, ``output_tokens = candidatesTokenCount + thoughtsTokenCount`` (thinking is billed as
output, as Anthropic counts it). Tool-use prompt tokens (``toolUsePromptTokenCount``, from
Gemini-run tools the proxy never requests) are not counted.
"""

from __future__ import annotations

from typing import Any

from ..errors import ProxyError

__all__ = [
    "ERROR_FINISH_REASONS",
    "REFUSAL_FINISH_REASONS",
    "anthropic_usage",
    "finish_error",
    "stop_reason",
    "usage",
]

REFUSAL_FINISH_REASONS = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
ERROR_FINISH_REASONS = frozenset(
    {"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"}
)


def stop_reason(finish_reason: str | None, has_tool_calls: bool) -> str:
    """The Anthropic stop_reason for a Gemini finishReason (not one of ERROR_FINISH_REASONS)."""
    if finish_reason == "MAX_TOKENS":
        return "max_tokens"
    if finish_reason in REFUSAL_FINISH_REASONS:
        return "refusal"
    return "tool_use" if has_tool_calls else "end_turn"


def finish_error(finish_reason: str | None, finish_message: str | None = None) -> ProxyError | None:
    """The error for a finishReason that means "the tool call was lost", else None."""
    if finish_reason not in ERROR_FINISH_REASONS:
        return None
    message = f"Gemini discarded the model's tool call (finishReason {finish_reason})"
    if finish_message:
        message += f": {finish_message}"
    return ProxyError(500, message + "; retrying the request usually helps", error_type="api_error")


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0
    return max(int(value), 0)


def usage(usage_metadata: Any) -> dict[str, int]:
    """Anthropic usage for a Gemini usageMetadata object (missing fields count 0)."""
    meta = usage_metadata if isinstance(usage_metadata, dict) else {}
    input_tokens, output_tokens, cache_read = anthropic_usage(
        _count(meta.get("promptTokenCount")),
        _count(meta.get("cachedContentTokenCount")),
        _count(meta.get("candidatesTokenCount")),
        _count(meta.get("thoughtsTokenCount")),
    )
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cache_read,
    }


def anthropic_usage(
    prompt: int, cached: int, candidates: int, thoughts: int
) -> tuple[int, int, int]:
    """(input_tokens, output_tokens, cache_read_input_tokens) for Gemini's counts."""
    if prompt:
        cached = min(cached, prompt)
    return max(prompt - cached, 0), candidates + thoughts, cached
