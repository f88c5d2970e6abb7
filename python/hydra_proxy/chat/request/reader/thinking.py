"""Thinking: ``reasoning_effort`` and Anthropic's own ``thinking`` -> ``thinking``.

``reasoning_effort`` is one of none, minimal, low, medium, high, xhigh, max; an
Anthropic-native ``thinking`` object (sent through the SDKs' ``extra_body``) wins over it.
How efforts and budgets map, and how the budget is fitted under ``max_tokens``, is
`canonical.thinking`'s, the same for every client protocol.
"""

from __future__ import annotations

from typing import Any

from ....canonical.target import MessagesTarget
from ....canonical.thinking import check_effort, requested_thinking

__all__ = ["read_thinking"]


def read_thinking(
    body: dict[str, Any], target: MessagesTarget
) -> tuple[dict[str, Any] | None, str | None]:
    """The requested `thinking` config (before tool-loop checks) and the effort name."""
    effort = body.get("reasoning_effort")
    check_effort(effort, "reasoning_effort")
    return requested_thinking(effort, body.get("thinking"), target)
