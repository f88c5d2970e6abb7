"""Thinking: ``reasoning_effort`` and Anthropic's own ``thinking`` -> ``thinking``.

``reasoning_effort``: ``none``/``minimal`` -> ``{"type": "disabled"}``; ``low``, ``medium``,
``high``, ``xhigh``, ``max`` -> ``{"type": "enabled", "budget_tokens": N}`` with N from
`DEFAULT_THINKING_BUDGETS` (2048, 8192, 16384, 32000, 32000) unless
`MessagesTarget.thinking_budget` names the effort (values below 1024 are raised to
Anthropic's minimum 1024). An Anthropic-native ``thinking`` object (sent through the SDKs'
``extra_body``, as Anthropic's own compatibility layer documents) wins over
``reasoning_effort``: ``enabled`` + ``budget_tokens`` and ``disabled`` are used as given
(``display`` passed), ``adaptive`` is passed on with ``reasoning_effort`` (low..max) as
``output_config.effort``; ``enabled`` without ``budget_tokens`` (Z.AI's shape) takes the
budget of ``reasoning_effort``, else of ``medium``.

When the budget is not below ``max_tokens`` (Anthropic requires ``max_tokens >
budget_tokens``), ``max_tokens`` becomes budget + the requested (or default)
``max_tokens``, so the visible answer keeps its room (OpenAI counts reasoning inside
``max_completion_tokens``; Anthropic's budget is what the spec maps effort to, so the
answer gets the rest); if the limit clamp leaves no room the budget is halved to fit, and
thinking is turned off when that is below 1024 (`fit_budget`).

The rules that tie thinking to the rest of the request (a forced tool choice turns it off;
a tool loop without restorable thinking turns it off; sampling while it is on) are applied
in `translate`, with `loop_starts_with_thinking` and `strip_final_thinking` from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .validation import bad, type_name

if TYPE_CHECKING:
    from .messages import Turn
    from .translate import MessagesTarget

__all__ = [
    "DEFAULT_THINKING_BUDGETS",
    "MIN_THINKING_BUDGET",
    "THINKING_TYPES",
    "effort_budget",
    "fit_budget",
    "loop_starts_with_thinking",
    "read_native_thinking",
    "read_thinking",
    "strip_final_thinking",
]

MIN_THINKING_BUDGET = 1024
THINKING_TYPES = ("thinking", "redacted_thinking")
DEFAULT_THINKING_BUDGETS: dict[str, int] = {
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32000,
    "max": 32000,
}
_EFFORTS_OFF = ("none", "minimal")


def read_thinking(
    body: dict[str, Any], target: MessagesTarget
) -> tuple[dict[str, Any] | None, str | None]:
    """The requested `thinking` config (before tool-loop checks) and the effort name."""
    effort = body.get("reasoning_effort")
    if effort is not None and effort not in (*_EFFORTS_OFF, *DEFAULT_THINKING_BUDGETS):
        raise bad("reasoning_effort", "must be one of none, minimal, low, medium, high, xhigh, max")
    native = body.get("thinking")
    if native is not None:
        known = effort if effort in DEFAULT_THINKING_BUDGETS else None
        return read_native_thinking(native, known, target), known
    if effort is None:
        return None, None
    if effort in _EFFORTS_OFF:
        return {"type": "disabled"}, None
    return {"type": "enabled", "budget_tokens": effort_budget(effort, target)}, effort


def read_native_thinking(value: Any, effort: str | None, target: MessagesTarget) -> dict[str, Any]:
    """An Anthropic-native `thinking` object, validated (`effort` fills a missing budget)."""
    if not isinstance(value, dict):
        raise bad("thinking", f"must be an object, got {type_name(value)}")
    ttype = value.get("type")
    display = value.get("display")
    if display is not None and display not in ("summarized", "omitted"):
        raise bad("thinking.display", "must be 'summarized' or 'omitted'")
    out: dict[str, Any]
    if ttype == "enabled":
        budget = value.get("budget_tokens")
        if budget is None:
            budget = effort_budget(
                effort if effort in DEFAULT_THINKING_BUDGETS else "medium", target
            )
        if not isinstance(budget, int) or isinstance(budget, bool) or budget < MIN_THINKING_BUDGET:
            raise bad("thinking.budget_tokens", f"must be an integer >= {MIN_THINKING_BUDGET}")
        out = {"type": "enabled", "budget_tokens": budget}
    elif ttype == "adaptive":
        out = {"type": "adaptive"}
    elif ttype == "disabled":
        return {"type": "disabled"}
    else:
        raise bad("thinking.type", "must be 'enabled', 'adaptive' or 'disabled'")
    if display is not None:
        out["display"] = display
    return out


def effort_budget(effort: str, target: MessagesTarget) -> int:
    """The thinking budget for an effort name (the target's, else the default; >= 1024)."""
    budgets = target.thinking_budget or {}
    return max(budgets.get(effort, DEFAULT_THINKING_BUDGETS[effort]), MIN_THINKING_BUDGET)


def fit_budget(budget: int, max_tokens: int, target: MessagesTarget) -> tuple[int, int | None]:
    """max_tokens and budget_tokens with max_tokens > budget_tokens (None: no room)."""
    if budget >= max_tokens:
        max_tokens = budget + max_tokens
    limit = target.max_tokens_limit
    if limit is not None and max_tokens > limit:
        max_tokens = limit
        if budget >= max_tokens:
            budget = max_tokens // 2
    if budget < MIN_THINKING_BUDGET:
        return max_tokens, None
    return max_tokens, budget


def loop_starts_with_thinking(turns: list[Turn]) -> bool:
    """Whether the current tool loop (if any) starts with a thinking block."""
    last_user = -1
    for i, turn in enumerate(turns):
        if turn.role == "user" and not turn.results:
            last_user = i
    loop = [turn for turn in turns[last_user + 1 :] if turn.role == "assistant" and turn.blocks]
    if not loop:
        return True
    return loop[0].blocks[0]["type"] in THINKING_TYPES


def strip_final_thinking(turns: list[Turn]) -> None:
    final = next((t for t in reversed(turns) if t.blocks or t.results), None)
    if final is not None and final.role == "assistant":
        final.blocks = [b for b in final.blocks if b["type"] not in THINKING_TYPES]
