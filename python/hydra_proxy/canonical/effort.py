"""A route's reasoning effort over the request's: which effort wins, and each upstream's form.

`asked_effort`: the effort a canonical request asks for, on the route scale (none..max):
``thinking.type == "disabled"`` -> ``none``; ``output_config.effort``; an ``enabled``
budget -> its three-level effort (`thinking.budget_effort`); else none said.

The forms (each writer asks here, so every upstream kind reads a route effort alike):

- OpenAI Chat ``reasoning_effort`` and Responses ``reasoning.effort`` (`openai_effort`):
  the effort as named, except ``max``, which OpenAI does not name: ``xhigh``.
- Anthropic (`anthropic_thinking`): ``none``/``minimal`` -> thinking ``disabled`` (and
  no ``output_config.effort``); otherwise adaptive thinking keeps its type and takes the
  effort as ``output_config.effort`` (``xhigh`` -> ``high``: Anthropic has no xhigh);
  any other request gets ``thinking: enabled`` with the effort's budget
  (`thinking.DEFAULT_THINKING_BUDGETS`), ``max_tokens`` raised to keep the answer's room
  (`thinking.fit_budget`: under the attempt's limit the budget is halved to fit, and
  thinking stays off when that leaves less than 1024), and sampling fitted to thinking (``temperature``/``top_k``
  dropped, ``top_p`` at least 0.95). Thinking is not turned on where Anthropic would
  refuse it: a forced tool choice, or a tool loop whose first assistant turn has no
  thinking block to restore (then the request goes as it is).
- Gemini: `gemini.request.writer.thinking` (levels and budgets).

The level a request asks for reaches a Chat upstream in that upstream's own form, with no
loss (`chat_effort`, by the provider's `effort_form`; the table per preset is in
docs/CONFIG.md):

- ``reasoning_effort``: the level as named, or the nearest the upstream takes
  (`effort_levels`: below it first, ``max`` is ``xhigh``), never through a budget;
- ``thinking``: DeepSeek, Z.AI and Moonshot switch thinking on or off,
  ``thinking: {"type": "enabled" | "disabled"}`` (none/minimal: off);
- ``enable_thinking``: Qwen-style, ``enable_thinking`` and, on, ``thinking_budget`` (the
  level's budget: these providers speak budgets).

`requested_level` reads the level exactly: thinking ``disabled`` -> none, else
``output_config.effort``, else a budget -> the level whose default budget covers it
(`thinking.DEFAULT_THINKING_BUDGETS`: up to 2048 low, 8192 medium, 16384 high, 32000
xhigh, above max), so the level a Chat or Responses client asked for (read as that
budget) comes back as asked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .target import MessagesTarget
from .thinking import (
    DEFAULT_THINKING_BUDGETS,
    EFFORTS_OFF,
    budget_effort,
    effort_budget,
    fit_budget,
)

__all__ = [
    "EFFORT_FORMS",
    "LEVELS",
    "anthropic_thinking",
    "asked_effort",
    "chat_effort",
    "effort_form",
    "nearest_level",
    "openai_effort",
    "requested_level",
]

_ROUTE_EFFORTS = (*EFFORTS_OFF, *DEFAULT_THINKING_BUDGETS)
LEVELS = _ROUTE_EFFORTS  # none, minimal, low, medium, high, xhigh, max: weakest first
# How a Chat upstream takes an effort (a provider's `effort_form`).
EFFORT_FORMS = ("reasoning_effort", "thinking", "enable_thinking", "none")
# What OpenAI's reasoning_effort names (max is xhigh there).
OPENAI_LEVELS = ("none", "minimal", "low", "medium", "high", "xhigh")
_THINKING_TYPES = ("thinking", "redacted_thinking")


def asked_effort(body: dict[str, Any]) -> str | None:
    """The effort a canonical request asks for (None: not said); a thinking budget reads as
    the three-level effort it stands for."""
    return _asked(body, budget_effort)


def requested_level(body: dict[str, Any]) -> str | None:
    """The level a canonical request asks for, exactly (None: not said); a thinking budget
    reads as the weakest level whose default budget covers it."""
    return _asked(body, _budget_level)


def _budget_level(budget: int) -> str:
    return next((level for level, b in DEFAULT_THINKING_BUDGETS.items() if budget <= b), "max")


def _asked(body: dict[str, Any], budget_level: Callable[[int], str]) -> str | None:
    """What a request's thinking and `output_config.effort` say, as a level: thinking off,
    else the effort named, else the level of an enabled thinking budget."""
    thinking = body.get("thinking")
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    if kind == "disabled":
        return "none"
    output_config = body.get("output_config")
    effort = output_config.get("effort") if isinstance(output_config, dict) else None
    if isinstance(effort, str) and effort in LEVELS:
        return effort
    budget = thinking.get("budget_tokens") if isinstance(thinking, dict) else None
    if kind == "enabled" and isinstance(budget, int) and not isinstance(budget, bool):
        return budget_level(budget)
    return None


def effort_form(reasoning: bool, form: str | None) -> str:
    """A provider's effort form: its `effort_form`, else `reasoning_effort` for a provider
    that reasons, else none."""
    if form is not None:
        return form
    return "reasoning_effort" if reasoning else "none"


def nearest_level(level: str, levels: tuple[str, ...]) -> str:
    """`level` when `levels` has it, else the nearest below it, else above it."""
    if level in levels or not levels:
        return level
    rank = LEVELS.index(level)
    below = [x for x in levels if LEVELS.index(x) < rank]
    if below:
        return max(below, key=LEVELS.index)
    return min(levels, key=LEVELS.index)


def chat_effort(level: str, form: str, levels: tuple[str, ...]) -> dict[str, Any]:
    """The fields a Chat request carries for `level` in the upstream's `form`."""
    if form == "reasoning_effort":
        return {"reasoning_effort": nearest_level(level, levels or OPENAI_LEVELS)}
    on = level not in EFFORTS_OFF
    if form == "thinking":
        return {"thinking": {"type": "enabled" if on else "disabled"}}
    if form == "enable_thinking":
        if not on:
            return {"enable_thinking": False}
        return {"enable_thinking": True, "thinking_budget": DEFAULT_THINKING_BUDGETS[level]}
    return {}


def openai_effort(effort: str) -> str:
    """An effort as OpenAI's ``reasoning_effort`` / ``reasoning.effort`` names it."""
    return "xhigh" if effort == "max" else effort


def anthropic_thinking(
    body: dict[str, Any], effort: str, max_tokens_limit: int | None = None
) -> dict[str, Any]:
    """`body` (a canonical request, not modified) with its thinking set by `effort`, the
    budget fitted under `max_tokens_limit` (the attempt's clamp)."""
    out = dict(body)
    thinking = body.get("thinking")
    kind = thinking.get("type") if isinstance(thinking, dict) else None
    output_config = body.get("output_config")
    config = dict(output_config) if isinstance(output_config, dict) else {}
    if effort in EFFORTS_OFF:
        out["thinking"] = {"type": "disabled"}
        config.pop("effort", None)
        _set_config(out, config)
        return out
    if kind == "adaptive":
        config["effort"] = "high" if effort == "xhigh" else effort
        _set_config(out, config)
        return out
    if not _may_think(body):
        return out
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
        return out  # the upstream names the missing field
    target = MessagesTarget(model="", max_tokens_limit=max_tokens_limit)
    budget = effort_budget(effort, target)
    max_tokens, fitted = fit_budget(budget, max_tokens, target)
    if fitted is None:
        return out
    out["max_tokens"] = max_tokens
    new: dict[str, Any] = {"type": "enabled", "budget_tokens": fitted}
    if isinstance(thinking, dict) and "display" in thinking:
        new["display"] = thinking["display"]
    out["thinking"] = new
    config.pop("effort", None)
    _set_config(out, config)
    out.pop("temperature", None)
    out.pop("top_k", None)
    top_p = body.get("top_p")
    if isinstance(top_p, (int, float)) and not isinstance(top_p, bool):
        out["top_p"] = max(top_p, 0.95)
    return out


def _set_config(out: dict[str, Any], config: dict[str, Any]) -> None:
    if config:
        out["output_config"] = config
    else:
        out.pop("output_config", None)


def _may_think(body: dict[str, Any]) -> bool:
    """Whether Anthropic accepts thinking turned on for this request: no forced tool, and
    the current tool loop (the assistant turns after the last user turn that is not only
    tool results) starts with a thinking block."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
        return False
    messages = body.get("messages")
    if not isinstance(messages, list):
        return True
    loop: list[Any] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if message.get("role") == "user":
            results_only = isinstance(content, list) and all(
                isinstance(b, dict) and b.get("type") == "tool_result" for b in content
            )
            if not results_only or not content:
                loop = []
        elif message.get("role") == "assistant":
            loop.append(content)
    if not loop:
        return True
    first = loop[0]
    if not isinstance(first, list) or not first:
        return False
    head = first[0]
    return isinstance(head, dict) and head.get("type") in _THINKING_TYPES
