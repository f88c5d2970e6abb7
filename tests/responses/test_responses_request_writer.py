"""Anthropic Messages request -> Responses request (hydra_proxy.responses.request.writer).

Every recorded Anthropic request (SDK recordings, Claude Code) must give a request the
openai SDK's `ResponseCreateParams` types accept; every recorded Responses request
survives reader -> writer -> reader unchanged; OpenAI's own reasoning item comes back
byte-exact on the next turn (checked against the recorded second request).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from openai.types.responses.response_create_params import (
    ResponseCreateParamsNonStreaming,
    ResponseCreateParamsStreaming,
)
from pydantic import TypeAdapter

from hydra_proxy.canonical.content import MISSING_TOOL_RESULT
from hydra_proxy.canonical.target import MessagesTarget
from hydra_proxy.errors import ProxyError
from hydra_proxy.responses.request.reader import messages_request_from_responses
from hydra_proxy.responses.request.writer import ResponsesTarget, responses_request_from_messages
from hydra_proxy.responses.response.reader import message_from_response
from hydra_proxy.signature import sign_thinking
from support.responses_fixtures import (
    anthropic_requests,
    codex_first_turn,
    request_recordings,
    response_recordings,
)

KEY = b"responses-test-key-0123456789abcdef"
TARGET = ResponsesTarget(model="gpt-5.1-codex", signing_key=KEY)
READER = MessagesTarget(model="claude-test", continuation_key=KEY)
_STREAMING = TypeAdapter(ResponseCreateParamsStreaming)
_NON_STREAMING = TypeAdapter(ResponseCreateParamsNonStreaming)


def write(body: dict[str, Any], target: ResponsesTarget = TARGET, stream: bool = False) -> Any:
    original = copy.deepcopy(body)
    out = responses_request_from_messages(body, target, stream=stream)
    assert body == original, "the input is never modified"
    (_STREAMING if stream else _NON_STREAMING).validate_python(copy.deepcopy(out))
    assert out["store"] is False and out["stream"] is stream
    return out


def req(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": "claude-x", "max_tokens": 1000, "messages": list(messages), **extra}


def u(*content: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(content)}


def a(*content: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(content)}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def use(call_id: str, name: str = "Bash", tool_input: Any = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input or {}}


def result(call_id: str, content: Any = "ok", **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, **extra}


ANTHROPIC = {name: body for name, body in anthropic_requests().items() if "max_tokens" in body}


@pytest.mark.parametrize("name", list(ANTHROPIC))
@pytest.mark.parametrize("stream", [True, False])
def test_recorded_anthropic_requests(name: str, stream: bool) -> None:
    body = ANTHROPIC[name]
    out = write(body, stream=stream)
    assert out["model"] == TARGET.model
    assert out["include"] == ["reasoning.encrypted_content"]
    assert out["max_output_tokens"] == body["max_tokens"]
    assert [t["name"] for t in out.get("tools", [])] == [t["name"] for t in body.get("tools", [])]
    calls = [i["call_id"] for i in out["input"] if i["type"] == "function_call"]
    outputs = [i["call_id"] for i in out["input"] if i["type"] == "function_call_output"]
    assert calls == outputs
    for i, item in enumerate(out["input"]):
        if item["type"] == "function_call_output":
            assert any(
                prev["type"] == "function_call" and prev["call_id"] == item["call_id"]
                for prev in out["input"][:i]
            )
    # Thinking signed by Anthropic is not OpenAI's reasoning: never replayed to it.
    assert not [i for i in out["input"] if i["type"] == "reasoning"]


def test_claude_code_system_and_tool_loop() -> None:
    body = ANTHROPIC["request-after-tool-result.json"]
    out = write(body)
    system_texts = [b["text"] for b in body["system"] if not b["text"].startswith("x-anthropic")]
    mid = [m for m in body["messages"] if m["role"] == "system"]
    assert out["instructions"].startswith(system_texts[0])
    for message in mid:
        content = message["content"]
        piece = content if isinstance(content, str) else content[0]["text"]
        assert piece in out["instructions"]
    assert "x-anthropic-billing-header" not in out["instructions"]
    call = next(i for i in out["input"] if i["type"] == "function_call")
    tool_use = next(
        b
        for m in body["messages"]
        if m["role"] == "assistant"
        for b in m["content"]
        if b["type"] == "tool_use"
    )
    assert call["call_id"] == tool_use["id"] and call["name"] == tool_use["name"]
    tools = {t["name"]: t for t in out["tools"]}
    bash = next(t for t in body["tools"] if t["name"] == "Bash")
    assert tools["Bash"] == {
        "type": "function",
        "name": "Bash",
        "description": bash["description"],
        "parameters": bash["input_schema"],
        "strict": False,
    }
    assert out["reasoning"] == {"summary": "auto", "effort": "medium"}


# ------------------------------------------------------------------------ round trips


RECORDINGS = {n: b for n, b in request_recordings().items() if "http400" not in n}


@pytest.mark.parametrize("name", [*RECORDINGS, "codex"])
def test_round_trip_reader_writer_reader(name: str) -> None:
    recorded = codex_first_turn() if name == "codex" else RECORDINGS[name]
    canonical = messages_request_from_responses(recorded, READER).body
    again = messages_request_from_responses(
        write(canonical, ResponsesTarget(model="m", reasoning=False, sampling=True)), READER
    ).body
    for key in ("system", "messages", "tools", "tool_choice", "max_tokens", "temperature"):
        assert again.get(key) == canonical.get(key), key


def test_openai_reasoning_replayed_byte_exact() -> None:
    # Turn 1 as recorded: reasoning (encrypted) + a function call, read into a Message.
    first = response_recordings()["pydantic-gpt5-reasoning-function-call-replay.1.response.json"]
    message = message_from_response(first, message_id="msg_1", model="gpt-5", key=KEY)
    second = request_recordings()["pydantic-gpt5-reasoning-function-call-replay.2.request.json"]
    call_id = next(b["id"] for b in message["content"] if b["type"] == "tool_use")
    body = req(
        u(text(second["input"][0]["content"])),
        a(*message["content"]),
        u(result(call_id, "42")),
    )
    out = write(body)
    recorded = [i for i in second["input"] if i.get("type") in ("reasoning", "function_call")]
    got = [i for i in out["input"] if i["type"] in ("reasoning", "function_call")]
    assert [(i["type"], i.get("id")) for i in got] == [
        ("reasoning", recorded[0]["id"]),
        ("function_call", None),
    ]
    assert got[0]["encrypted_content"] == recorded[0]["encrypted_content"]
    assert (got[1]["call_id"], got[1]["name"], got[1]["arguments"]) == (
        recorded[1]["call_id"],
        recorded[1]["name"],
        recorded[1]["arguments"],
    )
    assert out["input"][-1] == {"type": "function_call_output", "call_id": call_id, "output": "42"}


def test_tampered_or_foreign_thinking_is_not_replayed() -> None:
    first = response_recordings()["pydantic-gpt5-reasoning-summary-detailed.response.json"]
    message = message_from_response(first, message_id="msg_1", model="gpt-5", key=KEY)
    thinking = message["content"][0]
    edited = {**thinking, "thinking": thinking["thinking"] + " (edited)"}
    proxy_signed = {"type": "thinking", "thinking": "x", "signature": sign_thinking("x", KEY)}
    for block in (edited, proxy_signed, {**thinking, "signature": "EqQBanthropic"}):
        out = write(req(u(text("q")), a(block, text("answer")), u(text("more"))))
        assert [i["type"] for i in out["input"]] == ["message", "message", "message"]
    other_key = write(
        req(u(text("q")), a(thinking, text("answer")), u(text("more"))),
        ResponsesTarget(model="m", signing_key=b"another-key-0123456789abcdefghij"),
    )
    assert not [i for i in other_key["input"] if i["type"] == "reasoning"]
    kept = write(req(u(text("q")), a(thinking, text("answer")), u(text("more"))))
    assert kept["input"][1]["type"] == "reasoning"
    assert kept["input"][1]["summary"] == [{"type": "summary_text", "text": thinking["thinking"]}]


# --------------------------------------------------------------------------- mapping


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
PDF = {
    "type": "document",
    "title": "spec",
    "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"},
}

MAPPING: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("system string", req(u(text("hi")), system="Be brief."), {"instructions": "Be brief."}),
    (
        "user text",
        req(u(text("a"), text("b"))),
        {
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "a"},
                        {"type": "input_text", "text": "b"},
                    ],
                }
            ]
        },
    ),
    (
        "user string content",
        req({"role": "user", "content": "hey"}),
        {
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "hey"}],
                }
            ]
        },
    ),
    (
        "image and pdf",
        req(u(IMAGE, PDF)),
        {
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {
                            "type": "input_image",
                            "image_url": f"data:image/png;base64,{PNG}",
                            "detail": "auto",
                        },
                        {
                            "type": "input_file",
                            "filename": "spec.pdf",
                            "file_data": "data:application/pdf;base64,JVBERi0x",
                        },
                    ],
                }
            ]
        },
    ),
    (
        "leading assistant",
        req(a(text("Hi")), u(text("go"))),
        {
            "input": [
                {"type": "message", "role": "user", "content": "(continued)"},
                {"type": "message", "role": "assistant", "content": "Hi"},
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "go"}],
                },
            ]
        },
    ),
    (
        "missing result",
        req(u(text("x")), a(use("c1"), use("c2")), u(result("c2", "two"), text("next"))),
        {
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "x"}],
                },
                {"type": "function_call", "call_id": "c1", "name": "Bash", "arguments": "{}"},
                {"type": "function_call", "call_id": "c2", "name": "Bash", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": MISSING_TOOL_RESULT},
                {"type": "function_call_output", "call_id": "c2", "output": "two"},
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "next"}],
                },
            ]
        },
    ),
    (
        "orphan and error results",
        req(
            u(text("x")), a(use("c1")), u(result("c1", "boom", is_error=True), result("zz", "late"))
        ),
        {
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "x"}],
                },
                {"type": "function_call", "call_id": "c1", "name": "Bash", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c1", "output": "Error: boom"},
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "Result of tool call zz:\nlate"}],
                },
            ]
        },
    ),
    (
        "result with image",
        req(u(text("x")), a(use("c1")), u(result("c1", [text("see"), IMAGE]))),
        {
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "x"}],
                },
                {"type": "function_call", "call_id": "c1", "name": "Bash", "arguments": "{}"},
                {
                    "type": "function_call_output",
                    "call_id": "c1",
                    "output": [
                        {"type": "input_text", "text": "see"},
                        {
                            "type": "input_image",
                            "image_url": f"data:image/png;base64,{PNG}",
                            "detail": "auto",
                        },
                    ],
                },
            ]
        },
    ),
    (
        "assistant text around a call",
        req(u(text("x")), a(text("one"), use("c1", "f", {"a": 1}), text("two")), u(result("c1"))),
        {
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "x"}],
                },
                {"type": "message", "role": "assistant", "content": "one"},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a":1}'},
                {"type": "message", "role": "assistant", "content": "two"},
                {"type": "function_call_output", "call_id": "c1", "output": "ok"},
            ]
        },
    ),
    (
        "tools and choice",
        req(
            u(text("x")),
            tools=[{"name": "f", "input_schema": {"type": "object"}}],
            tool_choice={"type": "tool", "name": "f", "disable_parallel_tool_use": True},
        ),
        {
            "tools": [
                {"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": False}
            ],
            "tool_choice": {"type": "function", "name": "f"},
            "parallel_tool_calls": False,
        },
    ),
    (
        "choice any",
        req(
            u(text("x")),
            tools=[{"name": "f", "input_schema": {"type": "object"}}],
            tool_choice={"type": "any"},
        ),
        {"tool_choice": "required"},
    ),
    ("max_tokens", req(u(text("x"))), {"max_output_tokens": 1000}),
    (
        "json schema",
        req(
            u(text("x")),
            output_config={"format": {"type": "json_schema", "schema": {"type": "object"}}},
        ),
        {
            "text": {
                "format": {
                    "type": "json_schema",
                    "name": "output",
                    "schema": {"type": "object"},
                    "strict": False,
                }
            }
        },
    ),
    (
        "user id",
        req(u(text("x")), metadata={"user_id": "user_abc123"}),
        {"safety_identifier": "user_abc123"},
    ),
    (
        "effort from budget",
        req(u(text("x")), thinking={"type": "enabled", "budget_tokens": 20000}),
        {"reasoning": {"summary": "auto", "effort": "xhigh"}},
    ),
]


@pytest.mark.parametrize(("name", "body", "expected"), MAPPING, ids=[c[0] for c in MAPPING])
def test_mapping(name: str, body: dict[str, Any], expected: dict[str, Any]) -> None:
    out = write(body)
    for key, value in expected.items():
        assert out[key] == value, key


def test_sampling_and_limits() -> None:
    body = req(u(text("x")), temperature=0.3, top_p=0.9, stop_sequences=["END"], max_tokens=9000)
    reasoning_model = write(body, ResponsesTarget(model="m", max_tokens_limit=4096))
    assert "temperature" not in reasoning_model and "top_p" not in reasoning_model
    assert reasoning_model["max_output_tokens"] == 4096
    assert "stop" not in reasoning_model
    plain = write(body, ResponsesTarget(model="m", reasoning=False, sampling=True))
    assert (plain["temperature"], plain["top_p"]) == (0.3, 0.9)
    assert "reasoning" not in plain and "include" not in plain


VALIDATION: list[tuple[str, Any, str]] = [
    ("no max_tokens", {"model": "m", "messages": [u(text("x"))]}, "max_tokens"),
    ("no messages", {"model": "m", "max_tokens": 5}, "messages"),
    ("bad role", req({"role": "tool", "content": "x"}), "messages.0.role"),
    (
        "server tool",
        req(u(text("x")), tools=[{"type": "code_execution_20250522", "name": "code_execution"}]),
        "tools.0",
    ),
    (
        "tool_use without id",
        req(u(text("x")), a({"type": "tool_use", "name": "f"})),
        "messages.1.content.0.id",
    ),
    (
        "image source",
        req(u({"type": "image", "source": {"type": "file", "file_id": "f"}})),
        "messages.0.content.0.source",
    ),
    ("temperature type", req(u(text("x")), temperature="hot"), "temperature"),
    ("only blank text", req(u(text("  "))), "messages"),
]


@pytest.mark.parametrize(("name", "body", "param"), VALIDATION, ids=[c[0] for c in VALIDATION])
def test_validation(name: str, body: Any, param: str) -> None:
    with pytest.raises(ProxyError) as caught:
        responses_request_from_messages(body, TARGET, stream=False)
    assert caught.value.status == 400 and caught.value.param == param
    assert caught.value.message.startswith(f"{param}: ")
