"""Thinking -> Chat reasoning: ``reasoning_effort`` and replayed ``reasoning_content``.

Reasoning effort (only for ``target.reasoning``): `canonical.thinking.thinking_effort`.

Replay: a ``thinking`` block whose signature is this proxy's signature of exactly that
text, sent to a ``replay_reasoning`` target -> ``reasoning_content`` (`replayed_reasoning`);
any other thinking and all ``redacted_thinking`` are dropped, never turned into text.
"""

from __future__ import annotations

from typing import Any

from ....signature import verify_thinking

__all__ = ["replayed_reasoning"]


def replayed_reasoning(block: dict[str, Any], signing_key: bytes) -> str | None:
    """The text of a thinking block this proxy signed (None: not ours, or edited)."""
    thinking = block.get("thinking")
    signature = block.get("signature")
    if (
        isinstance(thinking, str)
        and isinstance(signature, str)
        and verify_thinking(thinking, signature, signing_key)
    ):
        return thinking
    return None
