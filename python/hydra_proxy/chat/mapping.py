"""Chat <-> Anthropic field mappings (twin of rust/src/chat/mapping.rs): the one definition
of each table, for both directions, streamed and not."""

from __future__ import annotations

# OpenAI finish_reason -> Anthropic stop_reason (anything else: "end_turn").
STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}

# Anthropic stop_reason -> OpenAI finish_reason (anything else: "stop").
FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


def stop_reason(finish_reason: str | None, has_tool_calls: bool) -> str:
    """Anthropic stop_reason for an OpenAI finish_reason.

    Some upstreams (older Ollama, some vLLM builds) end a tool-calling turn with "stop";
    Claude Code only runs tools on "tool_use", so tool calls win over a plain stop.
    """
    mapped = STOP_REASONS.get(finish_reason or "stop", "end_turn")
    if has_tool_calls and mapped == "end_turn":
        return "tool_use"
    return mapped


def finish_reason(stop_reason: str | None) -> str:
    """OpenAI finish_reason for an Anthropic stop_reason."""
    return FINISH_REASONS.get(stop_reason or "end_turn", "stop")


def input_tokens(prompt_tokens: int, cached_tokens: int) -> int:
    """OpenAI prompt_tokens include cached tokens; Anthropic input_tokens exclude them."""
    return max(prompt_tokens - cached_tokens, 0)
