"""What a reader needs to know to write the canonical request for one upstream model."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MessagesTarget"]


@dataclass(frozen=True)
class MessagesTarget:
    """The model a canonical (Anthropic Messages) request is read for, and its limits.

    A reader (Chat or Responses client request -> canonical) is given one per attempt;
    the canonical request it writes then goes to any upstream kind through that kind's
    writer.
    """

    model: str  # the upstream model name the request carries
    default_max_tokens: int = 8192  # Anthropic requires max_tokens; used when the client sends none
    max_tokens_limit: int | None = None
    continuation_key: bytes | None = (
        None  # None: suffixes and carriers are neither trusted nor expected
    )
    thinking_budget: dict[str, int] | None = None  # reasoning effort -> budget_tokens override
