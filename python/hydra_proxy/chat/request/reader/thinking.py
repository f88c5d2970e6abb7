"""Thinking, however a Chat client asks for it -> ``thinking``.

Chat has no one field for it; clients use four, read in this order (the first that says
something wins; an effort named elsewhere still sets the budget):

- ``thinking``: Anthropic's own object (sent through the SDKs' ``extra_body``; Z.AI and
  DeepSeek clients send ``{"type": "enabled"}`` without a budget).
- ``reasoning``: OpenRouter's object (Qwen Code, OpenRouter-style clients): ``effort``
  (none..max, as ``reasoning_effort``), ``max_tokens`` (the budget, raised to Anthropic's
  1024 minimum), ``enabled`` (false: off; true or an empty object: on, at the effort's
  budget, else medium's), ``exclude`` (true: Claude thinks, but the reasoning is not shown:
  ``display: "omitted"``).
- ``reasoning_effort``: none, minimal, low, medium, high, xhigh, max.
- ``enable_thinking`` (Qwen's switch; also inside ``chat_template_kwargs``): true turns
  thinking on (medium unless an effort is named), false off.

How efforts and budgets map, and how the budget is fitted under ``max_tokens``, is
`canonical.thinking`'s, the same for every client protocol.
"""

from __future__ import annotations

from typing import Any

from ....canonical.fields import bad, is_int, type_name
from ....canonical.target import MessagesTarget
from ....canonical.thinking import (
    EFFORTS_OFF,
    MIN_THINKING_BUDGET,
    check_effort,
    requested_thinking,
)

__all__ = ["read_thinking"]


def read_thinking(
    body: dict[str, Any], target: MessagesTarget
) -> tuple[dict[str, Any] | None, str | None]:
    """The requested `thinking` config (before tool-loop checks) and the effort name."""
    effort = body.get("reasoning_effort")
    check_effort(effort, "reasoning_effort")
    native = body.get("thinking")
    if native is None:
        native, effort = _openrouter(body.get("reasoning"), effort)
    if native is None and effort is None:
        switch = _enable_thinking(body)
        if switch is not None:
            native = {"type": "enabled"} if switch else {"type": "disabled"}
    return requested_thinking(effort, native, target)


def _openrouter(value: Any, effort: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """OpenRouter's `reasoning` object, read as (a native `thinking`, the effort)."""
    if value is None:
        return None, effort
    if not isinstance(value, dict):
        raise bad("reasoning", f"must be an object, got {type_name(value)}")
    asked = value.get("effort")
    check_effort(asked, "reasoning.effort")
    effort = asked if asked is not None else effort
    budget = value.get("max_tokens")
    if budget is not None and (not is_int(budget) or budget < 0):
        raise bad("reasoning.max_tokens", f"must be a non-negative integer, got {budget!r}")
    flags = {}
    for name in ("enabled", "exclude"):
        flag = value.get(name)
        if flag is not None and not isinstance(flag, bool):
            raise bad(f"reasoning.{name}", f"must be a boolean, got {type_name(flag)}")
        flags[name] = flag
    if flags["enabled"] is False or effort in EFFORTS_OFF or budget == 0:
        return {"type": "disabled"}, None
    thinking: dict[str, Any] = {"type": "enabled"}
    if budget is not None:
        thinking["budget_tokens"] = max(budget, MIN_THINKING_BUDGET)
    if flags["exclude"]:
        thinking["display"] = "omitted"
    return thinking, effort


def _enable_thinking(body: dict[str, Any]) -> bool | None:
    """Qwen's thinking switch, top level or inside ``chat_template_kwargs``."""
    if "enable_thinking" not in body and "chat_template_kwargs" not in body:
        return None
    kwargs = body.get("chat_template_kwargs")
    for value, path in (
        (body.get("enable_thinking"), "enable_thinking"),
        (kwargs.get("enable_thinking") if isinstance(kwargs, dict) else None,
         "chat_template_kwargs.enable_thinking"),
    ):  # fmt: skip
        if value is not None:
            if not isinstance(value, bool):
                raise bad(path, f"must be a boolean, got {type_name(value)}")
            return value
    return None
