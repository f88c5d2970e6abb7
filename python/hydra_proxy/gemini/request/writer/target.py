"""What a Gemini model accepts, by generation (from the route and provider configuration)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["GeminiTarget", "gemini_target"]


@dataclass(frozen=True)
class GeminiTarget:
    """What the Gemini model accepts (from the route/provider configuration)."""

    model: str
    max_output_tokens: int | None = None
    # "budget": thinkingBudget (2.5); "level": thinkingLevel (3); "none": no thinkingConfig.
    thinking: Literal["budget", "level", "none"] = "budget"
    thinking_levels: tuple[str, ...] = ("low", "high")
    max_thinking_budget: int | None = None
    min_thinking_budget: int = 0
    # Gemini 3: a function-call turn without its thoughtSignature is a 400.
    require_call_signatures: bool = False
    # Key for hydra_proxy.signature (the thoughtSignature carrier).
    signing_key: bytes = b""
    # The route's reasoning effort (canonical.effort), over the request's.
    effort: str | None = None


def gemini_target(model: str, **options: Any) -> GeminiTarget:
    """A target with the defaults of the model's generation (gemini-3: thinkingLevel and
    required call signatures; else thinkingBudget); `options` override them."""
    name = model.rsplit("/", 1)[-1].lower()
    defaults: dict[str, Any] = {}
    if name.startswith("gemini-3"):
        defaults = {"thinking": "level", "require_call_signatures": True}
        if "flash" in name:
            defaults["thinking_levels"] = ("minimal", "low", "medium", "high")
    elif name.startswith("gemini-2.5-pro"):
        defaults = {"min_thinking_budget": 128, "max_thinking_budget": 32768}
    elif name.startswith("gemini-2.5"):
        defaults = {"max_thinking_budget": 24576}
    return GeminiTarget(model=model, **{**defaults, **options})
