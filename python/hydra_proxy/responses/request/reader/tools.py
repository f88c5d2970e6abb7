"""Responses tools and tool choice -> canonical tools and tool_choice.

Function tools
  ``{"type": "function", name, description, parameters, strict}`` -> ``{name, description,
  input_schema}`` (the schema as `canonical.tools.input_schema` makes it); an empty or null
  description is omitted; ``strict``, ``defer_loading``, ``output_schema`` are dropped
  (Anthropic has no such switches). Names must be 1-128 characters of ``[A-Za-z0-9_-]``
  (Anthropic's rule) and unique.

Namespace tools
  ``{"type": "namespace", name, description, tools: [...]}`` (Codex's ``multi_agent_v1``)
  are flattened (`responses.tools.flatten`): each inner function/custom tool becomes a
  top-level tool, its description prefixed with the namespace's, and `ToolSet.names`
  maps every sent name back to ``(name, namespace)``.

Custom (free-form) tools
  ``{"type": "custom", name, description, format}`` (``apply_patch`` style) -> a tool whose
  input is one string: `responses.tools.CUSTOM_INPUT_SCHEMA`. A ``grammar`` format's syntax
  and definition are appended to the description (the model must follow it; Anthropic
  cannot enforce it).

Server tools
  Every other tool type (``web_search``, ``file_search``, ``code_interpreter``,
  ``image_generation``, ``computer_use_preview``, ``mcp``, ``local_shell``, ``shell``,
  ``apply_patch``, ``tool_search``...) runs at OpenAI. It is left out of the canonical
  request and its type is REPORTED in `ToolSet.dropped` (in request order, once each):
  the server carries ``web_search`` / ``web_search_preview`` on as the canonical web search
  tool (`canonical.web_search`: run by the upstreams that can, refused by the others) and
  logs the rest once.

Tool choice
  ``"none"`` -> ``{"type": "none"}``, ``"auto"`` -> auto, ``"required"`` -> any,
  ``{"type": "function"|"custom", name[, namespace]}`` -> that tool, ``allowed_tools`` ->
  only those tools are sent, with auto/any for its mode (a ``namespace`` entry allows all
  its tools; entries naming server tools are ignored: those tools are not sent anyway); a
  choice forcing a server tool (``{"type": "web_search_preview"}``, ``mcp``...) is a 400.
  Without tools, and with ``parallel_tool_calls``, as `canonical.tools.settle_tool_choice`
  says.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ....canonical.fields import bad, optional_string
from ....canonical.tools import (
    allowed_tools,
    input_schema,
    openai_tool_choice,
    tool_name,
)
from ...tools import CUSTOM_INPUT_SCHEMA, ToolNames, ToolOrigin, flatten

__all__ = ["ToolSet", "read_tool_choice", "read_tools"]

_CALLABLE = ("function", "custom")


@dataclass
class ToolSet:
    tools: list[dict[str, Any]]  # Anthropic tool definitions
    names: ToolNames
    dropped: list[str]  # server tool types left out, in request order, once each


# A tool to read: (path, tool, namespace, namespace description).
_Entry = tuple[str, dict[str, Any], str | None, str | None]


def _namespace_entries(tool: dict[str, Any], path: str) -> list[_Entry]:
    """The function and custom tools a namespace holds, each with its namespace."""
    ns_name = tool_name(tool.get("name"), path)
    description = optional_string(tool.get("description"), path, "description")
    inner = tool.get("tools")
    if not isinstance(inner, list):
        raise bad(f"{path}.tools", "required: an array of function or custom tools")
    entries: list[_Entry] = []
    for j, sub in enumerate(inner):
        sub_path = f"{path}.tools[{j}]"
        if not isinstance(sub, dict):
            raise bad(sub_path, "must be an object")
        if sub.get("type") not in _CALLABLE:
            raise bad(f"{sub_path}.type", "a namespace holds function and custom tools")
        entries.append((sub_path, sub, ns_name, description))
    return entries


def read_tools(value: Any) -> ToolSet:
    """The Anthropic tools for a Responses `tools` array, the name table, the dropped types."""
    names = ToolNames()
    if value is None:
        return ToolSet([], names, [])
    if not isinstance(value, list):
        raise bad("tools", "must be an array")
    dropped: dict[str, None] = {}  # ordered, and a lookup that does not scan a list
    # Plain tools first claim their names.
    entries: list[_Entry] = []
    for i, tool in enumerate(value):
        path = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise bad(path, "must be an object")
        ttype = tool.get("type")
        if not isinstance(ttype, str) or not ttype:
            raise bad(f"{path}.type", "required")
        if ttype in _CALLABLE:
            entries.append((path, tool, None, None))
        elif ttype == "namespace":
            entries.extend(_namespace_entries(tool, path))
        else:
            dropped.setdefault(ttype)

    taken: set[str] = set()
    out: list[dict[str, Any]] = []
    plain = [e for e in entries if e[2] is None]
    for path, tool, _, _ in plain:
        name = tool_name(tool.get("name"), path)
        if name in taken:
            raise bad(f"{path}.name", f"duplicate tool name {name!r}")
        taken.add(name)
    for path, tool, namespace, ns_description in entries:  # in the client's order
        name = tool_name(tool.get("name"), path)
        if namespace is None:
            sent = name
        else:
            if (namespace, name) in names.by_origin:
                raise bad(f"{path}.name", f"duplicate tool name {name!r} in namespace")
            sent = flatten(namespace, name, taken)
            taken.add(sent)
        custom = tool["type"] == "custom"
        names.add(sent, ToolOrigin(name, namespace, custom))
        out.append(_convert(tool, path, sent, ns_description, custom))
    return ToolSet(out, names, list(dropped))


def _convert(
    tool: dict[str, Any], path: str, sent: str, ns_description: str | None, custom: bool
) -> dict[str, Any]:
    description = tool.get("description")  # checked inline: this runs for every tool
    if description is not None and not isinstance(description, str):
        raise bad(f"{path}.description", "must be a string")
    pieces = [p for p in (ns_description, description) if p and p.strip()]
    schema: dict[str, Any]
    if custom:
        note = _grammar_note(tool.get("format"), path)
        if note:
            pieces.append(note)
        schema = CUSTOM_INPUT_SCHEMA
    else:
        schema = input_schema(tool.get("parameters"), path)
    converted: dict[str, Any] = {"name": sent}
    if pieces:
        converted["description"] = "\n\n".join(pieces)
    converted["input_schema"] = schema
    return converted


def _grammar_note(value: Any, path: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise bad(f"{path}.format", "must be an object")
    ftype = value.get("type")
    if ftype == "text":
        return None
    if ftype != "grammar":
        raise bad(f"{path}.format.type", "must be 'text' or 'grammar'")
    syntax = value.get("syntax")
    definition = value.get("definition")
    if syntax not in ("lark", "regex"):
        raise bad(f"{path}.format.syntax", "must be 'lark' or 'regex'")
    if not isinstance(definition, str) or not definition.strip():
        raise bad(f"{path}.format.definition", "required: the grammar")
    return f"The input must match this {syntax} grammar:\n{definition}"


def read_tool_choice(
    value: Any, toolset: ToolSet, parallel_value: Any
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The tools to send and the Anthropic `tool_choice` (None: leave it out)."""
    return openai_tool_choice(
        value,
        parallel_value,
        toolset.tools,
        lambda choice: _object_choice(choice, toolset),
        or_else="an object",
        needs="requires function or custom tools",
    )


def _object_choice(
    value: dict[str, Any], toolset: ToolSet
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    ctype = value.get("type")
    if ctype in _CALLABLE:
        return toolset.tools, {"type": "tool", "name": _chosen(value, toolset, "tool_choice")}
    if ctype == "allowed_tools":
        return _allowed_tools(value, toolset)
    if isinstance(ctype, str) and ctype:
        raise bad(
            "tool_choice.type",
            f"{ctype!r} is a server tool this proxy cannot run; "
            "use auto, required, or a function tool",
        )
    raise bad("tool_choice.type", "required")


def _chosen(value: dict[str, Any], toolset: ToolSet, path: str) -> str:
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise bad(f"{path}.name", "required: the name of a function or custom tool")
    namespace = optional_string(value.get("namespace"), path, "namespace")
    sent = toolset.names.by_origin.get((namespace, name))
    if sent is None:
        raise bad(f"{path}.name", f"no tool named {name!r} in tools")
    return sent


def _allowed_tools(
    value: dict[str, Any], toolset: ToolSet
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    path = "tool_choice"
    choice, allowed = allowed_tools(value, path)
    keep: set[str] = set()
    for i, entry in enumerate(allowed):
        entry_path = f"{path}.tools[{i}]"
        if not isinstance(entry, dict):
            raise bad(entry_path, "must be an object")
        if entry.get("type") in _CALLABLE:
            keep.add(_chosen(entry, toolset, entry_path))
        elif entry.get("type") == "namespace":
            name = entry.get("name")
            inner = [s for s, o in toolset.names.by_sent.items() if o.namespace == name]
            if not inner:
                raise bad(f"{entry_path}.name", f"no namespace named {name!r} in tools")
            keep.update(inner)
    return [tool for tool in toolset.tools if tool["name"] in keep], choice
