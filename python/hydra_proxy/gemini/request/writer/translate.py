"""The Gemini request writer's entry: the canonical request (an Anthropic Messages
request) -> a Gemini ``generateContent`` request.

Pure translation, no I/O. `gemini_request_from_messages` returns the request body (the
same body serves ``generateContent`` and ``streamGenerateContent``; `endpoint` gives the
rest of the HTTP request as data) or raises `ProxyError` (400 invalid_request_error)
whose message starts with the offending field path, as every writer does; what every
writer reads the same way is `canonical`'s. The input is never modified; the output
shares sub-objects with it (tool inputs as ``args``, base64 data), so copy before
mutating those. Each job has its module, whose docstring lists its decisions (each
covered by a test): `contents` (system text, turns, tool results, thought signatures),
`content` (blocks -> parts), `tools`, `thinking`; `target` is what a model accepts.

Here, ``generationConfig``: ``max_tokens`` (required, >= 1) -> ``maxOutputTokens``
clamped to the target's limit; ``stop_sequences`` -> ``stopSequences`` (empty strings
dropped, at most `MAX_STOP_SEQUENCES`); ``temperature``, ``top_p`` -> ``topP``, ``top_k``
-> ``topK``; ``thinkingConfig`` (`thinking`); ``output_config.format`` (or
``output_format``) json_schema -> ``responseMimeType: application/json`` +
``responseSchema`` (sanitised by hydra_proxy.gemini.schema). ``metadata``,
``cache_control``, ``context_management``, ``service_tier`` and unknown fields are
dropped.
"""

from __future__ import annotations

from typing import Any

from ....canonical.fields import bad
from ....canonical.params import max_tokens, output_schema, sampling, stop_sequences
from ....canonical.tools import refuse_mcp_servers, web_search_tool
from ....canonical.web_search import gemini_tool, without_forced_search
from ....errors import invalid_request
from ...schema import SchemaTooLarge, gemini_schema
from .contents import ContentsWriter
from .target import GeminiTarget
from .thinking import thinking_config
from .tools import UPSTREAM, function_declarations, tool_config

__all__ = ["MAX_STOP_SEQUENCES", "gemini_request_from_messages"]

MAX_STOP_SEQUENCES = 5
SYSTEM_SEPARATOR = "\n\n"
_SAMPLING_KEYS = {"temperature": "temperature", "top_p": "topP"}


def gemini_request_from_messages(body: dict[str, Any], target: GeminiTarget) -> dict[str, Any]:
    """Translate an Anthropic Messages request body into a Gemini generateContent body."""
    if not isinstance(body, dict):
        raise invalid_request("request body must be a JSON object")
    limit = max_tokens(body, target.max_output_tokens)
    writer = ContentsWriter(target)
    writer.write(body)
    search = web_search_tool(body.get("tools"))
    if search is not None:
        body = without_forced_search(body, search)
    declarations = function_declarations(body.get("tools"))
    refuse_mcp_servers(body.get("mcp_servers"), UPSTREAM)

    out: dict[str, Any] = {"contents": writer.finish()}
    if writer.system_texts:
        out["systemInstruction"] = {"parts": [{"text": SYSTEM_SEPARATOR.join(writer.system_texts)}]}
    if declarations:
        out["tools"] = [{"functionDeclarations": declarations}]
        config = tool_config(body.get("tool_choice"), declarations)
        if config is not None:
            out["toolConfig"] = config
    if search is not None:
        out["tools"] = [*out.get("tools", []), gemini_tool()]

    generation: dict[str, Any] = {"maxOutputTokens": limit}
    stop = stop_sequences(body.get("stop_sequences"), MAX_STOP_SEQUENCES)
    if stop:
        generation["stopSequences"] = stop
    for name, value in sampling(body).items():
        generation[_SAMPLING_KEYS[name]] = value
    top_k = body.get("top_k")
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise bad("top_k", "must be an integer of at least 1")
        generation["topK"] = top_k
    thinking = thinking_config(body, target)
    if thinking is not None:
        generation["thinkingConfig"] = thinking
    schema = _response_schema(body)
    if schema is not None:
        generation["responseMimeType"] = "application/json"
        generation["responseSchema"] = schema
    out["generationConfig"] = generation
    return out


def _response_schema(body: dict[str, Any]) -> dict[str, Any] | None:
    schema = output_schema(body)
    if schema is None:
        return None
    try:
        return gemini_schema(schema)
    except SchemaTooLarge as exc:
        raise bad("output_config.format.schema", str(exc)) from exc
