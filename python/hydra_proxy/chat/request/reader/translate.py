"""The Chat request reader's entry: an OpenAI Chat Completions request -> the canonical
request (an Anthropic Messages request).

Pure translation, no I/O. `messages_request_from_chat` returns a `Translation` (the
Anthropic body plus what the server traces) or raises `ProxyError` (400
``invalid_request_error``) whose `param` is the offending field in OpenAI's notation, e.g.
``messages[2].content[0].image_url.url``; the message starts with the same path. The input
is never modified; the output shares sub-objects with it (tool schemas, the response
format schema), so copy before mutating those.

Each job has its module, whose docstring lists the decisions it makes where the
specification leaves room (each covered by a test): `validation` (what is refused or
dropped), `messages` (system text, turns, tool results), `content` (text, image and file
parts), `replay` (thinking restored from continuation suffixes), `tools`, `params`
(limits, stop, stream options) and `thinking` (effort). The rules that tie the fields
together (max_tokens and the thinking budget, sampling while thinking, thinking turned
off for a forced tool choice or an unrestorable tool loop) are `canonical.request`'s,
the same for every client protocol. Here: ``body["stream"]`` is set from the ``stream``
argument.

Caching: the breakpoints the client marks (`caching`) are used as they are. A client that
marks none but asks for caching in another way (``prompt_cache_key``, or ``cache=True``:
the server recognised its session) gets automatic ones: on the system text and at the
end of the conversation (Anthropic's automatic caching), the prefix every next turn of an
agent's session repeats.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ....canonical.fields import bad, type_name
from ....canonical.params import read_number, read_output_format, read_user_id
from ....canonical.request import Requested, canonical_request
from ....canonical.target import MessagesTarget
from ....canonical.web_search import web_search_from_options
from ....errors import invalid_request
from .messages import MessageReader
from .params import read_include_usage, read_max_tokens, read_stop, read_top_k
from .thinking import read_thinking
from .tools import read_tool_choice, read_tools
from .validation import refuse_unsupported

__all__ = ["Translation", "messages_request_from_chat"]


@dataclass
class Translation:
    body: dict[str, Any]  # the Anthropic Messages request
    restored_blocks: int = 0  # thinking/redacted blocks restored from suffixes and sent
    skipped_reasoning: int = 0  # assistant turns whose reasoning had no valid suffix
    thinking_disabled: bool = False  # thinking off: the tool loop's thinking was not restorable
    include_usage: bool = False  # streaming: the client asked for the usage chunk


def messages_request_from_chat(
    body: dict[str, Any], target: MessagesTarget, *, stream: bool, cache: bool = False
) -> Translation:
    """Translate an OpenAI Chat Completions request body into an Anthropic Messages request
    (`cache`: the client's session is known, so its prompt prefix is worth caching)."""
    if not isinstance(body, dict):
        raise invalid_request("request body must be a JSON object")
    refuse_unsupported(body)
    include_usage = read_include_usage(body, stream)
    asked = Requested(stream=stream)
    asked.max_tokens = read_max_tokens(body)
    asked.stop = read_stop(body.get("stop"))
    asked.temperature = read_number(body, "temperature", 0.0, 2.0)
    asked.top_p = read_number(body, "top_p", 0.0, 1.0)
    asked.top_k = read_top_k(body.get("top_k"))
    tools = read_tools(body.get("tools"))
    asked.tools, asked.tool_choice = read_tool_choice(body.get("tool_choice"), tools, body)
    asked.thinking, asked.effort = read_thinking(body, target)
    asked.output_format, asked.json_object = read_output_format(
        body.get("response_format"), "response_format", "json_schema"
    )
    asked.user_id = read_user_id(body)

    reader = MessageReader(target.continuation_key)
    reader.add_messages(body.get("messages"))
    cache_key = body.get("prompt_cache_key")
    if cache_key is not None and not isinstance(cache_key, str):
        raise bad("prompt_cache_key", f"must be a string, got {type_name(cache_key)}")
    if (cache or cache_key) and not reader.breakpoints and reader.system_breakpoint is None:
        asked.cache = True
        reader.system_breakpoint = {"type": "ephemeral"}
    request = canonical_request(asked, reader, target)
    search = web_search_from_options(body.get("web_search_options"))
    if search is not None:
        request.body["tools"] = [*request.body.get("tools", []), search]
    return Translation(
        body=request.body,
        restored_blocks=request.restored_blocks,
        skipped_reasoning=reader.skipped,
        thinking_disabled=request.thinking_disabled,
        include_usage=include_usage,
    )
