"""What a Responses upstream model accepts (the ``responses`` provider kind)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ResponsesTarget"]


@dataclass(frozen=True)
class ResponsesTarget:
    """A model behind an OpenAI Responses API (from the route/provider configuration)."""

    model: str
    max_tokens_limit: int | None = None
    # The model reasons (gpt-5.x, o-series): send reasoning.effort, ask for encrypted reasoning.
    reasoning: bool = True
    # The model accepts temperature/top_p (reasoning models reject them).
    sampling: bool = False
    # Key of the upstream reasoning carrier (hydra_proxy.responses.reasoning).
    signing_key: bytes = b""
    # The route's reasoning effort (canonical.effort): sent as `reasoning.effort` whatever
    # the request asks.
    effort: str | None = None
    # Sent as `prompt_cache_key` (the client's session; None: none sent).
    prompt_cache_key: str | None = None
