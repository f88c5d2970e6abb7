"""The Chat -> Anthropic mappings, for messages_via_chat/response.py: defined once in
chat/mapping.py (twin of rust/src/chat/mapping.rs)."""

from __future__ import annotations

from ..chat.mapping import input_tokens, stop_reason

__all__ = ["input_tokens", "stop_reason"]
