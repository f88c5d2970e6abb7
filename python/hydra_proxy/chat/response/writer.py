"""The Chat response writer: the canonical Anthropic `Message` (non-streaming) -> a client
OpenAI `chat.completion` (a Chat client's reply, whatever the upstream).

Pure translation, no I/O. The field maps it uses are shared: `chat.mapping.finish_reason`,
`chat.usage.chat_usage`, `canonical.tools.tool_arguments`. Decisions (each covered by
a test):

- One choice, index 0. ``message``: ``role: "assistant"``, ``content`` = the text blocks
  joined with nothing in between (Claude splits one reply into several text blocks around
  citations; the stream concatenates their deltas the same way), ``null`` when there is
  no text; ``refusal: null`` (a Claude refusal is a ``stop_reason``, reported as
  ``finish_reason: "content_filter"``; whatever text came before it stays in
  ``content``); ``annotations``: one ``url_citation`` per text citation that carries a
  ``url`` (web search results), spanning that text block in ``content`` (offsets in
  code points), ``[]`` when none; other citations (document locations) are dropped, their
  text stays. No "Sources" text is appended, so ``content`` is the same as what the
  stream sends.
- ``tool_calls``: one per ``tool_use`` block, in order: ``id`` verbatim, ``type:
  "function"``, ``function: {name, arguments}`` with ``arguments`` the input as compact
  JSON (``"{}"`` when empty or missing). Omitted when there are none.
- Server-side tool blocks (``server_tool_use``, ``web_search_tool_result``,
  ``web_fetch_tool_result``, code execution results, ``mcp_tool_use``/``mcp_tool_result``,
  ``container_upload``...) ran at Anthropic; they are not calls for the client to make
  and are omitted (their findings reach the client through Claude's text and its
  citations). Unknown block types are ignored.
- ``reasoning_content``: the ``thinking`` texts joined with nothing in between; when
  ``continuation_key`` is set, each ``thinking`` text is followed by its own
  `continuation.encode`, and each ``redacted_thinking`` block is one, in block order (as
  the stream sends them). Omitted when that is empty.
- ``finish_reason`` via `mapping.FINISH_REASONS`; an unknown or missing stop reason ->
  ``"stop"``.
- ``usage``: ``prompt_tokens = input + cache_read + cache_creation``,
  ``completion_tokens = output``, ``total_tokens``, ``prompt_tokens_details.cached_tokens
  = cache_read``; missing counts are 0.
"""

from __future__ import annotations

from typing import Any

from ... import continuation
from ...canonical.message import typed_objects, url_citations
from ...canonical.tools import tool_arguments
from ..mapping import chat_usage, finish_reason

__all__ = ["chat_completion_from_message"]


def chat_completion_from_message(
    message: dict[str, Any],
    *,
    completion_id: str,
    model: str,
    created: int,
    continuation_key: bytes | None,
) -> dict[str, Any]:
    """Translate a non-streaming Anthropic Message into a Chat `chat.completion`."""
    texts: list[str] = []
    annotations: list[dict[str, Any]] = []
    offset = 0
    reasoning: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    for btype, block in typed_objects(message.get("content")):
        if btype == "text":
            text = block.get("text")
            if not isinstance(text, str):
                continue
            annotations.extend(
                {
                    "type": "url_citation",
                    "url_citation": {
                        "start_index": offset,
                        "end_index": offset + len(text),
                        "url": url,
                        "title": title,
                    },
                }
                for url, title in url_citations(block.get("citations"))
            )
            texts.append(text)
            offset += len(text)
        elif btype == "thinking":
            thinking = block.get("thinking")
            signature = block.get("signature")
            thinking = thinking if isinstance(thinking, str) else ""
            reasoning.append(thinking)
            if continuation_key is not None:
                sealed = continuation.ThinkingBlock(
                    thinking, signature if isinstance(signature, str) else ""
                )
                reasoning.append(continuation.encode([sealed], continuation_key))
        elif btype == "redacted_thinking":
            data = block.get("data")
            if isinstance(data, str) and continuation_key is not None:
                reasoning.append(
                    continuation.encode([continuation.RedactedBlock(data)], continuation_key)
                )
        elif btype == "tool_use":
            tool_calls.append(
                {
                    "id": _string(block.get("id")),
                    "type": "function",
                    "function": {
                        "name": _string(block.get("name")),
                        "arguments": tool_arguments(block.get("input")),
                    },
                }
            )

    out_message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(texts) if texts else None,
        "refusal": None,
        "annotations": annotations,
    }
    reasoning_content = "".join(reasoning)
    if reasoning_content:
        out_message["reasoning_content"] = reasoning_content
    if tool_calls:
        out_message["tool_calls"] = tool_calls
    stop_reason = message.get("stop_reason")
    if not isinstance(stop_reason, str):
        stop_reason = None
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": out_message,
                "logprobs": None,
                "finish_reason": finish_reason(stop_reason),
            }
        ],
        "usage": chat_usage(message.get("usage")),
    }


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""
