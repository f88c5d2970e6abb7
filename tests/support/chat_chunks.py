"""Reading Chat Completions SSE output strictly, and the reference rebuild of an Anthropic
stream (what a faithful translation must carry over)."""

from __future__ import annotations

from typing import Any

import orjson

from hydra_proxy import continuation


def sealed(reasoning: str, key: Any) -> list[continuation.Block]:
    """The blocks every continuation suffix in `reasoning` restores, in order (each thinking
    block carries its own suffix); a suffix that does not verify fails the test."""
    blocks: list[continuation.Block] = []
    for found in continuation.scan(reasoning, key):
        assert isinstance(found, continuation.VerifiedSuffix), "a suffix that does not verify"
        blocks.extend(found.blocks)
    return blocks


def _step(order: list[str], kind: str) -> None:
    """Add `kind` to a delta order, runs of one kind counted once."""
    if not order or order[-1] != kind:
        order.append(kind)


def check_chunks(out: bytes) -> dict[str, Any]:
    """Parse Chat SSE output strictly (what Zed's parser needs) and rebuild the message.
    ``order``: the kinds of its deltas in order (reasoning, suffix, text, tool), a run of
    one kind counted once."""
    assert out.endswith(b"\n\n")
    text, reasoning, tools, finish, usage, error, done = [], [], {}, None, None, None, False
    order: list[str] = []
    first = True
    for block in out.split(b"\n\n")[:-1]:
        assert not done, "nothing after [DONE]"
        if block.startswith(b":"):
            continue  # keepalive comment
        assert block.startswith(b"data: ") and b"\n" not in block
        if block == b"data: [DONE]":
            done = True
            continue
        chunk = orjson.loads(block[6:])
        if "error" in chunk:
            error = chunk["error"]
            assert set(error) == {"message", "type", "param", "code"}
            continue
        assert error is None, "nothing after an error"
        if chunk["choices"] == []:
            usage = chunk["usage"]
            continue
        (choice,) = chunk["choices"]
        assert choice["index"] == 0
        delta = choice["delta"]
        if first:
            assert delta == {"role": "assistant", "content": ""}
            first = False
        text.append(delta.get("content") or "")
        reasoning.append(delta.get("reasoning_content") or "")
        if reasoning[-1]:
            _step(order, "suffix" if reasoning[-1].startswith(continuation.PREFIX) else "reasoning")
        if text[-1]:
            _step(order, "text")
        if delta.get("tool_calls"):
            _step(order, "tool")
        for call in delta.get("tool_calls") or []:
            if call["index"] not in tools:
                assert call["index"] == len(tools), "tool call indices count tool calls"
                tools[call["index"]] = {
                    "id": call["id"],
                    "name": call["function"]["name"],
                    "args": "",
                }
            else:
                assert "id" not in call and "name" not in call["function"], "id/name only once"
            tools[call["index"]]["args"] += call["function"]["arguments"]
        if choice["finish_reason"] is not None:
            finish = choice["finish_reason"]
    return {
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "tools": [(t["id"], t["name"], orjson.loads(t["args"])) for t in tools.values()],
        "finish": finish,
        "usage": usage,
        "error": error,
        "done": done,
        "order": order,
    }


def anthropic_truth(data: bytes) -> dict[str, Any]:
    """What an Anthropic client would rebuild from the recording (the reference). ``order``:
    the delta order a Chat client with the continuation suffix must see (`check_chunks`):
    each thinking block's reasoning, then its suffix, before whatever block follows."""
    text, reasoning, tools, blocks, usage, stop = [], [], {}, [], {}, None
    order: list[str] = []
    current: dict[int, dict[str, Any]] = {}
    for line in data.replace(b"\r\n", b"\n").split(b"\n"):
        if not line.startswith(b"data:"):
            continue
        ev = orjson.loads(line[5:])
        if ev["type"] == "message_start":
            usage.update(ev["message"]["usage"])
        elif ev["type"] == "content_block_start":
            current[ev["index"]] = dict(ev["content_block"])
            if ev["content_block"]["type"] == "tool_use":
                tools[ev["index"]] = [ev["content_block"]["id"], ev["content_block"]["name"], ""]
                _step(order, "tool")
        elif ev["type"] == "content_block_delta":
            d = ev["delta"]
            block = current[ev["index"]]
            if d["type"] == "text_delta":
                text.append(d["text"])
                if d["text"] and block["type"] == "text":
                    _step(order, "text")
            elif d["type"] == "thinking_delta":
                reasoning.append(d["thinking"])
                if d["thinking"]:
                    _step(order, "reasoning")
                block["thinking"] = block.get("thinking", "") + d["thinking"]
            elif d["type"] == "signature_delta":
                block["signature"] = d["signature"]
            elif d["type"] == "input_json_delta" and ev["index"] in tools:
                tools[ev["index"]][2] += d["partial_json"]
        elif ev["type"] == "content_block_stop":
            block = current.pop(ev["index"])
            if block["type"] == "thinking":
                blocks.append(continuation.ThinkingBlock(block["thinking"], block["signature"]))
                _step(order, "suffix")
            elif block["type"] == "redacted_thinking":
                blocks.append(continuation.RedactedBlock(block["data"]))
                _step(order, "suffix")
        elif ev["type"] == "message_delta":
            stop = ev["delta"]["stop_reason"]
            usage.update({k: v for k, v in ev["usage"].items() if isinstance(v, int)})
    finish = {"max_tokens": "length", "tool_use": "tool_calls", "refusal": "content_filter"}.get(
        stop or "", "stop"
    )
    return {
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "tools": [(i, n, orjson.loads(a or "{}")) for i, n, a in tools.values()],
        "blocks": blocks,
        "finish": finish,
        "order": order,
        "prompt": usage["input_tokens"]
        + usage.get("cache_read_input_tokens", 0)
        + usage.get("cache_creation_input_tokens", 0),
        "completion": usage["output_tokens"],
        "cached": usage.get("cache_read_input_tokens", 0),
    }
