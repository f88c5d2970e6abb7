"""Usage objects between Chat and Anthropic, for non-streamed responses (the stream
encoders and decoders carry the same counts field by field)."""

from __future__ import annotations

from typing import Any

from .mapping import input_tokens

__all__ = ["anthropic_usage", "chat_usage"]


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
