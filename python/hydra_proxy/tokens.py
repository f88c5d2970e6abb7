"""Input-token estimates for Anthropic requests (message_start usage, count_tokens).

A first approximation: about four characters a token over every text the model sees
(system, messages, tool definitions), never zero.
"""

from __future__ import annotations

from typing import Any

import orjson


def _text_size(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_text_size(item) for item in value)
    if isinstance(value, dict):
        if value.get("type") == "image":
            return 1600 * 4  # a typical image is about 1,600 tokens
        return sum(_text_size(v) for k, v in value.items() if k not in ("cache_control", "type"))
    return 0


def estimate_input_tokens(body: dict[str, Any]) -> int:
    size = _text_size(body.get("system")) + _text_size(body.get("messages"))
    tools = body.get("tools")
    if tools:
        size += len(orjson.dumps(tools))
    return max(1, size // 4)
