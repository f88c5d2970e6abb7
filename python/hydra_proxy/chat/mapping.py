"""Chat Completions <-> canonical (Anthropic) field mappings, one definition each.

Shared by the request writer, both response translations and the messages_via_chat stream
transducer (through `messages_via_chat.mapping`). The native transducers
(rust/src/messages_via_chat/, rust/src/chat_via_messages/) implement the same tables.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = [
    "FINISH_REASONS",
    "RAW_ARGUMENTS_KEY",
    "anthropic_usage",
    "chat_usage",
    "finish_reason",
    "input_tokens",
    "stop_reason",
    "tool_arguments",
    "tool_input_from_arguments",
]

# ------------------------------------------------------------------ stop / finish reasons

# OpenAI finish_reason -> Anthropic stop_reason.
_STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}

# Anthropic stop_reason -> Chat finish_reason.
FINISH_REASONS: dict[str, str] = {
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
    mapped = _STOP_REASONS.get(finish_reason or "stop", "end_turn")
    if has_tool_calls and mapped == "end_turn":
        return "tool_use"
    return mapped


def finish_reason(stop_reason: Any) -> str:
    """The Chat `finish_reason` for an Anthropic `stop_reason` (unknown or missing: stop)."""
    if isinstance(stop_reason, str):
        return FINISH_REASONS.get(stop_reason, "stop")
    return "stop"


# --------------------------------------------------------------------------------- usage


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


# ------------------------------------------------------------------------ tool arguments

# The key under which unparseable tool call arguments are kept (see below).
RAW_ARGUMENTS_KEY = "_raw_arguments"


def tool_arguments(value: Any) -> str:
    """A tool_use `input` as the compact JSON string Chat carries in `arguments`."""
    if value is None or value == {}:
        return "{}"
    try:
        return orjson.dumps(value).decode("utf-8")
    except TypeError:  # orjson refuses integers beyond 64 bits
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def tool_input_from_arguments(arguments: Any) -> dict[str, Any]:
    """A tool call's `arguments` (normally a JSON string) as an Anthropic `input` object.

    A JSON object string -> that object; empty, missing, ``null`` or ``"null"`` -> ``{}``;
    an object given directly (some servers) -> as is; a JSON string that itself holds an
    object (double-encoded, some servers) -> that object; anything else (invalid JSON,
    truncated at max_tokens, a non-object) -> ``{RAW_ARGUMENTS_KEY: "<the raw text>"}``,
    so nothing is lost: the client's tool validation reports the problem to the model,
    which sees its own arguments and can retry.
    """
    if arguments is None:
        return {}
    if isinstance(arguments, dict):
        return arguments
    if not isinstance(arguments, str):
        return {RAW_ARGUMENTS_KEY: orjson.dumps(arguments).decode("utf-8")}
    if not arguments.strip():
        return {}
    try:
        value = orjson.loads(arguments)
        if isinstance(value, str):
            value = orjson.loads(value)
    except orjson.JSONDecodeError:
        return {RAW_ARGUMENTS_KEY: arguments}
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    return {RAW_ARGUMENTS_KEY: arguments}
