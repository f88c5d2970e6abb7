"""The Responses request writer's entry: the canonical request (an Anthropic Messages
request) -> an OpenAI Responses request (the ``responses`` provider kind).

For models that only serve the Responses API (the gpt-5.x-codex family). Pure
translation, no I/O. `responses_request_from_messages` returns the Responses body or
raises `ProxyError` (400 ``invalid_request_error``) whose message starts with the
offending field path in Anthropic's notation (``messages.3.content.1.source``); what every
writer reads the same way (system text, content blocks, tools, tool choice, effort,
output format) is `canonical`'s, so every writer accepts and refuses the same things.
`input` writes the turns, `content` the parts. Here (each covered by a test):

- ``store: false`` always (the proxy keeps no state, and neither should the upstream);
  ``stream`` as asked. For a ``reasoning`` target ``include:
  ["reasoning.encrypted_content"]`` and ``reasoning: {effort, summary: "auto"}`` (effort
  the level as asked, `canonical.effort.requested_level`, omitted when there is none), so the
  reasoning comes back replayable and readable. A route's effort (`canonical.effort`) is
  ``reasoning.effort`` for any target.
- Tools -> ``{"type": "function", name, description, parameters, strict: false}``
  (Anthropic server tools are a 400, but web search: the ``web_search`` tool, and
  ``include: ["web_search_call.action.sources"]`` for the pages it read); ``tool_choice`` auto/any/tool/none ->
  ``"auto"``/``"required"``/``{"type": "function", name}``/``"none"``,
  ``disable_parallel_tool_use`` -> ``parallel_tool_calls: false``, only with tools.
- ``max_tokens`` -> ``max_output_tokens`` (clamped to the target's limit);
  ``temperature``/``top_p`` passed unless ``sampling=False``; ``stop_sequences`` are
  dropped (the Responses API has no stop parameter; debug log); ``output_config.format``
  json_schema -> ``text.format`` ``{type: json_schema, name: "output", schema, strict:
  false}``; ``metadata.user_id`` -> ``safety_identifier`` as the Chat writer shapes
  ``user``; ``target.prompt_cache_key`` -> ``prompt_cache_key``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from ....canonical.effort import openai_effort, requested_level
from ....canonical.params import max_tokens, openai_user, output_schema, sampling, user_id
from ....canonical.tools import custom_tools, read_tool_choice, web_search_tool, without_web_search
from ....canonical.web_search import responses_tool
from ....errors import invalid_request
from ...context import ENCRYPTED_REASONING
from .input import InputWriter
from .target import ResponsesTarget

__all__ = ["SYSTEM_SEPARATOR", "responses_request_from_messages"]

log = logging.getLogger(__name__)

SYSTEM_SEPARATOR = "\n\n"
SEARCH_SOURCES = "web_search_call.action.sources"
UPSTREAM = "the target model"  # how a refusal names a Responses upstream
_CHOICES = {"auto": "auto", "any": "required", "none": "none"}


def responses_request_from_messages(
    body: dict[str, Any], target: ResponsesTarget, *, stream: bool
) -> dict[str, Any]:
    """Translate an Anthropic Messages request body into a Responses request body."""
    if not isinstance(body, dict):
        raise invalid_request("request body must be a JSON object")
    limit = max_tokens(body, target.max_tokens_limit)
    writer = InputWriter(target)
    writer.write(body)
    tool_fields, search = _tools(body)

    out: dict[str, Any] = {"model": target.model}
    if writer.system_texts:
        out["instructions"] = SYSTEM_SEPARATOR.join(writer.system_texts)
    out["input"] = writer.finish()
    out["max_output_tokens"] = limit
    out.update(tool_fields)
    if body.get("stop_sequences"):
        log.debug("stop_sequences dropped: the Responses API has no stop parameter")
    numbers = sampling(body)
    if target.sampling:
        out.update(numbers)
    out.update(_reasoning(body, target))
    if search is not None:
        # The pages a search read: the client's search results (the results block).
        out["include"] = [*out.get("include", []), SEARCH_SOURCES]
    schema = output_schema(body)
    if schema is not None:
        out["text"] = {
            "format": {"type": "json_schema", "name": "output", "schema": schema, "strict": False}
        }
    user = user_id(body)
    if user is not None:
        out["safety_identifier"] = openai_user(user)
    if target.prompt_cache_key is not None:
        out["prompt_cache_key"] = target.prompt_cache_key
    out["store"] = False
    out["stream"] = stream
    return out


def _tools(body: dict[str, Any]) -> tuple[dict[str, Any], Mapping[str, Any] | None]:
    """The tools (the client's as functions, a web search as the hosted one) and how the
    model may call them; and the request's web search tool, if any."""
    canonical_tools = body.get("tools")
    search = web_search_tool(canonical_tools)
    if search is not None:
        canonical_tools = without_web_search(canonical_tools)  # type: ignore[arg-type]
    tools = [
        _function_tool(name, description, schema)
        for name, description, schema, _ in custom_tools(canonical_tools, UPSTREAM)
    ]
    names = {tool["name"] for tool in tools}
    choice = body.get("tool_choice")
    if search is not None and isinstance(choice, dict) and choice.get("name") == search.get("name"):
        choice = {**choice, "type": "any"}  # the search forced: the one hosted tool is required
        choice.pop("name")
    ctype, name, parallel_off = (
        read_tool_choice(choice, names) if choice is not None else (None, None, False)
    )
    if search is not None:
        tools.append(responses_tool(search))
    if not tools:
        return {}, search
    fields: dict[str, Any] = {"tools": tools}
    if ctype == "tool":
        fields["tool_choice"] = {"type": "function", "name": name}
    elif ctype is not None:
        fields["tool_choice"] = _CHOICES[ctype]
    if parallel_off:
        fields["parallel_tool_calls"] = False
    return fields, search


def _reasoning(body: dict[str, Any], target: ResponsesTarget) -> dict[str, Any]:
    """The reasoning asked for (the route's effort, else the request's level) and, from a
    reasoning model, its encrypted reasoning, so a later turn can send it back."""
    if not (target.reasoning or target.effort is not None):
        return {}
    level = target.effort if target.effort is not None else requested_level(body)
    effort = openai_effort(level) if level is not None else None
    reasoning: dict[str, Any] = {"summary": "auto"} if target.reasoning else {}
    if effort is not None:
        reasoning["effort"] = effort
    if not target.reasoning:
        return {"reasoning": reasoning}
    return {"reasoning": reasoning, "include": [ENCRYPTED_REASONING]}


def _function_tool(name: str, description: Any, schema: dict[str, Any]) -> dict[str, Any]:
    tool: dict[str, Any] = {"type": "function", "name": name}
    if isinstance(description, str):
        tool["description"] = description
    tool["parameters"] = schema
    tool["strict"] = False
    return tool
