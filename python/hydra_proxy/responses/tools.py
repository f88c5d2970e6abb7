"""Responses tool names and custom tool input, as the canonical request carries them
(the native decoder's flattening: rust/src/responses/tools.rs).

Namespace tools (Codex's ``multi_agent_v1``) are sent flattened: each inner tool is named
``<namespace>__<name>`` (`NAMESPACE_SEPARATOR`; both halves are ``[A-Za-z0-9_-]``, so the
result passes Anthropic's and OpenAI's tool-name rules). A flattened name longer than
`MAX_FLAT_NAME` (64, OpenAI's limit for function names, so the name also survives a Chat
upstream) or equal to another tool's name is cut and given ``_`` + 8 hex digits of its
SHA-256. `ToolNames` maps every sent name back to ``(name, namespace)``; a call is never
un-flattened by splitting the string, only through that table.

Custom (free-form) tools take one string: `CUSTOM_INPUT_SCHEMA`. On the way back a call's
``input["input"]`` string is the ``custom_tool_call`` ``input`` (`custom_input`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

__all__ = [
    "CUSTOM_INPUT_KEY",
    "CUSTOM_INPUT_SCHEMA",
    "MAX_FLAT_NAME",
    "NAMESPACE_SEPARATOR",
    "ToolNames",
    "ToolOrigin",
    "custom_input",
    "custom_input_member",
    "flatten",
]

NAMESPACE_SEPARATOR = "__"
MAX_FLAT_NAME = 64
CUSTOM_INPUT_KEY = "input"
CUSTOM_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        CUSTOM_INPUT_KEY: {"type": "string", "description": "The raw input of this tool."}
    },
    "required": [CUSTOM_INPUT_KEY],
    "additionalProperties": False,
}


class ToolOrigin(NamedTuple):
    """What a tool name sent upstream stands for in the client's request (a tuple: one is
    made per tool of every request)."""

    name: str
    namespace: str | None = None
    custom: bool = False


@dataclass
class ToolNames:
    """Sent (flattened) tool names <-> the client's (namespace, name), both ways."""

    by_sent: dict[str, ToolOrigin] = field(default_factory=dict)
    by_origin: dict[tuple[str | None, str], str] = field(default_factory=dict)

    def add(self, sent: str, origin: ToolOrigin) -> None:
        self.by_sent[sent] = origin
        self.by_origin[(origin.namespace, origin.name)] = sent

    def sent_name(self, name: str, namespace: str | None) -> str:
        """The upstream name for a client's call (history items): the table, else computed."""
        known = self.by_origin.get((namespace, name))
        if known is not None:
            return known
        return name if namespace is None else flatten(namespace, name)

    def origin(self, sent: str) -> ToolOrigin:
        """The client's tool behind an upstream tool name (unknown names stand for themselves)."""
        return self.by_sent.get(sent) or ToolOrigin(sent)


def flatten(namespace: str, name: str, taken: frozenset[str] | set[str] = frozenset()) -> str:
    """`<namespace>__<name>`, shortened with a hash when too long or already taken."""
    flat = namespace + NAMESPACE_SEPARATOR + name
    if len(flat) <= MAX_FLAT_NAME and flat not in taken:
        return flat
    digest = hashlib.sha256(flat.encode("utf-8")).hexdigest()[:8]
    return flat[: MAX_FLAT_NAME - 9] + "_" + digest


def custom_input_member(tool_input: dict[str, Any]) -> str | None:
    """The input string a custom tool's tool_use `input` object carries ("" for an empty
    object), or None when it has none."""
    value = tool_input.get(CUSTOM_INPUT_KEY)
    if isinstance(value, str):
        return value
    return None if tool_input else ""


def custom_input(tool_input: Any) -> str:
    """A tool_use `input` of a custom tool as the `custom_tool_call` input string."""
    if isinstance(tool_input, dict) and (text := custom_input_member(tool_input)) is not None:
        return text
    return orjson.dumps(tool_input).decode("utf-8")
