"""Thinking -> Chat reasoning: ``reasoning_effort`` and replayed ``reasoning_content``.

Reasoning effort (only for ``target.reasoning``): ``thinking.type == "disabled"`` -> no
``reasoning_effort``; else ``output_config.effort`` (low/medium/high; xhigh/max -> high)
wins; else ``thinking.budget_tokens`` (<=4096 low, <=16384 medium, above high); adaptive
thinking without an effort sends nothing (upstream default).

Replay: a ``thinking`` block whose signature is this proxy's signature of exactly that
text, sent to a ``replay_reasoning`` target -> ``reasoning_content`` (`replayed_reasoning`);
any other thinking and all ``redacted_thinking`` are dropped, never turned into text.
"""

from __future__ import annotations

from typing import Any

from ....signature import verify_thinking

__all__ = ["reasoning_effort", "replayed_reasoning"]


def replayed_reasoning(block: dict[str, Any], signing_key: bytes) -> str | None:
    """The text of a thinking block this proxy signed (None: not ours, or edited)."""
    thinking = block.get("thinking")
    signature = block.get("signature")
    if (
        isinstance(thinking, str)
        and isinstance(signature, str)
        and verify_thinking(thinking, signature, signing_key)
    ):
        return thinking
    return None


_EFFORTS = {"low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}


def reasoning_effort(body: dict[str, Any]) -> str | None:
    thinking = body.get("thinking")
    thinking_type = thinking.get("type") if isinstance(thinking, dict) else None
    if thinking_type == "disabled":
        return None
    output_config = body.get("output_config")
    effort = output_config.get("effort") if isinstance(output_config, dict) else None
    if isinstance(effort, str) and effort in _EFFORTS:
        return _EFFORTS[effort]
    if thinking_type == "enabled" and isinstance(thinking, dict):
        budget = thinking.get("budget_tokens")
        if isinstance(budget, int) and not isinstance(budget, bool):
            if budget <= 4096:
                return "low"
            if budget <= 16384:
                return "medium"
            return "high"
    return None
