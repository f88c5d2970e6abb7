"""Tools, tool choice, and the ids and arguments of replayed tool calls.

``{"type": "function", "function": {name, description, parameters, strict}}`` ->
``{name, description, input_schema}``: missing/empty ``parameters`` ->
``{"type": "object", "properties": {}}``, a schema without ``type`` gets
``"type": "object"``, another ``type`` is a 400; an empty description is omitted;
duplicate names and names outside Anthropic's ``[A-Za-z0-9_-]{1,128}`` are a 400 (a
renamed tool could not be mapped back in the response). ``tool_choice``: ``"none"`` ->
``{"type": "none"}``, ``"auto"`` -> auto, ``"required"`` -> any, a named function -> tool,
``allowed_tools`` -> only those tools are sent, with auto/any for its mode;
``none``/``auto`` without tools are dropped, ``required``/named without tools are a 400.
``parallel_tool_calls: false`` -> ``disable_parallel_tool_use: true`` (on an auto tool
choice when none was given; not with ``none``).

Tool call ids are kept verbatim when they match Anthropic's ``[A-Za-z0-9_-]+``; any other
id is replaced by ``call_`` + 24 hex digits of its SHA-256 (`tool_id`, `hashed_id`).
``arguments``: a JSON object string, ``""``/whitespace -> ``{}``, an object given directly
is accepted (`read_arguments`).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import orjson

from ....json_depth import MAX_EMBEDDED_DEPTH, nested_deeper_than
from .validation import bad, type_name

__all__ = ["hashed_id", "read_arguments", "read_tool_choice", "read_tools", "tool_id"]


_TOOL_ID = re.compile(r"[A-Za-z0-9_-]+")
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")


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
        name = function.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
            raise bad(
                f"{path}.function.name",
                "must be 1-128 characters of letters, digits, '_' and '-'",
            )
        if name in seen:
            raise bad(f"{path}.function.name", f"duplicate tool name {name!r}")
        seen.add(name)
        converted: dict[str, Any] = {"name": name}
        description = function.get("description")
        if description is not None and not isinstance(description, str):
            raise bad(f"{path}.function.description", "must be a string")
        if description:
            converted["description"] = description
        converted["input_schema"] = _input_schema(function.get("parameters"), path)
        out.append(converted)
    return out


def _input_schema(parameters: Any, path: str) -> dict[str, Any]:
    if parameters is None or parameters == {}:
        return {"type": "object", "properties": {}}
    if not isinstance(parameters, dict):
        raise bad(f"{path}.function.parameters", "must be a JSON Schema object")
    schema_type = parameters.get("type")
    if schema_type is None:
        return {"type": "object", **parameters}
    if schema_type != "object":
        raise bad(
            f"{path}.function.parameters.type",
            f"the parameters schema must be of type 'object', not {schema_type!r}",
        )
    return parameters


def read_tool_choice(
    value: Any, tools: list[dict[str, Any]], body: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    parallel = body.get("parallel_tool_calls")
    if parallel is not None and not isinstance(parallel, bool):
        raise bad("parallel_tool_calls", f"must be a boolean, got {type_name(parallel)}")
    names = {tool["name"] for tool in tools}
    choice: dict[str, Any] | None
    if value is None:
        choice = None
    elif value in ("none", "auto"):
        choice = {"type": value}
    elif value == "required":
        choice = {"type": "any"}
    elif isinstance(value, str):
        raise bad("tool_choice", "must be 'none', 'auto', 'required' or a named function")
    elif isinstance(value, dict):
        ctype = value.get("type")
        if ctype == "function":
            function = value.get("function")
            name = function.get("name") if isinstance(function, dict) else None
            if not isinstance(name, str):
                raise bad("tool_choice.function.name", "required: the name of a function tool")
            if name not in names:
                raise bad("tool_choice.function.name", f"no tool named {name!r} in tools")
            choice = {"type": "tool", "name": name}
        elif ctype == "allowed_tools":
            tools, choice = _allowed_tools(value.get("allowed_tools"), tools)
        else:
            raise bad("tool_choice.type", f"unsupported tool choice type {ctype!r}")
    else:
        raise bad("tool_choice", f"must be a string or an object, got {type_name(value)}")
    if not tools:
        if choice is not None and choice["type"] in ("any", "tool"):
            raise bad("tool_choice", "requires tools")
        return tools, None
    if parallel is False and (choice is None or choice["type"] != "none"):
        choice = {"type": "auto"} if choice is None else dict(choice)
        choice["disable_parallel_tool_use"] = True
    return tools, choice


def _allowed_tools(
    value: Any, tools: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    path = "tool_choice.allowed_tools"
    if not isinstance(value, dict):
        raise bad(path, "required: an object with mode and tools")
    mode = value.get("mode")
    if mode not in ("auto", "required"):
        raise bad(f"{path}.mode", "must be 'auto' or 'required'")
    allowed = value.get("tools")
    if not isinstance(allowed, list):
        raise bad(f"{path}.tools", "must be an array")
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
    kept = [tool for tool in tools if tool["name"] in keep]
    return kept, {"type": "auto" if mode == "auto" else "any"}


def tool_id(call_id: str) -> str:
    return call_id if _TOOL_ID.fullmatch(call_id) else hashed_id(call_id)


def hashed_id(seed: str) -> str:
    return "call_" + hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def read_arguments(value: Any, path: str) -> dict[str, Any]:
    if value is None:
        raise bad(path, "required: a JSON object as a string")
    if isinstance(value, dict):
        return value
    if not isinstance(value, str):
        raise bad(path, f"must be a string holding a JSON object, got {type_name(value)}")
    if not value.strip():
        return {}
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise bad(path, f"is not valid JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise bad(path, f"must be a JSON object, got {type_name(parsed)}")
    if nested_deeper_than(parsed, MAX_EMBEDDED_DEPTH):  # its answer could not be written
        raise bad(path, f"is nested deeper than {MAX_EMBEDDED_DEPTH} levels")
    return parsed
