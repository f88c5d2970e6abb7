"""Field mappings shared by the streaming transducer and the non-streaming translation.

The native transducer (rust/src/messages_via_chat/) implements the same tables.
"""

from __future__ import annotations

# OpenAI finish_reason -> Anthropic stop_reason.
_STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


def stop_reason(finish_reason: str | None, has_tool_calls: bool) -> str:
    """Anthropic stop_reason for an OpenAI finish_reason.

    Some upstreams (older Ollama, some vLLM builds) end a tool-calling turn with "stop";
    Claude Code only runs tools on "tool_use", so tool calls win over a plain stop.
    """
    mapped = _STOP_REASONS.get(finish_reason or "stop", "end_turn")
    if has_tool_calls and mapped == "end_turn":
        return "tool_use"
    return mapped


def input_tokens(prompt_tokens: int, cached_tokens: int) -> int:
    """OpenAI prompt_tokens include cached tokens; Anthropic input_tokens exclude them."""
    return max(prompt_tokens - cached_tokens, 0)
