"""A strict checker of Anthropic Messages SSE output (what Claude Code and the SDKs need).

Independent of the code under test: it parses the bytes as SSE and checks the event
grammar of the Messages stream, returning the rebuilt message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson


@dataclass
class Rebuilt:
    message: dict[str, Any] | None = None
    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] | None = None
    complete: bool = False
    pings: int = 0


def sse_events(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Split well-formed output into (event, data) pairs; every event is exactly two lines."""
    assert data.endswith(b"\n\n") or not data, "output must end at an event boundary"
    events = []
    for block in data.split(b"\n\n")[:-1]:
        lines = block.split(b"\n")
        assert len(lines) == 2, f"event must be 'event:' + 'data:' lines: {block!r}"
        assert lines[0].startswith(b"event: ") and lines[1].startswith(b"data: "), block
        name = lines[0][7:].decode()
        payload = orjson.loads(lines[1][6:])
        assert payload["type"] == name, f"data.type must repeat the event name: {block!r}"
        events.append((name, payload))
    return events


def check(data: bytes, *, tool_json: bool = True) -> Rebuilt:
    """Check `data`; `tool_json` parses each tool_use input (off when the upstream's tool
    arguments are arbitrary)."""
    out = Rebuilt()
    events = sse_events(data)
    assert events, "no events"
    if [name for name, _ in events if name != "ping"] == ["error"] and events[-1][0] == "error":
        # An error before the message (the API sends one so, after keepalives).
        out.pings = len(events) - 1
        out.error = events[-1][1]["error"]
        assert set(out.error) == {"type", "message"} and out.error["message"]
        return out
    assert events[0][0] == "message_start", "message_start must come first"
    open_index: int | None = None
    partial_json: dict[int, str] = {}
    ended = False
    for i, (name, ev) in enumerate(events):
        assert not ended, f"event after the end: {name}"
        if name == "message_start":
            assert i == 0, "one message_start"
            msg = ev["message"]
            assert msg["content"] == [] and msg["role"] == "assistant" and msg["type"] == "message"
            assert msg["usage"]["input_tokens"] > 0, "message_start needs a non-zero estimate"
            out.message = msg
        elif name == "content_block_start":
            assert open_index is None, "one block open at a time"
            assert ev["index"] == len(out.content), "block indices are 0, 1, 2..."
            block = dict(ev["content_block"])
            assert block["type"] in (
                "text",
                "thinking",
                "tool_use",
                "server_tool_use",
                "web_search_tool_result",
            )
            if block["type"] in ("tool_use", "server_tool_use"):
                assert block["input"] == {} and block["id"] and isinstance(block["name"], str)
                partial_json[ev["index"]] = ""
            if block["type"] == "web_search_tool_result":
                # The search it answers is the block before it.
                assert out.content and out.content[-1]["type"] == "server_tool_use"
                assert block["tool_use_id"] == out.content[-1]["id"]
                for result in block["content"]:
                    assert result["type"] == "web_search_result" and result["url"]
                    assert isinstance(result["title"], str)
            out.content.append(block)
            open_index = ev["index"]
        elif name == "content_block_delta":
            assert ev["index"] == open_index, "delta for the open block only"
            block = out.content[ev["index"]]
            delta = ev["delta"]
            kind = delta["type"]
            if kind == "text_delta":
                assert block["type"] == "text" and delta["text"]
                block["text"] += delta["text"]
            elif kind == "thinking_delta":
                assert block["type"] == "thinking" and delta["thinking"]
                block["thinking"] += delta["thinking"]
            elif kind == "signature_delta":
                assert block["type"] == "thinking"
                block["signature"] = delta["signature"]
            elif kind == "input_json_delta":
                assert block["type"] in ("tool_use", "server_tool_use")
                partial_json[ev["index"]] += delta["partial_json"]
            elif kind == "citations_delta":
                assert block["type"] == "text" and delta["citation"]["type"]
                block.setdefault("citations", []).append(delta["citation"])
            else:
                raise AssertionError(f"unknown delta {kind}")
        elif name == "content_block_stop":
            assert ev["index"] == open_index, "stop closes the open block"
            block = out.content[ev["index"]]
            if block["type"] in ("tool_use", "server_tool_use"):
                raw = partial_json[ev["index"]]
                block["input"] = (orjson.loads(raw) if raw else {}) if tool_json else raw
            open_index = None
        elif name == "message_delta":
            assert open_index is None, "all blocks closed before message_delta"
            assert out.stop_reason is None, "one message_delta"
            out.stop_reason = ev["delta"]["stop_reason"]
            assert "stop_sequence" in ev["delta"]
            out.usage = ev["usage"]
        elif name == "message_stop":
            assert out.stop_reason is not None, "message_delta before message_stop"
            out.complete = True
            ended = True
        elif name == "ping":
            out.pings += 1
        elif name == "error":
            assert set(ev["error"]) == {"type", "message"} and ev["error"]["message"]
            out.error = ev["error"]
            ended = True
        else:
            raise AssertionError(f"unknown event {name}")
    return out
