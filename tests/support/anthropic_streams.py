"""Hypothesis strategies for Anthropic Messages streams, with what a Chat client must rebuild."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from support.chat_streams import ARGUMENTS, NAMES, TEXT

SIGNATURES = st.text(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=", min_size=0, max_size=40
)


@dataclass
class Expected:
    text: str = ""
    reasoning: str = ""
    tools: list[tuple[str, str, Any]] = field(default_factory=list)
    thinking_blocks: list[tuple[str, str] | str] = field(
        default_factory=list
    )  # (text, sig) or redacted data


@dataclass
class Stream:
    events: list[dict[str, Any]]
    with_event_lines: bool
    line_end: str
    padded: bool
    expected: Expected
    stop_reason: str | None

    def encode(self) -> bytes:
        out = []
        for ev in self.events:
            data = json.dumps(
                ev, ensure_ascii=False, separators=(", ", ": ") if self.padded else (",", ":")
            )
            if self.with_event_lines:
                out.append(f"event: {ev['type']}{self.line_end}")
            out.append(f"data: {data}{self.line_end}{self.line_end}")
        return "".join(out).encode()


@st.composite
def streams(draw: st.DrawFn) -> Stream:
    expected = Expected()
    usage = {
        "input_tokens": draw(st.integers(0, 10**6)),
        "cache_creation_input_tokens": draw(st.integers(0, 10**5)),
        "cache_read_input_tokens": draw(st.integers(0, 10**6)),
        "output_tokens": 1,
    }
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {"id": "msg_x", "type": "message", "role": "assistant", "model": "claude-x",
                        "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage},
        }
    ]  # fmt: skip
    index = 0
    kinds = draw(
        st.lists(
            st.sampled_from(["thinking", "redacted", "text", "tool", "server", "ping"]), max_size=7
        )
    )
    for kind in kinds:
        if kind == "ping":
            events.append({"type": "ping"})
            continue
        if kind == "thinking":
            texts = draw(st.lists(TEXT, max_size=3))
            signature = draw(SIGNATURES)
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {"type": "thinking", "thinking": "", "signature": ""}})  # fmt: skip
            events += [
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "thinking_delta", "thinking": t},
                }
                for t in texts
            ]
            events.append(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": signature},
                }
            )
            expected.reasoning += "".join(texts)
            expected.thinking_blocks.append(("".join(texts), signature))
        elif kind == "redacted":
            data = draw(SIGNATURES)
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "redacted_thinking", "data": data},
                }
            )
            expected.thinking_blocks.append(data)
        elif kind == "text":
            texts = draw(st.lists(TEXT, max_size=3))
            events.append(
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                }
            )
            for t in texts:
                events.append(
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": t},
                    }
                )
                if draw(st.booleans()):
                    citation = {
                        "type": "web_search_result_location",
                        "url": "https://x.test",
                        "title": "t",
                        "cited_text": t,
                    }
                    events.append(
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "citations_delta", "citation": citation},
                        }
                    )
            expected.text += "".join(texts)
        elif kind == "tool":
            tool_id = "toolu_" + draw(st.text("abc123", min_size=1, max_size=8))
            name = draw(NAMES)
            args = draw(ARGUMENTS)
            raw = json.dumps(args, ensure_ascii=draw(st.booleans())) if args else ""
            cuts = sorted(draw(st.lists(st.integers(0, len(raw)), max_size=4)))
            pieces = ["", *(raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True))]
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {"type": "tool_use", "id": tool_id, "name": name, "input": {}}})  # fmt: skip
            events += [
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": p},
                }
                for p in pieces
            ]
            expected.tools.append((tool_id, name, args))
        else:  # a server tool and its result: run by Anthropic, invisible to a Chat client
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}})  # fmt: skip
            events.append({"type": "content_block_delta", "index": index,
                           "delta": {"type": "input_json_delta", "partial_json": '{"query": "x"}'}})  # fmt: skip
            events.append({"type": "content_block_stop", "index": index})
            index += 1
            events.append({"type": "content_block_start", "index": index,
                           "content_block": {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}})  # fmt: skip
        events.append({"type": "content_block_stop", "index": index})
        index += 1
    stop_reason = draw(
        st.sampled_from(
            ["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "pause_turn", None]
        )
    )
    final_usage = {"output_tokens": draw(st.integers(0, 10**5))}
    if draw(st.booleans()):
        final_usage["input_tokens"] = usage["input_tokens"]
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": final_usage,
        }
    )
    events.append({"type": "message_stop"})
    return Stream(
        events=events,
        with_event_lines=draw(st.booleans()),
        line_end=draw(st.sampled_from(["\n", "\r\n"])),
        padded=draw(st.booleans()),
        expected=expected,
        stop_reason=stop_reason,
    )
