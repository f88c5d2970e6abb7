"""What a Chat upstream model accepts (from the route and provider configuration)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["ChatTarget"]


@dataclass(frozen=True)
class ChatTarget:
    """What the upstream model accepts (from the route/provider configuration)."""

    model: str
    # o-series and GPT-5 take only max_completion_tokens.
    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    max_tokens_limit: int | None = None
    # The model takes `reasoning_effort`.
    reasoning: bool = False
    # DeepSeek/Kimi-style: needs `reasoning_content` back on assistant turns.
    replay_reasoning: bool = False
    # Key for hydra_proxy.signature.
    signing_key: bytes = b""
    include_usage: bool = True
    # The model accepts temperature/top_p (o-series/GPT-5 reasoning models reject them).
    sampling: bool = True
    # The route's reasoning effort (canonical.effort): sent as `reasoning_effort` whatever
    # the request asks (None: the request's, for a `reasoning` target).
    effort: str | None = None
    # Sent as `prompt_cache_key` (the client's session; None: none sent).
    prompt_cache_key: str | None = None
    # The upstream honours Anthropic-style `cache_control` on content parts (OpenRouter):
    # the request's breakpoints are carried, and message content is always a list of parts
    # (a breakpoint moving to the next turn must not change the earlier message's bytes).
    cache_control: bool = False
