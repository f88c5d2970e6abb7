"""Tools and tool choice -> Chat ``tools``, ``tool_choice``, ``parallel_tool_calls``.

Custom tools -> ``{"type": "function", "function": {name, description, parameters}}``
with the JSON schema as given (``$schema``, ``additionalProperties`` kept);
``cache_control``, ``strict``, ``input_examples`` dropped. ``defer_loading`` tools are
sent like any other tool: a Chat upstream has no tool search, and they stay callable. A
tool with a ``type`` other than ``custom`` and no ``input_schema`` is an Anthropic server
tool (web search, code execution, bash, text editor, computer, MCP toolset...): 400
naming it, as is a non-empty ``mcp_servers`` (the MCP connector is server-side too).
``tool_choice`` auto/any/tool/none -> "auto"/"required"/named function/"none";
``disable_parallel_tool_use`` -> ``parallel_tool_calls: false``; both only when tools are
sent (OpenAI rejects ``tool_choice`` without tools; applied in `translate`). A
``tool_use`` block's ``input`` -> compact JSON ``arguments`` (missing/``{}`` -> ``"{}"``).
"""

from __future__ import annotations

import logging
from typing import Any

from ...tool_arguments import tool_arguments
from ..common import bad

__all__ = ["refuse_mcp_servers", "tool_call_arguments", "write_tool_choice", "write_tools"]

log = logging.getLogger(__name__)


def tool_call_arguments(block: dict[str, Any]) -> str:
    return tool_arguments(block.get("input"))


def write_tools(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad("tools", "must be a list of tools")
    tools: list[dict[str, Any]] = []
    for i, tool in enumerate(value):
        path = f"tools.{i}"
        if not isinstance(tool, dict):
            raise bad(path, "tool must be an object")
        ttype = tool.get("type")
        name = tool.get("name")
        schema = tool.get("input_schema")
        if ttype not in (None, "custom") and schema is None:
            raise bad(
                path,
                f"tool {name!r} is an Anthropic server tool (type {ttype!r}); the target "
                "model cannot run server tools. Remove it, or route this model to Anthropic.",
            )
        if not isinstance(name, str) or not name:
            raise bad(f"{path}.name", "tool needs a name")
        if not isinstance(schema, dict):
            raise bad(f"{path}.input_schema", f"tool {name!r} needs an input_schema object")
        function: dict[str, Any] = {"name": name}
        description = tool.get("description")
        if isinstance(description, str):
            function["description"] = description
        function["parameters"] = schema
        tools.append({"type": "function", "function": function})
    return tools


def refuse_mcp_servers(value: Any) -> None:
    if isinstance(value, list) and value:
        raise bad(
            "mcp_servers",
            "the target model cannot connect to MCP servers (a server-side Anthropic "
            "feature); define the MCP tools on the client instead",
        )


def write_tool_choice(value: Any, tools: list[dict[str, Any]]) -> tuple[Any, bool | None]:
    if value is None:
        return None, None
    if not isinstance(value, dict):
        raise bad("tool_choice", "must be an object")
    parallel = False if value.get("disable_parallel_tool_use") is True else None
    ctype = value.get("type")
    if ctype == "auto":
        return "auto", parallel
    if ctype == "any":
        return "required", parallel
    if ctype == "none":
        return "none", parallel
    if ctype == "tool":
        name = value.get("name")
        if not isinstance(name, str) or not name:
            raise bad("tool_choice.name", "tool_choice of type tool needs a name")
        if tools and name not in {tool["function"]["name"] for tool in tools}:
            raise bad("tool_choice.name", f"no tool named {name!r} in tools")
        return {"type": "function", "function": {"name": name}}, parallel
    log.debug("ignored tool_choice of type %r", ctype)
    return None, parallel
