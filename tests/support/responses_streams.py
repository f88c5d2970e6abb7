"""OpenAI Responses streams: the recordings, and a hypothesis strategy for generated ones.

`RESPONSES_STREAMS`: every recorded stream in tests/fixtures/responses/ as raw SSE bytes:
``.sse`` files are byte-exact HTTP bodies; ``.jsonl`` files (vercel/ai) lost their SSE
framing, one payload a line, and are re-framed as ``event: <type>\\ndata: <line>\\n\\n``,
one stream per ``response.created`` (a multi-step recording holds several responses).

`streams()`: generated streams in the recordings' grammar (message, reasoning with summary
parts and encrypted content, function and custom tool calls, hosted tool items, usage,
completed / incomplete / failed), with `expected` what a faithful decoder must rebuild.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from hypothesis import strategies as st

from support.chat_streams import ARGUMENTS, TEXT

FIXTURES = Path(__file__).parents[1] / "fixtures" / "responses"


def _frame(payloads: list[bytes]) -> bytes:
    return b"".join(
        b"event: " + orjson.loads(line)["type"].encode() + b"\ndata: " + line + b"\n\n"
        for line in payloads
    )


def _streams() -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for path in sorted(FIXTURES.iterdir()):
        if path.suffix == ".sse":
            out[path.name] = path.read_bytes()
        elif path.suffix == ".jsonl":
            responses: list[list[bytes]] = []
            for line in path.read_bytes().splitlines():
                if not line.strip():
                    continue
                if orjson.loads(line)["type"] == "response.created" or not responses:
                    responses.append([])
                responses[-1].append(line)
            for i, lines in enumerate(responses):
                out[path.name if len(responses) == 1 else f"{path.name}#{i}"] = _frame(lines)
    return out


RESPONSES_STREAMS = _streams()


@dataclass
class Expected:
    text: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    tools: list[tuple[str, str, Any]] = field(default_factory=list)  # call id, name, input
    stop_reason: str | None = None
    error: bool = False


@dataclass
class Stream:
    events: list[dict[str, Any]]
    named: bool  # `event:` lines
    padded: bool
    expected: Expected

    def encode(self) -> bytes:
        sep = (", ", ": ") if self.padded else (",", ":")
        out = []
        for event in self.events:
            if self.named:
                out.append(f"event: {event['type']}\n")
            out.append("data: " + json.dumps(event, separators=sep, ensure_ascii=False) + "\n\n")
        return "".join(out).encode("utf-8")


def _response(status: str, **extra: Any) -> dict[str, Any]:
    return {"id": "resp_gen", "object": "response", "model": "gpt-5", "status": status, **extra}


@st.composite
def streams(draw: st.DrawFn) -> Stream:
    expected = Expected()
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": _response("in_progress", output=[])},
        {"type": "response.in_progress", "response": _response("in_progress", output=[])},
    ]
    has_call = False
    for index in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["message", "reasoning", "function_call", "custom", "web"]))
        at = {"output_index": index}
        if kind == "message":
            item = {"id": f"msg_{index}", "type": "message", "role": "assistant", "content": []}
            events.append({"type": "response.output_item.added", **at, "item": item})
            pieces = draw(st.lists(TEXT, max_size=4))
            ids = {"item_id": item["id"], **at, "content_index": 0}
            for piece in pieces:
                events.append({"type": "response.output_text.delta", **ids, "delta": piece})
            text = "".join(pieces)
            part = {"type": "output_text", "text": text, "annotations": []}
            events.append({"type": "response.output_text.done", **ids, "text": text})
            events.append(
                {"type": "response.output_item.done", **at, "item": {**item, "content": [part]}}
            )
            if text:
                expected.text.append(text)
        elif kind == "reasoning":
            item = {"id": f"rs_{index}", "type": "reasoning", "summary": []}
            events.append({"type": "response.output_item.added", **at, "item": item})
            summaries = draw(st.lists(st.lists(TEXT, min_size=1, max_size=3), max_size=2))
            for s, pieces in enumerate(summaries):
                ids = {"item_id": item["id"], **at, "summary_index": s}
                for piece in pieces:
                    events.append(
                        {"type": "response.reasoning_summary_text.delta", **ids, "delta": piece}
                    )
            texts = ["".join(p) for p in summaries]
            done = {**item, "summary": [{"type": "summary_text", "text": t} for t in texts]}
            if draw(st.booleans()):
                done["encrypted_content"] = "gAAAA" + draw(st.text("abcXYZ09-_", max_size=20))
            events.append({"type": "response.output_item.done", **at, "item": done})
            if texts:
                expected.thinking.append("\n\n".join(texts))
        elif kind in ("function_call", "custom"):
            has_call = True
            call_id = f"call_{index}"
            name = draw(st.sampled_from(["shell", "get_weather", "apply_patch"]))
            item_type = "function_call" if kind == "function_call" else "custom_tool_call"
            field_ = "arguments" if kind == "function_call" else "input"
            item = {
                "id": f"fc_{index}",
                "type": item_type,
                "call_id": call_id,
                "name": name,
                field_: "",
            }
            events.append({"type": "response.output_item.added", **at, "item": item})
            if kind == "function_call":
                value: Any = draw(ARGUMENTS)
                whole = json.dumps(value, ensure_ascii=False)
                delta_type = "response.function_call_arguments.delta"
            else:
                whole = draw(st.text(max_size=30))
                value = {"input": whole}
                delta_type = "response.custom_tool_call_input.delta"
            cuts = sorted(draw(st.lists(st.integers(0, len(whole)), max_size=3)))
            pieces = [whole[a:b] for a, b in zip([0, *cuts], [*cuts, len(whole)], strict=True)]
            streamed = draw(st.booleans())
            if streamed:
                for piece in pieces:
                    if piece:
                        events.append(
                            {"type": delta_type, "item_id": item["id"], **at, "delta": piece}
                        )
            events.append(
                {"type": "response.output_item.done", **at, "item": {**item, field_: whole}}
            )
            expected.tools.append((call_id, name, value))
        else:
            item = {"id": f"ws_{index}", "type": "web_search_call", "status": "in_progress"}
            events.append({"type": "response.output_item.added", **at, "item": item})
            events.append(
                {"type": "response.web_search_call.searching", "item_id": item["id"], **at}
            )
            events.append(
                {"type": "response.output_item.done", **at, "item": {**item, "status": "completed"}}
            )
    end = draw(st.sampled_from(["completed", "incomplete", "failed", "error", "cut"]))
    usage = {
        "input_tokens": draw(st.integers(0, 5000)),
        "input_tokens_details": {"cached_tokens": draw(st.integers(0, 100))},
        "output_tokens": draw(st.integers(0, 900)),
        "output_tokens_details": {"reasoning_tokens": 0},
    }
    if end == "completed":
        events.append(
            {"type": "response.completed", "response": _response("completed", usage=usage)}
        )
        expected.stop_reason = "tool_use" if has_call else "end_turn"
    elif end == "incomplete":
        details = {"reason": "max_output_tokens"}
        events.append(
            {
                "type": "response.incomplete",
                "response": _response("incomplete", usage=usage, incomplete_details=details),
            }
        )
        expected.stop_reason = "max_tokens"
    elif end == "failed":
        error = {"code": "server_error", "message": "The model failed."}
        events.append({"type": "response.failed", "response": _response("failed", error=error)})
        expected.error = True
    elif end == "error":
        events.append(
            {"type": "error", "code": "rate_limit_exceeded", "message": "Slow down.", "param": None}
        )
        expected.error = True
    else:
        expected.error = True
    for seq, event in enumerate(events):
        event["sequence_number"] = seq
    return Stream(events, draw(st.booleans()), draw(st.booleans()), expected)
