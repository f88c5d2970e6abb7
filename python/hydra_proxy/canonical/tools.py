"""Tools of the canonical request: ids, schemas and tool choice, read and written.

Readers: tool names must be 1-128 characters of ``[A-Za-z0-9_-]`` (`tool_name`,
Anthropic's rule; a renamed tool could not be mapped back in the reply). The
``tool_choice`` strings of both OpenAI APIs: ``"none"`` -> none, ``"auto"`` -> auto,
``"required"`` -> any (`openai_tool_choice`). A parameters
schema that is missing or ``{}`` -> ``{"type": "object", "properties": {}}``, one without
``type`` gets ``"type": "object"``, another ``type`` is a 400 (`input_schema`). A forced
tool choice without tools is a 400, ``none``/``auto`` without tools are dropped, and
``parallel_tool_calls: false`` -> ``disable_parallel_tool_use: true`` (on an auto choice
when none was given; not with ``none``) (`settle_tool_choice`). Tool call ids are kept
when they match Anthropic's ``[A-Za-z0-9_-]+``; any other id is replaced by ``call_`` + 24
hex digits of its SHA-256 (`tool_id`, `hashed_id`).

Writers: a tool with a ``type`` other than ``custom`` and no ``input_schema`` is an
Anthropic server tool (web search, code execution, bash, text editor, computer, MCP
toolset...), and a non-empty ``mcp_servers`` is the server-side MCP connector: no other
upstream can run them, so both are a 400 naming them (dropping them would hide it).
``tool_choice`` is read by `read_tool_choice`; each writer maps its type.

Tool call arguments (a JSON object as a string, as both OpenAI APIs carry them) and the
canonical ``tool_use`` ``input`` object, both ways.

`tool_arguments` writes an input as arguments. Two readers go the other way:
`read_arguments`, for a client's own history, is strict (what is not a JSON object is a
400, so the client learns of it); `tool_input_from_arguments`, for what an upstream model
produced, loses nothing (see there).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

import orjson

from ..json.depth import MAX_EMBEDDED_DEPTH, nested_deeper_than
from .fields import bad, required_string, type_name

__all__ = [
    "RAW_ARGUMENTS_KEY",
    "TOOL_NAME",
    "TOOL_NAME_RULE",
    "ObjectChoice",
    "allowed_tools",
    "custom_tools",
    "hashed_id",
    "input_schema",
    "openai_tool_choice",
    "read_arguments",
    "read_tool_choice",
    "refuse_mcp_servers",
    "settle_tool_choice",
    "tool_arguments",
    "tool_id",
    "tool_input_from_arguments",
    "tool_name",
]


log = logging.getLogger(__name__)

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,128}")
TOOL_NAME_RULE = "must be 1-128 characters of letters, digits, '_' and '-'"
_TOOL_ID = re.compile(r"[A-Za-z0-9_-]+")


# -- readers


def tool_name(value: Any, path: str, field: str = "name") -> str:
    """A client tool's name (field `field` of the object at `path`), as Anthropic takes it."""
    if not isinstance(value, str) or not TOOL_NAME.fullmatch(value):
        raise bad(f"{path}.{field}", TOOL_NAME_RULE)
    return value


def tool_id(call_id: str) -> str:
    """The id a client's tool call is sent with."""
    return call_id if _TOOL_ID.fullmatch(call_id) else hashed_id(call_id)


def hashed_id(seed: str) -> str:
    return "call_" + hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def input_schema(parameters: Any, path: str, field: str = "parameters") -> dict[str, Any]:
    """A tool's parameters schema (field `field` of the tool at `path`) as an Anthropic
    ``input_schema``."""
    if parameters is None or parameters == {}:
        return {"type": "object", "properties": {}}
    if not isinstance(parameters, dict):
        raise bad(f"{path}.{field}", "must be a JSON Schema object")
    schema_type = parameters.get("type")
    if schema_type is None:
        return {"type": "object", **parameters}
    if schema_type != "object":
        raise bad(
            f"{path}.{field}.type",
            f"the parameters schema must be of type 'object', not {schema_type!r}",
        )
    return parameters


ObjectChoice = Callable[[dict[str, Any]], tuple[list[dict[str, Any]], dict[str, Any]]]
"""An object ``tool_choice`` -> (the tools to send, the Anthropic tool_choice)."""


def openai_tool_choice(
    value: Any,
    parallel: Any,
    tools: list[dict[str, Any]],
    object_choice: ObjectChoice,
    *,
    or_else: str,
    needs: str,
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The tools and the Anthropic tool_choice of an OpenAI ``tool_choice`` and
    ``parallel_tool_calls``: the strings here, an object by the protocol's `object_choice`
    (`or_else` names what it takes, `needs` says what a forced choice needs, for the 400s),
    then `settle_tool_choice`."""
    if parallel is not None and not isinstance(parallel, bool):
        raise bad("parallel_tool_calls", f"must be a boolean, got {type_name(parallel)}")
    choice: dict[str, Any] | None
    if isinstance(value, dict):
        tools, choice = object_choice(value)
    elif value is None:
        choice = None
    elif not isinstance(value, str):
        raise bad("tool_choice", f"must be a string or an object, got {type_name(value)}")
    elif value in ("none", "auto"):
        choice = {"type": value}
    elif value == "required":
        choice = {"type": "any"}
    else:
        raise bad("tool_choice", f"must be 'none', 'auto', 'required' or {or_else}")
    return settle_tool_choice(tools, choice, parallel, needs)


def allowed_tools(value: dict[str, Any], path: str) -> tuple[dict[str, Any], list[Any]]:
    """The Anthropic tool_choice of an OpenAI ``allowed_tools`` object (at `path`: mode
    auto -> auto, required -> any) and its list of allowed tools."""
    mode = value.get("mode")
    if mode not in ("auto", "required"):
        raise bad(f"{path}.mode", "must be 'auto' or 'required'")
    allowed = value.get("tools")
    if not isinstance(allowed, list):
        raise bad(f"{path}.tools", "must be an array")
    return {"type": "auto" if mode == "auto" else "any"}, allowed


def settle_tool_choice(
    tools: list[dict[str, Any]], choice: dict[str, Any] | None, parallel: bool | None, needs: str
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The tools and the Anthropic tool_choice to send (`needs`: the 400 of a forced
    choice without tools, "requires ...")."""
    if not tools:
        if choice is not None and choice["type"] in ("any", "tool"):
            raise bad("tool_choice", needs)
        return tools, None
    if parallel is False and (choice is None or choice["type"] != "none"):
        choice = {"type": "auto"} if choice is None else dict(choice)
        choice["disable_parallel_tool_use"] = True
    return tools, choice


# -- writers


def custom_tools(value: Any, upstream: str) -> list[tuple[str, Any, dict[str, Any], str]]:
    """(name, description as given, input schema, path) of each of the request's tools;
    server tools are a 400 (`upstream` names who cannot run them). Plain tuples in a list:
    requests carry dozens of tools, read on every request."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise bad("tools", "must be a list of tools")
    tools = []
    for i, tool in enumerate(value):
        if not isinstance(tool, dict):
            raise bad(f"tools.{i}", "tool must be an object")
        ttype = tool.get("type")
        name = tool.get("name")
        schema = tool.get("input_schema")
        if ttype not in (None, "custom") and schema is None:
            raise bad(
                f"tools.{i}",
                f"tool {name!r} is an Anthropic server tool (type {ttype!r}); {upstream} "
                "cannot run server tools. Remove it, or route this model to Anthropic.",
            )
        if not isinstance(name, str) or not name:
            raise bad(f"tools.{i}.name", "tool needs a name")
        if not isinstance(schema, dict):
            raise bad(f"tools.{i}.input_schema", f"tool {name!r} needs an input_schema object")
        tools.append((name, tool.get("description"), schema, f"tools.{i}"))
    return tools


def refuse_mcp_servers(value: Any, upstream: str) -> None:
    if isinstance(value, list) and value:
        raise bad(
            "mcp_servers",
            f"{upstream} cannot connect to MCP servers (a server-side Anthropic feature); "
            "define the MCP tools on the client instead",
        )


def read_tool_choice(value: Any, names: Collection[str]) -> tuple[str | None, str | None, bool]:
    """(type, tool name, parallel calls off) of the request's ``tool_choice``.

    The type is auto, any, none or tool (with the name of one of `names`, checked when
    there are any); None when there is no choice, or one of a type no writer maps.
    """
    if value is None:
        return None, None, False
    if not isinstance(value, dict):
        raise bad("tool_choice", "must be an object")
    parallel_off = value.get("disable_parallel_tool_use") is True
    ctype = value.get("type")
    if ctype in ("auto", "any", "none"):
        return ctype, None, parallel_off
    if ctype == "tool":
        name = required_string(
            value.get("name"), "tool_choice", "name", "tool_choice of type tool needs a name"
        )
        if names and name not in names:
            raise bad("tool_choice.name", f"no tool named {name!r} in tools")
        return ctype, name, parallel_off
    log.debug("ignored tool_choice of type %r", ctype)
    return None, None, parallel_off


# The key under which unparseable tool call arguments are kept (see below).
RAW_ARGUMENTS_KEY = "_raw_arguments"


def tool_arguments(value: Any) -> str:
    """A tool_use `input` as the compact JSON string Chat carries in `arguments`."""
    if value is None or value == {}:
        return "{}"
    try:
        return orjson.dumps(value).decode("utf-8")
    except TypeError:  # orjson refuses integers beyond 64 bits
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def tool_input_from_arguments(arguments: Any) -> dict[str, Any]:
    """A tool call's `arguments` (normally a JSON string) as an Anthropic `input` object.

    A JSON object string -> that object; empty, missing, ``null`` or ``"null"`` -> ``{}``;
    an object given directly (some servers) -> as is; a JSON string that itself holds an
    object (double-encoded, some servers) -> that object; anything else (invalid JSON,
    truncated at max_tokens, a non-object) -> ``{RAW_ARGUMENTS_KEY: "<the raw text>"}``,
    so nothing is lost: the client's tool validation reports the problem to the model,
    which sees its own arguments and can retry.
    """
    if arguments is None:
        return {}
    if isinstance(arguments, dict):
        return arguments
    if not isinstance(arguments, str):
        return {RAW_ARGUMENTS_KEY: orjson.dumps(arguments).decode("utf-8")}
    if not arguments.strip():
        return {}
    try:
        value = orjson.loads(arguments)
        if isinstance(value, str):
            value = orjson.loads(value)
    except orjson.JSONDecodeError:
        return {RAW_ARGUMENTS_KEY: arguments}
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    return {RAW_ARGUMENTS_KEY: arguments}


def read_arguments(value: Any, path: str) -> dict[str, Any]:
    """A client's tool call `arguments` (at `path`) as an input: a JSON object string,
    ``""``/whitespace -> ``{}``, or an object given directly."""
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


# -- web search, the server tool some upstreams run (canonical.web_search): found here, so
# that routing and every writer can ask without the rest of it
WEB_SEARCH_TYPE_PREFIX = "web_search_"


def is_web_search(tool: object) -> bool:
    """Whether a canonical tool definition is Anthropic's web search."""
    if not isinstance(tool, Mapping):
        return False
    ttype = tool.get("type")
    return isinstance(ttype, str) and ttype.startswith(WEB_SEARCH_TYPE_PREFIX)


def web_search_tool(tools: object) -> Mapping[str, Any] | None:
    """The canonical request's web search tool (None: it has none)."""
    if isinstance(tools, list):
        for tool in tools:
            if isinstance(tool, Mapping) and is_web_search(tool):
                found: Mapping[str, Any] = tool
                return found
    return None


def without_web_search(tools: list[Any]) -> list[Any]:
    return [tool for tool in tools if not is_web_search(tool)]
