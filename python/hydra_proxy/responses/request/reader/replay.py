"""Reasoning replay: thinking blocks restored from the reasoning items of the input.

A ``reasoning`` item whose ``encrypted_content`` is this proxy's carrier and verifies
with `MessagesTarget.continuation_key` (`responses.reasoning.decode_carrier`) restores its
thinking/redacted_thinking blocks, in order, on the assistant turn. Any other reasoning
item (OpenAI's own encrypted content, a carrier that does not verify, no
encrypted_content) is skipped, counted in `Translation.skipped_reasoning` and traced on
``hydra_proxy.continuation`` (the reason, never the text); never turned into text or
forged. When that leaves a thinking tool loop without its leading thinking block,
thinking is turned off for the request (`canonical.request`).
"""

from __future__ import annotations

import logging
from typing import Any

from ....canonical.content import Block
from ....canonical.fields import bad, type_name
from ...reasoning import decode_carrier, is_carrier

__all__ = ["MAX_FORGED", "restore_reasoning"]

MAX_FORGED = 64  # reasoning carriers per request that may fail their MAC check

trace = logging.getLogger("hydra_proxy.continuation")


def restore_reasoning(
    item: dict[str, Any], path: str, key: bytes | None, *, verify: bool = True
) -> list[Block] | None:
    """The blocks a reasoning item restores (None: it is skipped). `verify` False: skipped
    unchecked (a request past `MAX_FORGED` carriers that failed their check)."""
    encrypted = item.get("encrypted_content")
    if encrypted is not None and not isinstance(encrypted, str):
        raise bad(f"{path}.encrypted_content", f"must be a string, got {type_name(encrypted)}")
    summary = item.get("summary")
    if summary is not None and not isinstance(summary, list):
        raise bad(f"{path}.summary", f"must be an array, got {type_name(summary)}")
    blocks = decode_carrier(encrypted, key) if verify else None
    if blocks is None:
        why = (
            "no encrypted_content"
            if encrypted is None
            else "a carrier that does not verify"
            if is_carrier(encrypted)
            else "encrypted_content not made by this proxy"
        )
        trace.debug("%s: reasoning item skipped (%s)", path, why)
    return blocks
