"""OpenAI Chat Completions stream chunks, as bytes (twin of rust/src/chat/output.rs).

Every chunk is `data: <compact JSON>\\n\\n` and carries `choices[].index` (Zed's parser
rejects chunks without it). The fixed part of a chunk (id, created, model) is rendered once
per stream.
"""

from __future__ import annotations

from orjson import dumps

DONE = b"data: [DONE]\n\n"
PING = b": ping\n\n"


class ChunkWriter:
    __slots__ = ("_head", "_usage_head")

    def __init__(self, completion_id: str, model: str, created: int) -> None:
        common = b'{"id":%s,"object":"chat.completion.chunk","created":%d,"model":%s,' % (
            dumps(completion_id),
            created,
            dumps(model),
        )
        self._head = b"data: " + common + b'"choices":[{"index":0,"delta":'
        self._usage_head = b"data: " + common + b'"choices":[],"usage":'

    def role(self) -> bytes:
        return self._head + b'{"role":"assistant","content":""},"finish_reason":null}]}\n\n'

    def content(self, text: str) -> bytes:
        return self._head + b'{"content":%s},"finish_reason":null}]}\n\n' % dumps(text)

    def reasoning(self, text: str) -> bytes:
        return self._head + b'{"reasoning_content":%s},"finish_reason":null}]}\n\n' % dumps(text)

    def tool_start(self, index: int, tool_id: str, name: str) -> bytes:
        return self._head + (
            b'{"tool_calls":[{"index":%d,"id":%s,"type":"function","function":{"name":%s,'
            b'"arguments":""}}]},"finish_reason":null}]}\n\n' % (index, dumps(tool_id), dumps(name))
        )

    def tool_arguments(self, index: int, arguments: str) -> bytes:
        return self._head + (
            b'{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]},"finish_reason":null}]}\n\n'
            % (index, dumps(arguments))
        )

    def annotations(self, citations: list[tuple[int, int, str, str]]) -> bytes:
        """``url_citation`` annotations: (start, end, url, title) each, offsets in code
        points of ``content`` (the non-streamed reply's layout)."""
        items = b",".join(
            b'{"type":"url_citation","url_citation":{"start_index":%d,"end_index":%d,'
            b'"url":%s,"title":%s}}' % (start, end, dumps(url), dumps(title))
            for start, end, url, title in citations
        )
        return self._head + b'{"annotations":[%s]},"finish_reason":null}]}\n\n' % items

    def finish(self, finish_reason: str) -> bytes:
        return self._head + b'{},"finish_reason":"%s"}]}\n\n' % finish_reason.encode()

    def usage(self, prompt: int, completion: int, cached: int) -> bytes:
        return self._usage_head + (
            b'{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,'
            b'"prompt_tokens_details":{"cached_tokens":%d}}}\n\n'
            % (prompt, completion, prompt + completion, cached)
        )


def error(error_type: str, message: str) -> bytes:
    """An OpenAI-style error chunk: the openai SDK raises on it, Zed reports it."""
    return b'data: {"error":{"message":%s,"type":"%s","param":null,"code":null}}\n\n' % (
        dumps(message),
        error_type.encode(),
    )
