"""The Gemini request reader's entry: a Gemini ``generateContent`` /
``streamGenerateContent`` request -> the canonical request (an Anthropic Messages request).

Pure translation, no I/O. `messages_request_from_gemini` returns a `Translation` or raises
`ProxyError` (400 ``invalid_request_error``) whose message starts with the offending field
in the client's notation (``contents[2].parts[0].functionResponse``). The model comes from
the URL, the stream from the endpoint: the body holds neither. The input is never
modified; the output shares sub-objects with it (schemas, function arguments).

Each job has its module, whose docstring lists its decisions: `contents` (system
instruction, turns, function calls and responses, thought signatures), `parts` (text and
media), `tools` (declarations, schemas, server tools, toolConfig), `params`
(generationConfig, thinkingConfig). The rules that tie the fields together are
`canonical.request`'s, as for every client protocol. Here: ``cachedContent`` (a cache
kept at Google) is a 400; ``safetySettings`` are Google's filters, which no other upstream
has: they are ignored (logged at debug level), as are ``labels``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ....canonical.fields import bad
from ....canonical.request import Requested, canonical_request
from ....canonical.target import MessagesTarget
from ....errors import invalid_request
from .contents import ContentsReader
from .fields import field
from .params import read_generation_config
from .tools import read_tool_config, read_tools

__all__ = ["Translation", "messages_request_from_gemini"]

log = logging.getLogger(__name__)


@dataclass
class Translation:
    body: dict[str, Any]  # the Anthropic Messages request
    include_thoughts: bool = True  # stream the thought parts back
    restored_blocks: int = 0  # thinking/redacted blocks restored from thought signatures
    skipped_signatures: int = 0  # thought signatures that were not a valid carrier
    thinking_disabled: bool = False  # thinking off: the tool loop's thinking was not restorable


def messages_request_from_gemini(body: Any, target: MessagesTarget, *, stream: bool) -> Translation:
    """Translate a Gemini request body into an Anthropic Messages request."""
    if not isinstance(body, dict):
        raise invalid_request("request body must be a JSON object")
    if field(body, "cachedContent") is not None:
        raise bad("cachedContent", "Gemini's cached contents cannot be read through this proxy")
    if field(body, "safetySettings") is not None:
        log.debug("safetySettings ignored: the upstream has no Gemini safety filters")
    asked = Requested(stream=stream)
    include_thoughts = read_generation_config(field(body, "generationConfig"), asked, target)
    tools = read_tools(body.get("tools"))
    asked.tools, asked.tool_choice = read_tool_config(field(body, "toolConfig"), tools)
    reader = ContentsReader(target.continuation_key)
    reader.add_system(field(body, "systemInstruction"))
    reader.add_contents(body.get("contents"))
    request = canonical_request(asked, reader, target)
    return Translation(
        body=request.body,
        include_thoughts=include_thoughts,
        restored_blocks=request.restored_blocks,
        skipped_signatures=reader.skipped,
        thinking_disabled=request.thinking_disabled,
    )
