"""The four wire protocols, one name each: what a client speaks (a route's `client`, the
ledger's `protocol` column) and what an upstream serves (a provider's `kind`).

The names are the protocol folders' (``hydra_proxy/{anthropic,chat,responses,gemini}``).
A provider's ``kind`` was once spelled ``"openai"`` for Chat; config files keep working
with it, read here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

ProtocolName = Literal["anthropic", "chat", "responses", "gemini"]
PROTOCOLS: tuple[ProtocolName, ...] = get_args(ProtocolName)

# Former spellings of a provider's `kind` that config files may still hold.
FORMER_KINDS: Mapping[str, ProtocolName] = {"openai": "chat"}


def with_current_kind(row: Mapping[str, Any]) -> dict[str, Any]:
    """A provider table as typed by a user, its `kind` in the one name of its protocol."""
    kind = row.get("kind")
    if isinstance(kind, str) and kind in FORMER_KINDS:
        return {**row, "kind": FORMER_KINDS[kind]}
    return dict(row)
