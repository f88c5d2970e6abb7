"""Tools and tool choice -> Chat ``tools``, ``tool_choice``, ``parallel_tool_calls``.

Custom tools -> ``{"type": "function", "function": {name, description, parameters}}``
with the JSON schema as given (``$schema``, ``additionalProperties`` kept);
``cache_control``, ``strict``, ``input_examples`` dropped. ``defer_loading`` tools are
sent like any other tool: a Chat upstream has no tool search, and they stay callable.
Server tools and ``mcp_servers`` are refused (`canonical.tools`). ``tool_choice``
auto/any/tool/none -> "auto"/"required"/named function/"none";
``disable_parallel_tool_use`` -> ``parallel_tool_calls: false``; both only when tools are
sent (OpenAI rejects ``tool_choice`` without tools; applied in `translate`).
"""

from __future__ import annotations

from typing import Any

from ....canonical.tools import custom_tools, read_tool_choice

__all__ = ["UPSTREAM", "write_tool_choice", "write_tools"]

UPSTREAM = "the target model"  # how a refusal names a Chat upstream
_CHOICES = {"auto": "auto", "any": "required", "none": "none"}


def write_tools(value: Any) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    for name, description, schema, _ in custom_tools(value, UPSTREAM):
        function: dict[str, Any] = {"name": name}
        if isinstance(description, str):
            function["description"] = description
        function["parameters"] = schema
        tools.append({"type": "function", "function": function})
    return tools


def write_tool_choice(value: Any, tools: list[dict[str, Any]]) -> tuple[Any, bool | None]:
    """The Chat ``tool_choice`` (None: leave it out) and ``parallel_tool_calls``."""
    if value is None:
        return None, None
    ctype, name, parallel_off = read_tool_choice(
        value, {tool["function"]["name"] for tool in tools}
    )
    parallel = False if parallel_off else None
    if ctype == "tool":
        return {"type": "function", "function": {"name": name}}, parallel
    return _CHOICES.get(ctype) if ctype is not None else None, parallel
