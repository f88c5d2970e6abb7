"""Thinking -> Gemini ``thinkingConfig``, per the target's ``thinking`` style.

``"budget"`` (Gemini 2.5): enabled -> ``thinkingBudget = budget_tokens``; adaptive ->
``-1`` (dynamic); ``output_config.effort`` wins (`EFFORT_BUDGETS`); budgets clamped to
``max_thinking_budget``; disabled -> ``thinkingBudget = min_thinking_budget`` (0; 128 for
2.5 Pro, which cannot stop thinking).
``"level"`` (Gemini 3): the effort on the low/medium/high scale
(`canonical.thinking.thinking_effort`) -> ``thinkingLevel``, the nearest level the target
offers at or above it; adaptive -> no level (Gemini's dynamic default); disabled -> the
target's lowest level.
A route's effort (`canonical.effort`) wins over the request's: the level of its
three-level effort (none/minimal -> the lowest), or `EFFORT_BUDGETS` (none/minimal -> the
minimum budget). ``"none"``: no thinkingConfig. ``includeThoughts: true`` whenever thinking is enabled or
adaptive (the summaries become the client's thinking blocks), unless the client asked for
``display: "omitted"`` (Claude Code does on some turns): signatures still come back.
"""

from __future__ import annotations

from typing import Any

from ....canonical.thinking import EFFORTS_OFF, THREE_LEVELS, requested_effort, thinking_effort
from .target import GeminiTarget

__all__ = ["EFFORT_BUDGETS", "thinking_config"]

EFFORT_BUDGETS = {"low": 1024, "medium": 8192, "high": 24576, "xhigh": 32768, "max": 32768}
_LEVEL_ORDER = ("minimal", "low", "medium", "high")


def thinking_config(body: dict[str, Any], target: GeminiTarget) -> dict[str, Any] | None:
    if target.thinking == "none":
        return None
    thinking = body.get("thinking")
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    config: dict[str, Any] = {}
    if target.effort is not None:
        config = _route_config(target.effort, target)
    elif target.thinking == "level":
        levels = target.thinking_levels or ("low", "high")
        if kind == "disabled":
            return {"thinkingLevel": _level("minimal", levels)}
        wanted = thinking_effort(body)
        if wanted is not None:
            config["thinkingLevel"] = _level(wanted, levels)
    else:
        if kind == "disabled":
            return {"thinkingBudget": target.min_thinking_budget}
        value = _budget(body, kind, thinking)
        if value is not None and value >= 0:
            if target.max_thinking_budget is not None:
                value = min(value, target.max_thinking_budget)
            value = max(value, target.min_thinking_budget)
        if value is not None:
            config["thinkingBudget"] = value
    display = thinking.get("display") if isinstance(thinking, dict) else None
    thinks = kind in ("enabled", "adaptive") and target.effort not in EFFORTS_OFF
    if thinks and display != "omitted":
        config["includeThoughts"] = True
    return config or None


def _route_config(effort: str, target: GeminiTarget) -> dict[str, Any]:
    """A route's effort as the target's level or budget."""
    if target.thinking == "level":
        levels = target.thinking_levels or ("low", "high")
        wanted = "minimal" if effort in EFFORTS_OFF else THREE_LEVELS[effort]
        return {"thinkingLevel": _level(wanted, levels)}
    if effort in EFFORTS_OFF:
        return {"thinkingBudget": target.min_thinking_budget}
    value = EFFORT_BUDGETS[effort]
    if target.max_thinking_budget is not None:
        value = min(value, target.max_thinking_budget)
    return {"thinkingBudget": max(value, target.min_thinking_budget)}


def _budget(body: dict[str, Any], kind: Any, thinking: Any) -> int | None:
    """The thinking budget asked for (-1: dynamic; None: none said)."""
    effort = requested_effort(body)
    if effort is not None:
        return EFFORT_BUDGETS[effort]
    budget = thinking.get("budget_tokens") if isinstance(thinking, dict) else None
    if kind == "enabled" and isinstance(budget, int) and not isinstance(budget, bool):
        return budget
    if kind == "adaptive":
        return -1
    return None


def _level(wanted: str, offered: tuple[str, ...]) -> str:
    """The lowest offered level at or above `wanted` (else the highest offered)."""
    rank = _LEVEL_ORDER.index(wanted)
    available = sorted(_LEVEL_ORDER.index(x) for x in offered if x in _LEVEL_ORDER)
    for candidate in available:
        if candidate >= rank:
            return _LEVEL_ORDER[candidate]
    return _LEVEL_ORDER[available[-1]] if available else wanted
