"""Read the usage block of an upstream reply into :class:`Tokens` (canonical conventions).

Anthropic already splits input from cache reads and writes. Chat Completions counts
cached tokens inside ``prompt_tokens`` (OpenAI: ``prompt_tokens_details.cached_tokens``;
DeepSeek: ``prompt_cache_hit_tokens``), so they are taken out of the input here, and its
``completion_tokens`` already include ``completion_tokens_details.reasoning_tokens``. The
Responses API does the same with ``input_tokens`` / ``output_tokens``. Gemini counts its
cache inside ``promptTokenCount`` too, but its ``candidatesTokenCount`` leaves the thoughts
out (``totalTokenCount`` = prompt + candidates + thoughts): they are added to the output.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .record import Tokens

__all__ = [
    "tokens_from_anthropic",
    "tokens_from_chat",
    "tokens_from_gemini",
    "tokens_from_responses",
]


def _int(value: Any) -> int:
    # bool is an int subclass: a stray true is not one token.
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _get(block: Any, key: str) -> Any:
    return block.get(key) if isinstance(block, Mapping) else None


def tokens_from_anthropic(usage: Mapping[str, Any]) -> Tokens:
    """A Messages ``usage`` object (message_start and message_delta usage merged)."""
    return Tokens(
        input=_int(usage.get("input_tokens")),
        output=_int(usage.get("output_tokens")),
        cache_read=_int(usage.get("cache_read_input_tokens")),
        cache_write=_int(usage.get("cache_creation_input_tokens")),
    )


def tokens_from_chat(usage: Mapping[str, Any]) -> Tokens:
    """A Chat Completions ``usage`` object (OpenAI, DeepSeek, Groq, Z.ai, OpenRouter...)."""
    prompt = _int(usage.get("prompt_tokens"))
    cached = _int(_get(usage.get("prompt_tokens_details"), "cached_tokens")) or _int(
        usage.get("prompt_cache_hit_tokens")
    )
    output = _int(usage.get("completion_tokens"))
    reasoning = _int(_get(usage.get("completion_tokens_details"), "reasoning_tokens"))
    return _with_cached(prompt, cached, output, reasoning)


def tokens_from_responses(usage: Mapping[str, Any]) -> Tokens:
    """A Responses API ``usage`` object (``response.completed``)."""
    prompt = _int(usage.get("input_tokens"))
    cached = _int(_get(usage.get("input_tokens_details"), "cached_tokens"))
    output = _int(usage.get("output_tokens"))
    reasoning = _int(_get(usage.get("output_tokens_details"), "reasoning_tokens"))
    return _with_cached(prompt, cached, output, reasoning)


def _with_cached(prompt: int, cached: int, output: int, reasoning: int) -> Tokens:
    """Tokens of a usage whose prompt count includes the cached part (OpenAI's way, and Gemini's)."""
    cached = min(cached, prompt)
    return Tokens(input=prompt - cached, output=output, cache_read=cached, reasoning=reasoning)


def tokens_from_gemini(usage: Mapping[str, Any]) -> Tokens:
    """A Gemini ``usageMetadata`` object (the last chunk's)."""
    prompt = _int(usage.get("promptTokenCount"))
    cached = _int(usage.get("cachedContentTokenCount"))
    thoughts = _int(usage.get("thoughtsTokenCount"))
    output = _int(usage.get("candidatesTokenCount")) + thoughts
    return _with_cached(prompt, cached, output, thoughts)
