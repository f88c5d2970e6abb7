"""Gemini ``tools`` and ``toolConfig`` -> canonical tools and tool choice.

``functionDeclarations`` -> tools (name: `canonical.tools.tool_name`; a name declared twice
is a 400). The schema: ``parametersJsonSchema`` is JSON Schema already; ``parameters`` is
Gemini's OpenAPI-style Schema, turned into JSON Schema (`json_schema`: ``type`` names in
lower case, ``nullable: true`` -> the type or ``null``, ``propertyOrdering`` dropped, the
rest kept); then `canonical.tools.input_schema` (no schema: an empty object).
``response`` / ``responseJsonSchema`` (what a call returns) are not used.

Google's server tools (``googleSearch``, ``googleSearchRetrieval``, ``codeExecution``,
``urlContext``, ``fileSearch``, ``googleMaps``, ``computerUse``, ``retrieval``,
``enterpriseWebSearch``) run at Google: no other upstream can run them, so each is a 400
naming it (dropping it would hide it).

``toolConfig.functionCallingConfig.mode``: ``AUTO`` and ``VALIDATED`` -> auto, ``ANY`` ->
any (with one ``allowedFunctionNames`` entry -> that tool; with several -> any, only those
tools sent), ``NONE`` -> none; no tools -> no choice (`canonical.tools.settle_tool_choice`).
"""

from __future__ import annotations

from typing import Any

from ....canonical.fields import bad, each_object, optional_object, type_name
from ....canonical.tools import input_schema, settle_tool_choice, tool_name
from .fields import field, has

__all__ = ["SERVER_TOOLS", "json_schema", "read_tool_config", "read_tools"]

SERVER_TOOLS = (
    "googleSearch",
    "googleSearchRetrieval",
    "codeExecution",
    "urlContext",
    "fileSearch",
    "googleMaps",
    "computerUse",
    "retrieval",
    "enterpriseWebSearch",
)
_MAX_DEPTH = 64  # a Gemini schema nested deeper is refused (it is converted recursively)


def read_tools(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    tools: list[dict[str, Any]] = []
    names: set[str] = set()
    for path, tool in each_object(value, "tools"):
        for server in SERVER_TOOLS:
            if has(tool, server):
                raise bad(
                    f"{path}.{server}",
                    f"{server} is a Google server tool: it runs only on Gemini, and this "
                    "route's model cannot run it. Remove it, or route this model to Gemini.",
                )
        declarations = field(tool, "functionDeclarations")
        if declarations is None:
            continue
        for dpath, declaration in each_object(declarations, f"{path}.functionDeclarations"):
            name = tool_name(declaration.get("name"), dpath)
            if name in names:
                raise bad(f"{dpath}.name", f"duplicate function name {name!r}")
            names.add(name)
            tools.append(_tool(declaration, dpath, name))
    return tools


def _tool(declaration: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    description = declaration.get("description")
    if description is not None and not isinstance(description, str):
        raise bad(f"{path}.description", "must be a string")
    if field(declaration, "parametersJsonSchema") is not None:
        schema = input_schema(
            field(declaration, "parametersJsonSchema"), path, "parametersJsonSchema"
        )
    else:
        parameters = optional_object(declaration.get("parameters"), f"{path}.parameters")
        converted = None if parameters is None else json_schema(parameters, f"{path}.parameters")
        schema = input_schema(converted, path)
    tool: dict[str, Any] = {"name": name}
    if description:
        tool["description"] = description
    tool["input_schema"] = schema
    return tool


def json_schema(schema: Any, path: str, depth: int = 0) -> Any:
    """A Gemini Schema object as JSON Schema."""
    if depth > _MAX_DEPTH:
        raise bad(path, f"is nested deeper than {_MAX_DEPTH} levels")
    if isinstance(schema, list):
        return [json_schema(item, f"{path}[{i}]", depth + 1) for i, item in enumerate(schema)]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "propertyOrdering" or key == "nullable":
            continue
        if key == "type" and isinstance(value, str):
            out["type"] = value.lower()
        elif key == "properties" and isinstance(value, dict):
            out["properties"] = {
                k: json_schema(v, f"{path}.properties.{k}", depth + 1) for k, v in value.items()
            }
        elif key in ("items", "anyOf", "oneOf", "allOf", "not", "additionalProperties"):
            out[key] = json_schema(value, f"{path}.{key}", depth + 1)
        else:
            out[key] = value
    if schema.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


def read_tool_config(
    value: Any, tools: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The tools to send and the canonical tool_choice."""
    config = optional_object(value, "toolConfig")
    calling = None if config is None else field(config, "functionCallingConfig")
    calling = optional_object(calling, "toolConfig.functionCallingConfig")
    if calling is None:
        return settle_tool_choice(tools, None, None, "")
    path = "toolConfig.functionCallingConfig"
    mode = field(calling, "mode", "AUTO")
    allowed = field(calling, "allowedFunctionNames")
    if allowed is not None:
        if not isinstance(allowed, list) or not all(isinstance(n, str) for n in allowed):
            raise bad(f"{path}.allowedFunctionNames", "must be an array of function names")
        known = {tool["name"] for tool in tools}
        for i, name in enumerate(allowed):
            if name not in known:
                raise bad(f"{path}.allowedFunctionNames[{i}]", f"no function named {name!r}")
    choice: dict[str, Any]
    if mode in ("AUTO", "VALIDATED", "MODE_UNSPECIFIED"):
        choice = {"type": "auto"}
    elif mode == "NONE":
        choice = {"type": "none"}
    elif mode == "ANY":
        if allowed and len(allowed) == 1:
            choice = {"type": "tool", "name": allowed[0]}
        else:
            choice = {"type": "any"}
            if allowed:
                tools = [tool for tool in tools if tool["name"] in allowed]
    else:
        raise bad(f"{path}.mode", f"must be AUTO, ANY, NONE or VALIDATED, got {mode!r}")
    if not isinstance(mode, str):
        raise bad(f"{path}.mode", f"must be a string, got {type_name(mode)}")
    return settle_tool_choice(tools, choice, None, "requires functionDeclarations")
