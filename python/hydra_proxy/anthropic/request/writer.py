"""The Anthropic request writer: the canonical request -> an Anthropic upstream's request.

The canonical request is already a Messages request: the writer sets the attempt's model,
its effort (as Anthropic's thinking) and its max_tokens limit, the stream flag, and drops
the thinking blocks this proxy signed, which Anthropic would reject.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...canonical.content import without_typed
from ...canonical.effort import anthropic_thinking
from ...signature import is_proxy_signature

__all__ = ["AnthropicTarget", "anthropic_request_from_messages", "strip_proxy_signatures"]


@dataclass(frozen=True)
class AnthropicTarget:
    """What an Anthropic request is written for."""

    model: str
    max_tokens_limit: int | None = None
    effort: str | None = None  # the route's reasoning effort, over the request's


def anthropic_request_from_messages(
    body: dict[str, Any], target: AnthropicTarget, *, stream: bool
) -> dict[str, Any]:
    # Copies down to the messages: the canonical request stays shared by a chain's attempts.
    out = dict(body)
    if isinstance(out.get("messages"), list):
        out["messages"] = [dict(m) if isinstance(m, dict) else m for m in out["messages"]]
    out = strip_proxy_signatures(out)
    limit = target.max_tokens_limit
    if target.effort is not None:
        out = anthropic_thinking(out, target.effort, limit)
    out["model"] = target.model
    if limit is not None and isinstance(out.get("max_tokens"), int):
        out["max_tokens"] = min(out["max_tokens"], limit)
    if stream:
        out["stream"] = True
    else:
        out.pop("stream", None)
    return out


def strip_proxy_signatures(request: dict[str, Any]) -> dict[str, Any]:
    """Drop thinking blocks signed by this proxy: Anthropic would reject them."""
    for message in request.get("messages") or ():
        if isinstance(message, dict) and isinstance(message.get("content"), list):
            message["content"] = without_typed(
                message["content"], "thinking", "signature", is_proxy_signature
            )
    return request
