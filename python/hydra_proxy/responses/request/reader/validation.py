"""What a Responses request may not ask of this proxy, and its top-level switches.

The proxy keeps no conversation state: ``store: true``, ``previous_response_id``,
``conversation``, ``background: true``, a stored ``prompt`` and ``item_reference`` input
items (`input`) are refused with a 400 naming the field (send ``store: false`` and the
whole conversation in ``input``, as Codex does). ``include`` must be an array of strings;
every value is accepted, only ``reasoning.encrypted_content`` changes the reply.
``top_logprobs`` above 0 is a 400 (Claude returns no log probabilities).
"""

from __future__ import annotations

from typing import Any

from ....canonical.fields import bad, type_name

__all__ = ["NO_STATE", "read_bool", "read_include", "refuse_logprobs", "refuse_state"]

NO_STATE = "this proxy keeps no conversation state"


def read_bool(body: dict[str, Any], name: str) -> bool | None:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise bad(name, f"must be a boolean, got {type_name(value)}")
    return value


def refuse_state(body: dict[str, Any]) -> None:
    if read_bool(body, "store"):
        raise bad(
            "store",
            f"{NO_STATE}; send store: false and the whole conversation in input",
        )
    for name in ("previous_response_id", "conversation"):
        if body.get(name) is not None:
            raise bad(name, f"{NO_STATE}; send the whole conversation in input instead")
    if read_bool(body, "background"):
        raise bad("background", f"{NO_STATE}; background responses are not supported")
    if body.get("prompt") is not None:
        raise bad("prompt", "stored prompt templates are not available through this proxy")


def read_include(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad("include", f"must be an array of strings, got {type_name(value)}")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise bad(f"include[{i}]", f"must be a string, got {type_name(item)}")
    return value


def refuse_logprobs(body: dict[str, Any]) -> None:
    top_logprobs = body.get("top_logprobs")
    if top_logprobs is not None and top_logprobs != 0:
        raise bad("top_logprobs", "Claude does not return log probabilities; omit it or send 0")
