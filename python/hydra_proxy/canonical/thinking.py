"""Thinking in the canonical request: efforts and budgets, read and written.

Readers. A reasoning effort (Chat ``reasoning_effort``, Responses ``reasoning.effort``):
``none``/``minimal`` -> ``{"type": "disabled"}``; ``low``, ``medium``, ``high``, ``xhigh``,
``max`` -> ``{"type": "enabled", "budget_tokens": N}`` with N from
`DEFAULT_THINKING_BUDGETS` (2048, 8192, 16384, 32000, 32000) unless
`MessagesTarget.thinking_budget` names the effort (values below 1024 are raised to
Anthropic's minimum 1024); no effort -> no thinking (Anthropic's default). An
Anthropic-native ``thinking`` object (sent through the SDKs' ``extra_body``, as
Anthropic's own compatibility layer documents) wins over the effort: ``enabled`` +
``budget_tokens`` and ``disabled`` are used as given (``display`` passed), ``adaptive`` is
passed on with the effort (low..max) as ``output_config.effort``; ``enabled`` without
``budget_tokens`` (Z.AI's shape) takes the budget of the effort, else of ``medium``
(`requested_thinking`).

When the budget is not below ``max_tokens`` (Anthropic requires ``max_tokens >
budget_tokens``), ``max_tokens`` becomes budget + the requested (or default)
``max_tokens``, so the visible answer keeps its room (OpenAI counts reasoning inside its
output limit; Anthropic's budget is what the effort maps to, so the answer gets the rest);
if the limit clamp leaves no room the budget is halved to fit, and thinking is turned off
when that is below 1024 (`fit_budget`). The rules that tie thinking to the rest of the
request are in `request`, with `loop_starts_with_thinking` and `strip_final_thinking`.

Writers. `thinking_effort`: ``thinking.type == "disabled"`` -> none; else
``output_config.effort`` (low/medium/high; xhigh/max -> high) wins; else
``thinking.budget_tokens`` (<= 4096 low, <= 16384 medium, above high, `budget_effort`);
adaptive thinking without an effort -> none (the upstream's default). `requested_effort`
is the effort as asked (low..max), for upstreams with a finer scale.
"""

from __future__ import annotations

from typing import Any

from .content import THINKING_TYPES
from .fields import bad, type_name
from .target import MessagesTarget
from .turns import ConversationTurn

__all__ = [
    "DEFAULT_THINKING_BUDGETS",
    "EFFORTS_OFF",
    "MIN_THINKING_BUDGET",
    "THREE_LEVELS",
    "budget_effort",
    "check_effort",
    "effort_budget",
    "fit_budget",
    "loop_starts_with_thinking",
    "read_native_thinking",
    "requested_effort",
    "requested_thinking",
    "strip_final_thinking",
    "thinking_effort",
]

MIN_THINKING_BUDGET = 1024
DEFAULT_THINKING_BUDGETS: dict[str, int] = {
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32000,
    "max": 32000,
}
EFFORTS_OFF = ("none", "minimal")
# An effort on the three-level scale the OpenAI APIs and Gemini's levels share.
THREE_LEVELS = {"low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}


# -- readers


def check_effort(effort: Any, path: str) -> None:
    if effort is not None and effort not in (*EFFORTS_OFF, *DEFAULT_THINKING_BUDGETS):
        raise bad(path, "must be one of none, minimal, low, medium, high, xhigh, max")


def requested_thinking(
    effort: str | None, native: Any, target: MessagesTarget
) -> tuple[dict[str, Any] | None, str | None]:
    """The `thinking` a client asks for (before the tool-loop rules) and its effort name,
    from a checked effort and an Anthropic-native ``thinking`` object (None: not sent)."""
    if native is not None:
        known = effort if effort in DEFAULT_THINKING_BUDGETS else None
        return read_native_thinking(native, known, target), known
    if effort is None:
        return None, None
    if effort in EFFORTS_OFF:
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


def loop_starts_with_thinking(turns: list[ConversationTurn]) -> bool:
    """Whether the current tool loop (if any) starts with a thinking block."""
    last_user = -1
    for i, turn in enumerate(turns):
        if turn.role == "user" and not turn.results:
            last_user = i
    loop = [turn for turn in turns[last_user + 1 :] if turn.role == "assistant" and turn.blocks]
    if not loop:
        return True
    return loop[0].blocks[0]["type"] in THINKING_TYPES


def strip_final_thinking(turns: list[ConversationTurn]) -> None:
    final = next((t for t in reversed(turns) if t.blocks or t.results), None)
    if final is not None and final.role == "assistant":
        final.blocks = [b for b in final.blocks if b["type"] not in THINKING_TYPES]


# -- writers


def requested_effort(body: dict[str, Any]) -> str | None:
    """``output_config.effort`` when it is one of low..max."""
    output_config = body.get("output_config")
    effort = output_config.get("effort") if isinstance(output_config, dict) else None
    return effort if isinstance(effort, str) and effort in THREE_LEVELS else None


def budget_effort(budget: int) -> str:
    """The three-level effort a thinking budget stands for."""
    if budget <= 4096:
        return "low"
    if budget <= 16384:
        return "medium"
    return "high"


def thinking_effort(body: dict[str, Any]) -> str | None:
    """How hard the request asks the model to think: low, medium, high (None: not said)."""
    thinking = body.get("thinking")
    thinking_type = thinking.get("type") if isinstance(thinking, dict) else None
    if thinking_type == "disabled":
        return None
    effort = requested_effort(body)
    if effort is not None:
        return THREE_LEVELS[effort]
    if thinking_type == "enabled" and isinstance(thinking, dict):
        budget = thinking.get("budget_tokens")
        if isinstance(budget, int) and not isinstance(budget, bool):
            return budget_effort(budget)
    return None
