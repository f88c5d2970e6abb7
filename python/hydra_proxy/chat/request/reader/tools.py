"""Tools and tool choice -> canonical tools and tool_choice.

``{"type": "function", "function": {name, description, parameters, strict}}`` ->
``{name, description, input_schema}`` (the schema as `canonical.tools.input_schema`
makes it); an empty description is omitted; duplicate names and names outside
Anthropic's ``[A-Za-z0-9_-]{1,128}`` are a 400 (a renamed tool could not be mapped back in
the response). ``tool_choice``: ``"none"`` -> ``{"type": "none"}``, ``"auto"`` -> auto,
``"required"`` -> any, a named function -> tool, ``allowed_tools`` -> only those tools are
sent, with auto/any for its mode; without tools, and with ``parallel_tool_calls``, as
`canonical.tools.settle_tool_choice` says.
"""

from __future__ import annotations

from typing import Any

from ....canonical.fields import bad, type_name
from ....canonical.tools import (
    TOOL_NAME,
    TOOL_NAME_RULE,
    allowed_tools,
    input_schema,
    openai_tool_choice,
)

__all__ = ["read_tool_choice", "read_tools"]


def read_tools(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad("tools", f"must be an array, got {type_name(value)}")
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, tool in enumerate(value):
        path = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise bad(path, f"must be an object, got {type_name(tool)}")
        ttype = tool.get("type", "function")
        if ttype != "function":
            raise bad(
                f"{path}.type",
                f"only function tools are supported, not {ttype!r}"
                + (" (Claude has no free-form custom tools)" if ttype == "custom" else ""),
            )
        function = tool.get("function")
        if not isinstance(function, dict):
            raise bad(f"{path}.function", "required: an object with name and parameters")
        name = function.get("name")  # checked inline (`tool_name`'s rule): one per tool
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            raise bad(f"{path}.function.name", TOOL_NAME_RULE)
        if name in seen:
            raise bad(f"{path}.function.name", f"duplicate tool name {name!r}")
        seen.add(name)
        converted: dict[str, Any] = {"name": name}
        description = function.get("description")
        if description is not None and not isinstance(description, str):
            raise bad(f"{path}.function.description", "must be a string")
        if description:
            converted["description"] = description
        converted["input_schema"] = input_schema(
            function.get("parameters"), path, "function.parameters"
        )
        out.append(converted)
    return out


def read_tool_choice(
    value: Any, tools: list[dict[str, Any]], body: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    return openai_tool_choice(
        value,
        body.get("parallel_tool_calls"),
        tools,
        lambda choice: _object_choice(choice, tools),
        or_else="a named function",
        needs="requires tools",
    )


def _object_choice(
    value: dict[str, Any], tools: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    if value.get("type") == "function":
        function = value.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str):
            raise bad("tool_choice.function.name", "required: the name of a function tool")
        if name not in {tool["name"] for tool in tools}:
            raise bad("tool_choice.function.name", f"no tool named {name!r} in tools")
        return tools, {"type": "tool", "name": name}
    if value.get("type") == "allowed_tools":
        return _allowed_tools(value.get("allowed_tools"), tools)
    raise bad("tool_choice.type", f"unsupported tool choice type {value.get('type')!r}")


def _allowed_tools(
    value: Any, tools: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    path = "tool_choice.allowed_tools"
    if not isinstance(value, dict):
        raise bad(path, "required: an object with mode and tools")
    choice, allowed = allowed_tools(value, path)
    by_name = {tool["name"]: tool for tool in tools}
    keep: dict[str, None] = {}  # ordered; looked up once per allowed tool and per tool
    for i, entry in enumerate(allowed):
        function = entry.get("function") if isinstance(entry, dict) else None
        name = function.get("name") if isinstance(function, dict) else None
        if not isinstance(name, str):
            raise bad(f"{path}.tools[{i}].function.name", "required")
        if name not in by_name:
            raise bad(f"{path}.tools[{i}].function.name", f"no tool named {name!r} in tools")
        keep.setdefault(name)
    return [tool for tool in tools if tool["name"] in keep], choice
