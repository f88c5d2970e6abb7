"""Hypothesis strategies for OpenAI Chat Completions streams, in every upstream dialect.

A generated stream is a list of chunk payloads plus framing choices (line ends, comments,
JSON padding, [DONE] or not). `expected` records what a faithful translation must rebuild.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

# Any Unicode scalar value a JSON string can carry, control characters, quotes and
# backslashes included; JSON cannot carry lone surrogates.
TEXT = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)
NAMES = st.sampled_from(["Bash", "Read", "get_weather", "Édit", "tool-with-dash"])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
ARGUMENTS = st.dictionaries(
    st.sampled_from(["command", "path", "x", "ünï"]), JSON_VALUES, max_size=3
)


@dataclass
class Expected:
    text: list[str] = field(default_factory=list)
    tools: list[tuple[str, str, Any]] = field(default_factory=list)  # id, name, input


@dataclass
class Stream:
    chunks: list[dict[str, Any]]
    done: bool
    line_end: str
    padded: bool
    comments: bool
    expected: Expected

    def encode(self) -> bytes:
        sep = (", ", ": ") if self.padded else (",", ":")
        out = []
        if self.comments:
            out.append(": OPENROUTER PROCESSING" + self.line_end * 2)
        for chunk in self.chunks:
            out.append("data: " + json.dumps(chunk, separators=sep, ensure_ascii=False))
            out.append(self.line_end * 2)
            if self.comments:
                out.append(": keepalive" + self.line_end)
        if self.done:
            out.append("data: [DONE]" + self.line_end * 2)
        return "".join(out).encode("utf-8")


def _chunk(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return {"id": "chatcmpl-x", "object": "chat.completion.chunk", "choices": [choice], **extra}


@st.composite
def tool_call_chunks(draw: st.DrawFn, index: int, expected: Expected) -> list[dict[str, Any]]:
    tool_id = (
        draw(st.sampled_from(["call_", "toolu_", "tk"]))
        + str(index)
        + draw(st.text("abcXYZ019", min_size=1, max_size=6))
    )
    name = draw(NAMES)
    args = draw(ARGUMENTS)
    raw = json.dumps(args, ensure_ascii=draw(st.booleans()))
    expected.tools.append((tool_id, name, args))
    dialect = draw(st.sampled_from(["openai", "groq_whole", "mistral_no_index", "no_type"]))
    if dialect in ("groq_whole", "mistral_no_index"):
        call: dict[str, Any] = {
            "id": tool_id,
            "type": "function",
            "function": {"name": name, "arguments": raw},
        }
        if dialect == "groq_whole":
            call["index"] = index
        return [_chunk({"tool_calls": [call]})]
    cuts = sorted(draw(st.lists(st.integers(0, len(raw)), max_size=4)))
    pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
    first: dict[str, Any] = {
        "index": index,
        "id": tool_id,
        "function": {"name": name, "arguments": ""},
    }
    if dialect == "openai":
        first["type"] = "function"
    chunks = [_chunk({"tool_calls": [first]})]
    chunks += [
        _chunk({"tool_calls": [{"index": index, "function": {"arguments": p}}]}) for p in pieces
    ]
    return chunks


@st.composite
def streams(draw: st.DrawFn) -> Stream:
    expected = Expected()
    chunks: list[dict[str, Any]] = [
        _chunk({"role": "assistant", "content": draw(st.sampled_from(["", None]))})
    ]
    if draw(st.booleans()):
        chunks.insert(0, {"id": "", "choices": [], "prompt_filter_results": []})  # Azure
    for _ in range(draw(st.integers(0, 3))):  # reasoning first, as real models do
        field_name = draw(st.sampled_from(["reasoning_content", "reasoning"]))
        chunks.append(_chunk({field_name: draw(TEXT), "content": None}))
    tool_index = 0
    for kind in draw(
        st.lists(st.sampled_from(["text", "text", "refusal", "tool", "empty"]), max_size=8)
    ):
        if kind == "tool":
            chunks += draw(tool_call_chunks(tool_index, expected))
            tool_index += 1
        elif kind == "empty":
            chunks.append(_chunk({"content": ""}))
        else:
            text = draw(TEXT)
            expected.text.append(text)
            chunks.append(
                _chunk({"content": text} if kind == "text" else {"refusal": text, "content": None})
            )
    finish = draw(
        st.sampled_from(
            ["stop", "length", "tool_calls", "content_filter", "function_call", "weird", None]
        )
    )
    usage = {
        "prompt_tokens": draw(st.integers(0, 10**6)),
        "completion_tokens": draw(st.integers(0, 10**5)),
        "total_tokens": 0,
        "prompt_tokens_details": {"cached_tokens": draw(st.integers(0, 10**6))},
    }
    placement = draw(st.sampled_from(["after", "on_finish", "none", "groq", "openrouter"]))
    if finish is not None:
        extra: dict[str, Any] = {}
        if placement == "on_finish":
            extra["usage"] = usage
        elif placement == "groq":
            extra["x_groq"] = {"usage": usage}
        chunks.append(_chunk({}, finish, **extra))
    if placement == "after":
        chunks.append({"id": "chatcmpl-x", "choices": [], "usage": usage})
    elif placement == "openrouter":
        chunks.append(_chunk({"role": "assistant", "content": ""}, None, usage=usage))
    return Stream(
        chunks=chunks,
        done=draw(st.booleans()),
        line_end=draw(st.sampled_from(["\n", "\r\n", "\r"])),
        padded=draw(st.booleans()),
        comments=draw(st.booleans()),
        expected=expected,
    )
