"""The golden stream cases: hand-written corner-case inputs, scripted runs, and the runner.

A case is a direction, an input (a recorded fixture or a file under tests/golden/inputs/),
the transducer's options and a script of calls ("feed" the input, "finish", "ping", or
["fail", type, message]); tests/golden/record.py records each case's output bytes and end
state, tests/twins/test_golden.py replays them on both implementations.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from hydra_proxy import transducers
from hydra_proxy.server.pipeline.relay import MSG_IDLE_TIMEOUT
from support import gemini_client_golden
from support.failure_streams import failure_inputs
from support.gemini_golden import GEMINI_DIRECTIONS, make_gemini
from support.gemini_streams import gemini_stream
from support.implementations import (
    ANTHROPIC_STREAMS,
    _native,
    anthropic_via_chat_class,
    chat_via_anthropic_class,
    recorded_chat_stream,
)
from support.responses_streams import RESPONSES_STREAMS

GOLDEN = Path(__file__).parents[1] / "golden"


def _sse(*payloads: object, events: bool = False) -> bytes:
    out = []
    for payload in payloads:
        if isinstance(payload, bytes):
            out.append(payload)
            continue
        data = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
        if events and isinstance(payload, dict):
            out.append(f"event: {payload.get('type')}\n".encode())
        out.append(f"data: {data}\n\n".encode())
    return b"".join(out)


def _chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return {"id": "chatcmpl-g", "object": "chat.completion.chunk", "choices": [choice], **extra}


def _call(
    index: int | None, call_id: str | None, name: str | None, args: str | None
) -> dict[str, Any]:
    call: dict[str, Any] = {"function": {}}
    if index is not None:
        call["index"] = index
    if call_id is not None:
        call["id"] = call_id
    if name is not None:
        call["function"]["name"] = name
    if args is not None:
        call["function"]["arguments"] = args
    return _chunk({"tool_calls": [call]})


DONE = b"data: [DONE]\n\n"
USAGE = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}


def _chat_corners() -> dict[str, bytes]:
    text = _chunk({"role": "assistant", "content": "Hello"})
    return {
        "empty": b"",
        "only-done": DONE,
        "text-no-finish-cut-off": _sse(text),
        "finish-no-done": _sse(text, _chunk({}, "stop")),
        "error-event": b'event: error\ndata: {"error":{"type":"overloaded_error","message":"busy"}}\n\n',
        "error-event-empty": _sse(text) + b"event: error\ndata: \n\n",
        "error-event-not-json": b"event: error\ndata: upstream exploded\n\n",
        "error-payload": _sse(text, {"error": {"code": 429, "message": "slow down"}}),
        "error-payload-odd-shape": _sse({"error": {"message": "bad"}, "choices": 7}),
        "invalid-json": _sse(text) + b"data: {not json\n\n",
        "bad-shape": _sse(text, {"choices": {"index": 0}}),
        "bad-shape-content": _sse(_chunk({"content": 5})),
        "interleaved-tools": _sse(
            _call(0, "call_a", "Read", '{"pa'),
            _call(1, "call_b", "Bash", '{"co'),
            _call(0, None, None, 'th":1}'),
        ),
        "tool-ids": _sse(
            _call(None, None, "NoId", "{}"),
            _call(None, "mistral_1", "ById", '{"x":'),
            _call(None, "mistral_1", None, "1}"),
            _call(None, None, None, ""),
            _call(3, "", "EmptyId", '{"y":2}'),
            _chunk({}, "tool_calls"),
            DONE,
        ),
        "tool-then-stop": _sse(_call(0, "call_a", "Read", "{}"), _chunk({}, "stop"), DONE),
        "reasoning-text-tool": _sse(
            _chunk({"reasoning_content": "Let me think", "content": None}),
            _chunk({"reasoning": "dup", "reasoning_content": " more"}),
            _chunk({"reasoning": " groq-style"}),
            _chunk({"content": "Answer", "refusal": "No"}),
            _chunk({"reasoning_content": "again"}),
            _call(0, "call_a", "Read", '{"path":"/x"}'),
            _chunk({}, "tool_calls"),
            {
                "id": "chatcmpl-g",
                "choices": [],
                "usage": {**USAGE, "prompt_tokens_details": {"cached_tokens": 100}},
            },
            DONE,
        ),
        "usage-variants": _sse(
            text,
            _chunk({}, "length", x_groq={"usage": USAGE}),
            {"choices": [], "usage": {"prompt_tokens": 50, "prompt_cache_hit_tokens": 70}},
            {"choices": [], "usage": {"completion_tokens": -1, "prompt_tokens": "x"}},
            DONE,
        ),
        "two-choices": _sse(
            {
                "choices": [
                    {"index": 1, "delta": {"content": "other"}},
                    {"index": 0, "delta": {"content": "mine"}},
                ]
            },
            _chunk({}, "content_filter"),
            DONE,
        ),
        "after-done-ignored": _sse(text, _chunk({}, "stop"))
        + DONE
        + _sse(_chunk({"content": "late"})),
        "same-chunk-after-error": _sse(
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "a",
                                    "function": {"name": "A", "arguments": "{"},
                                },
                                {
                                    "index": 1,
                                    "id": "b",
                                    "function": {"name": "B", "arguments": "{"},
                                },
                                {"index": 0, "function": {"arguments": "}"}},
                            ]
                        },
                    }
                ]
            },
        ),
        "comments-and-crlf": b": OPENROUTER PROCESSING\r\n\r\n"
        + _sse(text).replace(b"\n", b"\r\n")
        + b": keepalive\r\n\r\n"
        + _sse(_chunk({}, "stop")).replace(b"\n", b"\r")
        + b"data: [DONE]\r\n\r\n",
        "oversize-event": _sse(text, _chunk({"content": "x" * 200}), _chunk({}, "stop"), DONE),
        "invalid-utf8": _sse(text)
        + b'data: {"choices":[{"index":0,"delta":{"content":"\xff\xfe ok"}}]}\n\n'
        + DONE,
        "escapes": _sse(
            _chunk({"content": 'q"\\\n\t\x00\x1f\u2028 é 😀'}), _chunk({}, "stop"), DONE
        ),
    }


def _block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def _stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


START = {
    "type": "message_start",
    "message": {
        "id": "msg_g",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [],
        "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 1},
    },
}
MESSAGE_DELTA = {
    "type": "message_delta",
    "delta": {"stop_reason": "end_turn"},
    "usage": {"output_tokens": 9},
}
MESSAGE_STOP = {"type": "message_stop"}


def _anthropic_corners() -> dict[str, bytes]:
    text = [
        _block_start(0, {"type": "text", "text": ""}),
        _delta(0, {"type": "text_delta", "text": "Hi"}),
        _stop(0),
    ]

    def sse(*payloads: object) -> bytes:
        return _sse(*payloads, events=True)

    return {
        "empty": b"",
        "cut-off": sse(START, *text[:2]),
        "delta-then-eof": sse(START, *text, MESSAGE_DELTA),
        "error-event": sse(START) + b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
        "error-event-empty": sse(START) + b"event: error\ndata:\n\n",
        "error-event-not-json": b"event: error\ndata: <html>502</html>\n\n",
        "error-in-data": _sse(START, {"type": "content_block_start", "index": 0, "error": {"type": "api_error", "message": "x"}}),
        "error-bad-shape": sse({"type": "error", "error": {"message": "m"}, "index": "zero"}),
        "invalid-json": sse(START) + b"event: content_block_delta\ndata: {oops\n\n",
        "bad-shape": sse(START, {"type": "content_block_start", "index": 0, "content_block": {"type": 3}}),
        "unknown-block-delta": sse(START, _delta(2, {"type": "text_delta", "text": "x"})),
        "unknown-block-stop": sse(START, _stop(4)),
        "unstopped-blocks": sse(
            START,
            _block_start(1, {"type": "tool_use", "id": "toolu_b", "name": "B", "input": {}}),
            _block_start(0, {"type": "thinking", "thinking": "pre", "signature": ""}),
            _delta(0, {"type": "signature_delta", "signature": "sig0"}),
            _block_start(2, {"type": "redacted_thinking", "data": "opaque"}),
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
            MESSAGE_STOP,
        ),
        "block-before-start": sse(*text, MESSAGE_DELTA, MESSAGE_STOP),
        "mismatched-deltas": sse(
            START,
            _block_start(0, {"type": "text", "text": "start text"}),
            _delta(0, {"type": "thinking_delta", "thinking": "no"}),
            _delta(0, {"type": "input_json_delta", "partial_json": "{}"}),
            _delta(0, {"type": "citations_delta", "citation": {"type": "char_location", "cited_text": "c"}}),
            _delta(0, {"type": "text_delta", "text": ""}),
            _delta(0, {"type": "unknown_delta"}),
            {"type": "content_block_delta", "index": 0},
            _stop(0),
            _block_start(1, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}),
            _delta(1, {"type": "input_json_delta", "partial_json": '{"q":1}'}),
            _stop(1),
            _block_start(2, {"type": "tool_use", "id": "toolu_e", "name": "Empty", "input": {}}),
            _delta(2, {"type": "input_json_delta", "partial_json": ""}),
            _stop(2),
            {"type": "message_delta", "delta": {"stop_reason": "pause_turn"}, "usage": {"output_tokens": "x"}},
            {"type": "future_event", "x": 1},
            MESSAGE_STOP,
        ),
        "duplicate-index": sse(
            START,
            _block_start(0, {"type": "tool_use", "id": "toolu_a", "name": "A", "input": {}}),
            _block_start(0, {"type": "text", "text": ""}),
            _delta(0, {"type": "text_delta", "text": "t"}),
            _stop(0),
            {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}},
            MESSAGE_STOP,
        ),
        "no-event-lines": _sse(START, *text, {"type": "ping"}, MESSAGE_DELTA, MESSAGE_STOP),
        "event-line-only-type": b"event: message_start\ndata: {\"message\":{}}\n\nevent: ping\ndata: {}\n\nevent: message_stop\ndata: {}\n\n",
        "after-stop-ignored": sse(START, *text, MESSAGE_DELTA, MESSAGE_STOP, *text),
        "oversize-event": sse(START, _block_start(0, {"type": "text", "text": ""}), _delta(0, {"type": "text_delta", "text": "y" * 300}), _stop(0), MESSAGE_STOP),
        "usage-updates": sse(
            START,
            {"type": "message_delta", "delta": {"stop_reason": "refusal"}, "usage": {"input_tokens": 99, "cache_creation_input_tokens": 7, "output_tokens": 3}},
            MESSAGE_STOP,
        ),
        "escapes": sse(START, _block_start(0, {"type": "text", "text": ""}), _delta(0, {"type": "text_delta", "text": 'q"\\\n\x00\u2028 😀'}), _stop(0), MESSAGE_STOP),
        # Invalid JSON in fields the decoder skips: orjson (the Python twin) rejects the
        # whole event, so the native reader must too.
        **{f"skipped-{name}": sse(START) + b"event: content_block_start\ndata: " + data + b"\n\n" + sse(*text, MESSAGE_STOP) for name, data in {
            "lone-surrogate-message-start": b'{"type":"message_start","message":{"type":"mess\\ud800age","usage":{"input_tokens":3}}}',
            "lone-low-surrogate": b'{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"","x":"\\udc00"},"y":1}',
            "invalid-escape": b'{"type":"content_block_start","index":0,"extra":"a\\qb","content_block":{"type":"text","text":""}}',
            "control-char": b'{"type":"content_block_start","index":0,"extra":"a\x01b","content_block":{"type":"text","text":""}}',
            "number-overflow": b'{"type":"content_block_start","index":0,"extra":[1e400],"content_block":{"type":"text","text":""}}',
            "leading-zero": b'{"type":"content_block_start","index":0,"extra":{"n":01},"content_block":{"type":"text","text":""}}',
            "too-deep": b'{"type":"content_block_start","index":0,"extra":' + b"[" * 1024 + b"]" * 1024 + b',"content_block":{"type":"text","text":""}}',
            "deep-ok": b'{"type":"content_block_start","index":0,"extra":' + b"[" * 1023 + b"]" * 1023 + b',"content_block":{"type":"text","text":""}}',
            "repeated-key-last-wins": b'{"type":1e308,"index":"zero","content_block":7,"type":"content_block_start","index":0,"content_block":{"type":"text","text":"","type":"text"}}',
            "deep-bad-shape-error": b'{"type":"content_block_start","index":"zero","extra":' + b"[" * 500 + b"]" * 500 + b',"error":{"type":"overloaded_error","message":"deep"}}',
        }.items()},
        "error-event-lone-surrogate": sse(START) + b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"\\ud800"}}\n\n',
    }  # fmt: skip


def _responses_corners() -> dict[str, bytes]:
    created = {"type": "response.created", "response": {"id": "resp_u", "model": "gpt-5"}}
    message = {"id": "msg_u", "type": "message", "role": "assistant", "content": []}
    fc = {"id": "fc_u", "type": "function_call", "call_id": "", "name": "run", "namespace": "ns"}
    rs = {"id": "rs_u", "type": "reasoning", "summary": []}

    def at(i: int, **e: Any) -> dict[str, Any]:
        return {"output_index": i, **e}

    def done(usage: Any = None, **response: Any) -> dict[str, Any]:
        return {
            "type": "response.completed",
            "response": {"id": "resp_u", "usage": usage, **response},
        }

    return {
        "empty": b"",
        "cut-off": _sse(created, at(0, type="response.output_text.delta", delta="hi")),
        "invalid-json": _sse(created) + b"data: {nope\n\n",
        "not-an-object": _sse(created, [1, 2]),
        "error-event": _sse({"type": "error", "code": "rate_limit_exceeded", "message": "slow"}),
        "error-payload": _sse({"error": {"code": "server_error", "message": ""}}),
        "failed": _sse(created, {"type": "response.failed", "response": {"error": {"code": "invalid_prompt", "message": "no"}}}),
        "done-only-text": _sse(
            created,
            at(0, type="response.output_item.added", item=message),
            at(0, type="response.output_item.done", item={**message, "content": [
                {"type": "output_text", "text": "whole"}, {"type": "refusal", "refusal": "no"}, 5]}),
            done({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 30, "cache_write_tokens": 2}, "output_tokens": 3}),
        ),
        "namespace-call-no-id": _sse(
            created,
            at(0, type="response.output_item.added", item=fc),
            at(0, type="response.output_item.done", item={**fc, "arguments": '{"a":1}'}),
            done({"input_tokens": "x", "output_tokens": -1}),
        ),
        "reasoning-parts": _sse(
            created,
            at(0, type="response.output_item.added", item=rs),
            at(0, type="response.reasoning_summary_text.delta", summary_index=0, delta="one"),
            at(0, type="response.reasoning_summary_text.delta", summary_index=1, delta="two"),
            at(0, type="response.reasoning_text.delta", delta="!"),
            at(0, type="response.output_item.done", item={**rs, "encrypted_content": "gAAA"}),
            at(1, type="response.output_item.added", item=rs),
            at(1, type="response.output_item.done", item={**rs, "summary": [{"type": "summary_text", "text": "late"}]}),
            at(2, type="response.output_item.added", item=rs),
            at(2, type="response.output_item.done", item=rs),
            at(3, type="response.output_text.delta", content_index=0, delta="a"),
            at(3, type="response.output_text.delta", content_index=1, delta="b"),
            at(3, type="response.output_item.done", item=message),
            done(None, incomplete_details={"reason": "max_output_tokens"}),
        ),
        "escapes": _sse(
            created,
            at(0, type="response.output_text.delta", delta='q"\\\n\x00\u2028 😀'),
            done(),
        ),
    }  # fmt: skip


def corner_inputs() -> dict[str, bytes]:
    inputs = {f"chat/corner-{k}.sse": v for k, v in _chat_corners().items()}
    inputs.update({f"anthropic/corner-{k}.sse": v for k, v in _anthropic_corners().items()})
    inputs.update(responses_corner_inputs())
    inputs.update({k: v for k, v in failure_corner_inputs().items() if not k.startswith("gemini/")})
    return inputs


def responses_corner_inputs() -> dict[str, bytes]:
    return {f"responses/corner-{k}.sse": v for k, v in _responses_corners().items()} | {
        k: v for k, v in failure_corner_inputs().items() if k.startswith("responses/")
    }


def failure_corner_inputs() -> dict[str, bytes]:
    """tests/support/failure_streams.py's bodies, as inputs/<upstream>/corner-fail-<name>.sse."""
    return {
        f"{folder}/corner-fail-{name}.sse": body
        for folder, bodies in failure_inputs().items()
        for name, body in bodies.items()
    }


# Each composition, the upstream folder it reads, and a body of that upstream with content
# then silence (the server fails a stalled stream) and one with an event over 100 bytes.
FAILURE_DIRECTIONS = {
    "anthropic_via_chat": ("chat", "corner-text-no-finish-cut-off", "corner-oversize-event"),
    "responses_via_chat": ("chat", "corner-text-no-finish-cut-off", "corner-oversize-event"),
    "chat_via_anthropic": ("anthropic", "corner-cut-off", "corner-oversize-event"),
    "responses_via_anthropic": ("anthropic", "corner-cut-off", "corner-oversize-event"),
    "anthropic_via_responses": ("responses", "corner-cut-off", "corner-fail-large-event"),
    "chat_via_responses": ("responses", "corner-cut-off", "corner-fail-large-event"),
    "anthropic_via_gemini": ("gemini", "corner-text-cut-off", "corner-oversize-event"),
    "chat_via_gemini": ("gemini", "corner-text-cut-off", "corner-oversize-event"),
    "responses_via_gemini": ("gemini", "corner-text-cut-off", "corner-oversize-event"),
}
STALL = ["fail", "timeout_error", MSG_IDLE_TIMEOUT.replace("{}", "30")]


def failure_cases() -> list[dict[str, Any]]:
    """Every composition stalled past the idle timeout and fed an event past the bound;
    Responses clients on Gemini (no golden of their own) also over each failure body."""
    out: list[dict[str, Any]] = []
    for direction, (folder, quiet, large) in FAILURE_DIRECTIONS.items():
        options: dict[str, Any] = (
            {"signing_key": "golden-key"} if "chat_via" not in direction else {}
        )
        out.append(
            {
                "direction": direction,
                "input": f"input:{folder}/{quiet}.sse",
                "options": options,
                "script": ["ping", "feed", "ping", STALL, "ping", "finish"],
            }
        )
        out.append(
            {
                "direction": direction,
                "input": f"input:{folder}/{large}.sse",
                "options": {**options, "max_event_bytes": 100},
            }
        )
    for name in sorted(failure_inputs()["gemini"]):
        out.append(
            {
                "direction": "responses_via_gemini",
                "input": f"input:gemini/corner-fail-{name}.sse",
                "options": {"signing_key": "golden-key"},
            }
        )
    return out  # fmt: skip


def scripted_cases() -> list[dict[str, Any]]:
    """Small event limits and the ping/fail calls the server makes."""
    key = "golden-key"
    return [
        {"direction": "anthropic_via_chat", "input": "input:chat/corner-oversize-event.sse",
         "options": {"signing_key": key, "max_event_bytes": 64}},
        {"direction": "chat_via_anthropic", "input": "input:anthropic/corner-oversize-event.sse",
         "options": {"include_usage": True, "continuation_key": key, "max_event_bytes": 128}},
        {"direction": "anthropic_via_chat", "input": "input:chat/corner-empty.sse",
         "options": {"signing_key": None}, "script": ["ping", "feed", "ping", "finish", "ping"]},
        {"direction": "anthropic_via_chat", "input": "input:chat/corner-reasoning-text-tool.sse",
         "options": {"signing_key": key}, "script": ["ping", "feed", "ping", ["fail", "overloaded_error", "upstream broke"], "ping", "finish"]},
        {"direction": "anthropic_via_chat", "input": "input:chat/corner-text-no-finish-cut-off.sse",
         "options": {"signing_key": key}, "script": ["feed", ["fail", "not_a_type", "mapped to api_error"]]},
        {"direction": "anthropic_via_chat", "input": "input:chat/corner-empty.sse",
         "options": {"signing_key": key}, "script": [["fail", "timeout_error", "idle"], "feed", "finish"]},
        {"direction": "chat_via_anthropic", "input": "input:anthropic/corner-empty.sse",
         "options": {"include_usage": True, "continuation_key": None}, "script": ["ping", "feed", "ping", "finish", "ping"]},
        {"direction": "chat_via_anthropic", "input": "input:anthropic/corner-cut-off.sse",
         "options": {"include_usage": True, "continuation_key": key}, "script": ["ping", "feed", "ping", ["fail", "rate_limit_error", "broke"], "finish"]},
        {"direction": "chat_via_anthropic", "input": "input:anthropic/corner-cut-off.sse",
         "options": {"include_usage": False, "continuation_key": None}, "script": ["feed", ["fail", "bogus", "x"]]},
        {"direction": "chat_via_anthropic", "input": "input:anthropic/corner-empty.sse",
         "options": {"include_usage": False, "continuation_key": None}, "script": [["fail", "api_error", "before anything"]]},
    ]  # fmt: skip


def case_name(case: dict[str, Any]) -> str:
    """A readable, unique file name: the input's stem plus a short hash of the rest."""
    base, _, part = case["input"].split("/")[-1].partition("#")
    stem = base.rsplit(".", 1)[0] + (f"-{part}" if part else "")
    detail = json.dumps([case["options"], case["script"]], sort_keys=True).encode()
    return f"{stem}.{hashlib.sha256(detail).hexdigest()[:8]}"


def load_input(source: str) -> bytes:
    kind, _, name = source.partition(":")
    if kind == "input":
        return (GOLDEN / "inputs" / name).read_bytes()
    folder, _, fixture = name.partition("/")
    if folder == "responses":
        return RESPONSES_STREAMS[fixture]
    if folder == "gemini":
        return gemini_stream(fixture)
    return recorded_chat_stream(fixture) if folder == "chat" else ANTHROPIC_STREAMS[fixture]


# The OpenAI Responses compositions: direction -> (class name, leading arguments).
RESPONSES_DIRECTIONS: dict[str, tuple[str, tuple[Any, ...]]] = {
    "responses_via_chat": ("ResponsesViaChatStream", ("resp_golden", "gpt-golden", 1764547200, 42)),
    "responses_via_anthropic": (
        "ResponsesViaAnthropicStream",
        ("resp_golden", "gpt-golden", 1764547200, 42),
    ),
    "responses_via_gemini": (
        "ResponsesViaGeminiStream",
        ("resp_golden", "gpt-golden", 1764547200, 42),
    ),
    "anthropic_via_responses": ("AnthropicViaResponsesStream", ("msg_golden", "claude-golden", 42)),
    "chat_via_responses": (
        "ChatViaResponsesStream",
        ("chatcmpl-golden", "claude-golden", 1764547200),
    ),
}


def _composition_class(name: str, impl: str) -> Any:
    if impl == "python":
        return getattr(transducers.PYTHON, name)
    if _native is None:
        import pytest

        pytest.skip("optional native extension hydra_proxy._native is not built")
    return getattr(_native, name)


def make(case: dict[str, Any], impl: str) -> Any:
    options = dict(case["options"])
    for key in ("signing_key", "continuation_key"):
        if options.get(key) is not None:
            options[key] = options[key].encode()
    if "tool_names" in options:
        options["tool_names"] = [tuple(row) for row in options["tool_names"]]
    if case["direction"] in RESPONSES_DIRECTIONS:
        name, args = RESPONSES_DIRECTIONS[case["direction"]]
        return _composition_class(name, impl)(*args, **options)
    if case["direction"] == "anthropic_via_chat":
        return anthropic_via_chat_class(impl)("msg_golden", "claude-golden", 42, **options)
    if case["direction"] in GEMINI_DIRECTIONS:
        return make_gemini(case["direction"], impl, options)
    if case["direction"] in gemini_client_golden.DIRECTIONS:
        name = gemini_client_golden.DIRECTIONS[case["direction"]][0]
        return _composition_class(name, impl)(*gemini_client_golden.CLIENT_ARGUMENTS, **options)
    return chat_via_anthropic_class(impl)("chatcmpl-golden", "claude-golden", 1764547200, **options)


def run(
    case: dict[str, Any], impl: str, cuts: list[int] | None = None
) -> tuple[bytes, dict[str, Any]]:
    """Run the case's script; "feed" feeds the input split at `cuts`. (output, end state)."""
    t = make(case, impl)
    data = load_input(case["input"])
    out = []
    for step in case["script"]:
        if step == "feed":
            start = 0
            for cut in sorted(cuts or []):
                out.append(t.feed(data[start:cut]))
                start = cut
            out.append(t.feed(data[start:]))
        elif step == "finish":
            out.append(t.finish())
        elif step == "ping":
            out.append(t.ping())
        else:
            out.append(t.fail(step[1], step[2]))
    state = {
        "finished": t.finished,
        "complete": t.complete,
        "error": list(t.error) if t.error is not None else None,
        "has_content": t.has_content,
        "stop_reason": t.stop_reason,
        "usage": list(t.usage),
        "reasoning_tokens": t.reasoning_tokens,
    }
    return b"".join(out), state
