"""A strict checker of OpenAI Chat Completions SSE output (what the openai SDK and Zed read).

Independent of the code under test: it parses the bytes as SSE and checks the chunk
grammar of any output, complete or not: `data:` events of one line each and `:` comment
keepalives; every chunk a `chat.completion.chunk` of one id, model and created; the role
chunk before any content; one choice of index 0; tool calls numbered 0, 1, 2... with id and
name on their first fragment only; one finish chunk, then at most the usage chunk
(`choices: []`) and `data: [DONE]`; or an error chunk (`{"error": {message, type, param,
code}}`) as the very last event, never followed by [DONE]. Returns the rebuilt message.
"""

from __future__ import annotations

from typing import Any

import orjson

_DELTA_KEYS = {"role", "content", "reasoning_content", "tool_calls"}


def check(data: bytes, *, ended: bool = True, tool_json: bool = True) -> dict[str, Any]:
    """Check `data`; with `ended`, it must end in [DONE] or an error chunk. `tool_json`
    also parses each call's arguments (off when the upstream's arguments are arbitrary)."""
    assert data.endswith(b"\n\n") or not data, "output must end at an event boundary"
    head: tuple[object, object, object] | None = None
    started = False
    text, reasoning = [], []
    tools: list[dict[str, Any]] = []
    finish: str | None = None
    usage: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    done = False
    for block in data.split(b"\n\n")[:-1]:
        assert not done and error is None, f"event after the end: {block!r}"
        if block.startswith(b":"):
            assert b"\n" not in block, "a keepalive is one comment line"
            continue
        assert block.startswith(b"data: ") and b"\n" not in block, block
        if block == b"data: [DONE]":
            assert finish is not None, "[DONE] only after the finish chunk"
            done = True
            continue
        chunk = orjson.loads(block[6:])
        if "error" in chunk:
            assert set(chunk) == {"error"}
            error = chunk["error"]
            assert set(error) == {"message", "type", "param", "code"}
            assert isinstance(error["message"], str) and error["message"]
            assert isinstance(error["type"], str) and error["type"]
            continue
        assert chunk["object"] == "chat.completion.chunk"
        chunk_head = (chunk["id"], chunk["model"], chunk["created"])
        assert head is None or chunk_head == head, "one id, model and created"
        head = chunk_head
        if chunk["choices"] == []:
            assert finish is not None and usage is None, "usage once, after the finish chunk"
            usage = chunk["usage"]
            assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
            continue
        assert finish is None, "nothing but usage and [DONE] after the finish chunk"
        (choice,) = chunk["choices"]
        assert choice["index"] == 0
        delta = choice["delta"]
        assert set(delta) <= _DELTA_KEYS, delta
        if not started:
            assert delta == {"role": "assistant", "content": ""}, "the role chunk comes first"
            started = True
            continue
        assert "role" not in delta, "the role once"
        if choice["finish_reason"] is not None:
            assert delta == {}, "the finish chunk carries nothing else"
            finish = choice["finish_reason"]
            continue
        assert len(delta) == 1, "one kind of content a chunk"
        if "content" in delta:
            assert isinstance(delta["content"], str) and delta["content"]
            text.append(delta["content"])
        elif "reasoning_content" in delta:
            assert isinstance(delta["reasoning_content"], str) and delta["reasoning_content"]
            reasoning.append(delta["reasoning_content"])
        else:
            (call,) = delta["tool_calls"]
            if call["index"] == len(tools):
                assert call["type"] == "function" and isinstance(call["id"], str)
                assert call["function"]["arguments"] == ""
                tools.append({"id": call["id"], "name": call["function"]["name"], "args": ""})
            else:
                assert call["index"] < len(tools), "fragments of a started call only"
                assert set(call) == {"index", "function"}, "id and name only once"
                assert set(call["function"]) == {"arguments"}
                assert isinstance(call["function"]["arguments"], str)
                tools[call["index"]]["args"] += call["function"]["arguments"]
    if ended:
        assert done or error is not None, "the output must end in [DONE] or an error chunk"
    if tool_json:
        for tool in tools:
            tool["input"] = orjson.loads(tool["args"])
    return {
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "tools": tools,
        "finish": finish,
        "usage": usage,
        "error": error,
        "complete": done,
    }
