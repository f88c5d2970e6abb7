"""Chat <-> Anthropic field mappings (twin of rust/src/chat/mapping.rs): the one definition
of each table, for both directions, streamed and not; and the usage objects of the
non-streamed replies (the stream encoders and decoders carry the same counts field by
field)."""

from __future__ import annotations

from typing import Any

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


def anthropic_usage(usage: Any) -> dict[str, int]:
    """Anthropic `usage` for a Chat usage object.

    ``input_tokens = prompt_tokens - cached_tokens``, ``cache_read_input_tokens =
    cached_tokens`` (``prompt_tokens_details.cached_tokens``, else DeepSeek's
    ``prompt_cache_hit_tokens``), ``cache_creation_input_tokens = 0``; missing usage -> 0s.
    """
    if not isinstance(usage, dict):
        usage = {}
    prompt = _chat_count(usage.get("prompt_tokens"))
    details = usage.get("prompt_tokens_details")
    cached = _chat_count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    if not cached:
        cached = _chat_count(usage.get("prompt_cache_hit_tokens"))
    cached = min(cached, prompt) if prompt else cached
    return {
        "input_tokens": input_tokens(prompt, cached),
        "output_tokens": _chat_count(usage.get("completion_tokens")),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
    }


def chat_usage(usage: Any) -> dict[str, Any]:
    """Chat `usage` for an Anthropic usage object (cache reads and writes are prompt tokens)."""
    if not isinstance(usage, dict):
        usage = {}
    cache_read = _anthropic_count(usage, "cache_read_input_tokens")
    prompt = (
        _anthropic_count(usage, "input_tokens")
        + cache_read
        + _anthropic_count(usage, "cache_creation_input_tokens")
    )
    completion = _anthropic_count(usage, "output_tokens")
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cache_read},
    }


def _chat_count(value: Any) -> int:
    """A Chat token count: a number, floored at 0 (some servers send floats); else 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return max(value, 0)
    if isinstance(value, float):
        return max(int(value), 0)
    return 0


def _anthropic_count(usage: dict[str, Any], name: str) -> int:
    value = usage.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return value
