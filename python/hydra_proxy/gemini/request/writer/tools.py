"""Tools and tool choice -> Gemini ``tools`` and ``toolConfig``.

Custom tools -> one ``functionDeclarations`` tool; parameters through
hydra_proxy.gemini.schema (none when the tool takes no arguments); an empty description
is left out. Anthropic server tools and ``mcp_servers`` are refused (`canonical.tools`),
but web search, which the writer turns into ``google_search`` grounding.
``tool_choice`` auto/any/tool/none -> ``functionCallingConfig.mode`` AUTO / ANY / ANY +
``allowedFunctionNames`` / NONE, only when tools are sent; ``disable_parallel_tool_use``
has no Gemini equivalent and is ignored. A tool's ``strict`` is dropped: Gemini's
VALIDATED mode is a preview some models and Vertex reject.
"""

from __future__ import annotations

from typing import Any

from ....canonical.fields import bad
from ....canonical.tools import custom_tools, read_tool_choice
from ...schema import NodeBudget, SchemaTooLarge, function_parameters

__all__ = ["UPSTREAM", "function_declarations", "tool_config"]

UPSTREAM = "Gemini"  # how a refusal names the upstream
_MODES = {"auto": "AUTO", "any": "ANY", "none": "NONE", "tool": "ANY"}


def function_declarations(value: Any) -> list[dict[str, Any]]:
    declarations: list[dict[str, Any]] = []
    budget = NodeBudget()  # one for every tool: a bomb in each costs no more than one
    for name, description, schema, path in custom_tools(value, UPSTREAM):
        declaration: dict[str, Any] = {"name": name}
        if isinstance(description, str) and description:
            declaration["description"] = description
        try:
            parameters = function_parameters(schema, budget)
        except SchemaTooLarge as exc:
            raise bad(f"{path}.input_schema", f"tool {name!r}: {exc}") from exc
        if parameters is not None:
            declaration["parameters"] = parameters
        declarations.append(declaration)
    return declarations


def tool_config(value: Any, declarations: list[dict[str, Any]]) -> dict[str, Any] | None:
    if value is None:
        return None
    ctype, name, _ = read_tool_choice(value, {d["name"] for d in declarations})
    if ctype is None:
        return None
    config: dict[str, Any] = {"mode": _MODES[ctype]}
    if name is not None:
        config["allowedFunctionNames"] = [name]
    return {"functionCallingConfig": config}
