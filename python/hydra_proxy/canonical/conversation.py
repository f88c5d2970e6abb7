"""Walking a canonical request's conversation in order: what every writer reads the same.

System text: ``system`` (a string or text blocks) and every ``role: "system"`` message in
``messages[]`` (Claude Code sends some mid-conversation) are collected, in request order,
into `ConversationWriter.system_texts`; each writer joins them its protocol's way.
Whitespace-only pieces are dropped; the ``system`` field's last ``cache_control``
breakpoint is `ConversationWriter.system_breakpoint`. The ``x-anthropic-billing-header: ...`` block Claude
Code puts first is Anthropic billing metadata, not an instruction, and it changes per
conversation (which defeats upstream prefix caching), so it is removed.

Messages: ``messages`` must be a non-empty list of objects with a role of user, assistant
or system and a content (a string or a list of blocks); each user and assistant message
is handed to the writer's `user` / `assistant`, in order.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from .content import (
    block_type,
    breakpoint_of,
    content_blocks,
    fallback_text,
    text_of,
    well_formed_text,
)
from .fields import bad

__all__ = ["BILLING_HEADER_PREFIX", "ConversationWriter"]

BILLING_HEADER_PREFIX = "x-anthropic-billing-header:"
_ROLES = ("user", "assistant", "system")


class ConversationWriter(ABC):
    """Reads the system text and the messages in order; a subclass writes the turns."""

    def __init__(self) -> None:
        self.system_texts: list[str] = []
        # The breakpoint of the ``system`` field's blocks (None: none there).
        self.system_breakpoint: dict[str, Any] | None = None

    def write(self, body: dict[str, Any]) -> None:
        self._system(body.get("system"))
        messages = body.get("messages")
        if messages is None:
            raise bad("messages", "field required")
        if not isinstance(messages, list):
            raise bad("messages", "must be a list of messages")
        if not messages:
            raise bad("messages", "at least one message is required")
        for i, message in enumerate(messages):
            path = f"messages.{i}"
            if not isinstance(message, dict):
                raise bad(path, "message must be an object")
            role = message.get("role")
            if role not in _ROLES:
                raise bad(
                    f"{path}.role", f"role must be one of user, assistant, system (got {role!r})"
                )
            cpath = f"{path}.content"
            blocks = content_blocks(message.get("content"), cpath)
            if role == "system":
                self._system_blocks(blocks, cpath)
            elif role == "assistant":
                self.assistant(blocks, cpath)
            else:
                self.user(blocks, cpath)

    @abstractmethod
    def assistant(self, blocks: list[Any], path: str) -> None: ...

    @abstractmethod
    def user(self, blocks: list[Any], path: str) -> None: ...

    def _system(self, system: Any) -> None:
        if system is None:
            return
        if isinstance(system, str):
            self._system_text(system)
            return
        if not isinstance(system, list):
            raise bad("system", "must be a string or a list of text blocks")
        self._system_blocks(system, "system")
        self.system_breakpoint = breakpoint_of(system)

    def _system_blocks(self, blocks: list[Any], path: str) -> None:
        for j, block in enumerate(blocks):
            text = well_formed_text(block)
            if text is None:
                bpath = f"{path}.{j}"
                btype = block_type(block, bpath)
                text = (
                    text_of(block, bpath) if btype == "text" else fallback_text(block, btype, bpath)
                )
            if text is not None:
                self._system_text(text)

    def _system_text(self, text: str) -> None:
        if text.strip() and not text.lstrip().startswith(BILLING_HEADER_PREFIX):
            self.system_texts.append(text)
