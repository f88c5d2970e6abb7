"""Responses tools <-> Anthropic tools: definitions, tool choice, and names both ways.

Pure translation, no I/O. Decisions (each covered by a test):

Function tools
  ``{"type": "function", name, description, parameters, strict}`` -> ``{name, description,
  input_schema}``: missing/empty ``parameters`` -> ``{"type": "object", "properties": {}}``,
  a schema without ``type`` gets ``"type": "object"``, another ``type`` is a 400; an empty
  or null description is omitted; ``strict``, ``defer_loading``, ``output_schema`` are
  dropped (Anthropic has no such switches). Names must be 1-128 characters of
  ``[A-Za-z0-9_-]`` (Anthropic's rule) and unique.

Namespace tools
  ``{"type": "namespace", name, description, tools: [...]}`` (Codex's ``multi_agent_v1``)
  are flattened: each inner function/custom tool becomes a top-level tool named
  ``<namespace>__<name>`` (`NAMESPACE_SEPARATOR`; both halves are ``[A-Za-z0-9_-]``, so the
  result passes Anthropic's and OpenAI's tool-name rules), its description prefixed with
  the namespace's. A flattened name longer than `MAX_FLAT_NAME` (64, OpenAI's limit for
  function names, so the name also survives a Chat upstream) or equal to another tool's
  name is cut and given ``_`` + 8 hex digits of its SHA-256. `ToolNames` maps every sent
  name back to ``(name, namespace)``; a call is never un-flattened by splitting the
  string, only through that table.

Custom (free-form) tools
  ``{"type": "custom", name, description, format}`` (``apply_patch`` style) -> a tool whose
  input is one string: `CUSTOM_INPUT_SCHEMA`. A ``grammar`` format's syntax and definition
  are appended to the description (the model must follow it; Anthropic cannot enforce
  it). On the way back a call's ``input["input"]`` string is the ``custom_tool_call``
  ``input`` (`custom_input`).

Server tools
  Every other tool type (``web_search``, ``file_search``, ``code_interpreter``,
  ``image_generation``, ``computer_use_preview``, ``mcp``, ``local_shell``, ``shell``,
  ``apply_patch``, ``tool_search``...) runs at OpenAI; no upstream of this proxy can run
  it. It is left out of the upstream request and its type is REPORTED in
  `ToolSet.dropped` (in request order, once each) so the server logs it once; Codex always
  sends ``web_search`` and keeps working without it.

Tool choice
  ``"none"`` -> ``{"type": "none"}``, ``"auto"`` -> auto, ``"required"`` -> any,
  ``{"type": "function"|"custom", name[, namespace]}`` -> that tool, ``allowed_tools`` ->
  only those tools are sent, with auto/any for its mode (a ``namespace`` entry allows all
  its tools; entries naming server tools are ignored: those tools are not sent anyway); a choice forcing a server tool
  (``{"type": "web_search_preview"}``, ``mcp``...) is a 400. ``none``/``auto`` without tools
  are dropped, a forced choice without tools is a 400. ``parallel_tool_calls: false`` ->
  ``disable_parallel_tool_use: true`` (not with ``none``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..errors import ProxyError, invalid_request

__all__ = [
    "CUSTOM_INPUT_KEY",
    "CUSTOM_INPUT_SCHEMA",
    "MAX_FLAT_NAME",
    "NAMESPACE_SEPARATOR",
    "ToolNames",
    "ToolOrigin",
    "ToolSet",
    "custom_input",
    "flatten",
    "read_tool_choice",
    "read_tools",
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
_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")
_CALLABLE = ("function", "custom")


@dataclass(frozen=True)
class ToolOrigin:
    """What a tool name sent upstream stands for in the client's request."""

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


@dataclass
class ToolSet:
    tools: list[dict[str, Any]]  # Anthropic tool definitions
    names: ToolNames
    dropped: list[str]  # server tool types left out, in request order, once each


def flatten(namespace: str, name: str, taken: frozenset[str] | set[str] = frozenset()) -> str:
    """`<namespace>__<name>`, shortened with a hash when too long or already taken."""
    flat = namespace + NAMESPACE_SEPARATOR + name
    if len(flat) <= MAX_FLAT_NAME and flat not in taken:
        return flat
    digest = hashlib.sha256(flat.encode("utf-8")).hexdigest()[:8]
    return flat[: MAX_FLAT_NAME - 9] + "_" + digest


def custom_input(tool_input: Any) -> str:
    """A tool_use `input` of a custom tool as the `custom_tool_call` input string."""
    if isinstance(tool_input, dict):
        value = tool_input.get(CUSTOM_INPUT_KEY)
        if isinstance(value, str):
            return value
        if not tool_input:
            return ""
    return orjson.dumps(tool_input).decode("utf-8")


def _bad(path: str, problem: str) -> ProxyError:
    return invalid_request(f"{path}: {problem}", path)


def read_tools(value: Any) -> ToolSet:
    """The Anthropic tools for a Responses `tools` array, the name table, the dropped types."""
    names = ToolNames()
    if value is None:
        return ToolSet([], names, [])
    if not isinstance(value, list):
        raise _bad("tools", "must be an array")
    dropped: dict[str, None] = {}  # ordered, and a lookup that does not scan a list
    # (path, tool, namespace, namespace description); plain tools first claim their names.
    entries: list[tuple[str, dict[str, Any], str | None, str | None]] = []
    for i, tool in enumerate(value):
        path = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise _bad(path, "must be an object")
        ttype = tool.get("type")
        if not isinstance(ttype, str) or not ttype:
            raise _bad(f"{path}.type", "required")
        if ttype in _CALLABLE:
            entries.append((path, tool, None, None))
        elif ttype == "namespace":
            ns_name = _name(tool, path)
            description = tool.get("description")
            if description is not None and not isinstance(description, str):
                raise _bad(f"{path}.description", "must be a string")
            inner = tool.get("tools")
            if not isinstance(inner, list):
                raise _bad(f"{path}.tools", "required: an array of function or custom tools")
            for j, sub in enumerate(inner):
                sub_path = f"{path}.tools[{j}]"
                if not isinstance(sub, dict):
                    raise _bad(sub_path, "must be an object")
                if sub.get("type") not in _CALLABLE:
                    raise _bad(f"{sub_path}.type", "a namespace holds function and custom tools")
                entries.append((sub_path, sub, ns_name, description))
        else:
            dropped.setdefault(ttype)

    taken: set[str] = set()
    out: list[dict[str, Any]] = []
    plain = [e for e in entries if e[2] is None]
    for path, tool, _, _ in plain:
        name = _name(tool, path)
        if name in taken:
            raise _bad(f"{path}.name", f"duplicate tool name {name!r}")
        taken.add(name)
    for path, tool, namespace, ns_description in entries:  # in the client's order
        name = _name(tool, path)
        if namespace is None:
            sent = name
        else:
            if (namespace, name) in names.by_origin:
                raise _bad(f"{path}.name", f"duplicate tool name {name!r} in namespace")
            sent = flatten(namespace, name, taken)
            taken.add(sent)
        custom = tool["type"] == "custom"
        names.add(sent, ToolOrigin(name, namespace, custom))
        out.append(_convert(tool, path, sent, ns_description, custom))
    return ToolSet(out, names, list(dropped))


def _name(tool: dict[str, Any], path: str) -> str:
    name = tool.get("name")
    if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
        raise _bad(f"{path}.name", "must be 1-128 characters of letters, digits, '_' and '-'")
    return name


def _convert(
    tool: dict[str, Any], path: str, sent: str, ns_description: str | None, custom: bool
) -> dict[str, Any]:
    description = tool.get("description")
    if description is not None and not isinstance(description, str):
        raise _bad(f"{path}.description", "must be a string")
    pieces = [p for p in (ns_description, description) if p and p.strip()]
    schema: dict[str, Any]
    if custom:
        note = _grammar_note(tool.get("format"), path)
        if note:
            pieces.append(note)
        schema = CUSTOM_INPUT_SCHEMA
    else:
        schema = _input_schema(tool.get("parameters"), path)
    converted: dict[str, Any] = {"name": sent}
    if pieces:
        converted["description"] = "\n\n".join(pieces)
    converted["input_schema"] = schema
    return converted


def _grammar_note(value: Any, path: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _bad(f"{path}.format", "must be an object")
    ftype = value.get("type")
    if ftype == "text":
        return None
    if ftype != "grammar":
        raise _bad(f"{path}.format.type", "must be 'text' or 'grammar'")
    syntax = value.get("syntax")
    definition = value.get("definition")
    if syntax not in ("lark", "regex"):
        raise _bad(f"{path}.format.syntax", "must be 'lark' or 'regex'")
    if not isinstance(definition, str) or not definition.strip():
        raise _bad(f"{path}.format.definition", "required: the grammar")
    return f"The input must match this {syntax} grammar:\n{definition}"


def _input_schema(parameters: Any, path: str) -> dict[str, Any]:
    if parameters is None or parameters == {}:
        return {"type": "object", "properties": {}}
    if not isinstance(parameters, dict):
        raise _bad(f"{path}.parameters", "must be a JSON Schema object")
    schema_type = parameters.get("type")
    if schema_type is None:
        return {"type": "object", **parameters}
    if schema_type != "object":
        raise _bad(
            f"{path}.parameters.type",
            f"the parameters schema must be of type 'object', not {schema_type!r}",
        )
    return parameters


def read_tool_choice(
    value: Any, toolset: ToolSet, parallel: Any
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The tools to send and the Anthropic `tool_choice` (None: leave it out)."""
    if parallel is not None and not isinstance(parallel, bool):
        raise _bad("parallel_tool_calls", "must be a boolean")
    tools = toolset.tools
    choice: dict[str, Any] | None
    if value is None:
        choice = None
    elif value in ("none", "auto"):
        choice = {"type": value}
    elif value == "required":
        choice = {"type": "any"}
    elif isinstance(value, str):
        raise _bad("tool_choice", "must be 'none', 'auto', 'required' or an object")
    elif isinstance(value, dict):
        ctype = value.get("type")
        if ctype in _CALLABLE:
            choice = {"type": "tool", "name": _chosen(value, toolset, "tool_choice")}
        elif ctype == "allowed_tools":
            tools, choice = _allowed_tools(value, toolset)
        elif isinstance(ctype, str) and ctype:
            raise _bad(
                "tool_choice.type",
                f"{ctype!r} is a server tool this proxy cannot run; "
                "use auto, required, or a function tool",
            )
        else:
            raise _bad("tool_choice.type", "required")
    else:
        raise _bad("tool_choice", "must be a string or an object")
    if not tools:
        if choice is not None and choice["type"] in ("any", "tool"):
            raise _bad("tool_choice", "requires function or custom tools")
        return tools, None
    if parallel is False and (choice is None or choice["type"] != "none"):
        choice = {"type": "auto"} if choice is None else dict(choice)
        choice["disable_parallel_tool_use"] = True
    return tools, choice


def _chosen(value: dict[str, Any], toolset: ToolSet, path: str) -> str:
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise _bad(f"{path}.name", "required: the name of a function or custom tool")
    namespace = value.get("namespace")
    if namespace is not None and not isinstance(namespace, str):
        raise _bad(f"{path}.namespace", "must be a string")
    sent = toolset.names.by_origin.get((namespace, name))
    if sent is None:
        raise _bad(f"{path}.name", f"no tool named {name!r} in tools")
    return sent


def _allowed_tools(
    value: dict[str, Any], toolset: ToolSet
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    path = "tool_choice"
    mode = value.get("mode")
    if mode not in ("auto", "required"):
        raise _bad(f"{path}.mode", "must be 'auto' or 'required'")
    allowed = value.get("tools")
    if not isinstance(allowed, list):
        raise _bad(f"{path}.tools", "must be an array")
    keep: set[str] = set()
    for i, entry in enumerate(allowed):
        entry_path = f"{path}.tools[{i}]"
        if not isinstance(entry, dict):
            raise _bad(entry_path, "must be an object")
        if entry.get("type") in _CALLABLE:
            keep.add(_chosen(entry, toolset, entry_path))
        elif entry.get("type") == "namespace":
            name = entry.get("name")
            inner = [s for s, o in toolset.names.by_sent.items() if o.namespace == name]
            if not inner:
                raise _bad(f"{entry_path}.name", f"no namespace named {name!r} in tools")
            keep.update(inner)
    kept = [tool for tool in toolset.tools if tool["name"] in keep]
    return kept, {"type": "auto" if mode == "auto" else "any"}
