"""OpenAI chat.completion -> Anthropic Message (hydra_proxy.chat.response.reader).

Hand-built completions (table-driven) plus the completions that real recorded streams add
up to. Every result must parse with the official SDK's `anthropic.types.Message`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import orjson
import pytest

from hydra_proxy.canonical.tools import RAW_ARGUMENTS_KEY, tool_input_from_arguments
from hydra_proxy.chat.request.writer import ChatTarget, chat_request_from_messages
from hydra_proxy.chat.response.reader import message_from_chat_completion
from hydra_proxy.errors import ProxyError
from hydra_proxy.signature import sign_thinking, verify_thinking

KEY = b"test-signing-key"
MSG_ID = "msg_01TestTranslation"
MODEL = "claude-sonnet-4-5"


CHAT_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "chat"


# ------------------------------------------------------------------------- builders


def completion(
    message: dict[str, Any],
    finish: str | None = "stop",
    usage: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
        ],
        **extra,
    }
    if usage is not None:
        body["usage"] = usage
    return body


def usage(
    prompt: int = 10, completion_tokens: int = 5, cached: int | None = None
) -> dict[str, Any]:
    u: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt + completion_tokens,
    }
    if cached is not None:
        u["prompt_tokens_details"] = {"cached_tokens": cached}
    return u


def anthropic_usage(inp: int = 10, out: int = 5, cache_read: int = 0) -> dict[str, int]:
    return {
        "input_tokens": inp,
        "output_tokens": out,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cache_read,
    }


def message(
    content: list[dict[str, Any]], stop: str = "end_turn", u: dict[str, int] | None = None
) -> dict[str, Any]:
    return {
        "id": MSG_ID,
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": u or anthropic_usage(),
    }


def tc(call_id: str | None, name: str, arguments: Any) -> dict[str, Any]:
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if call_id is not None:
        call["id"] = call_id
    return call


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def tool_use(call_id: str, name: str, inp: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": inp}


def thinking(t: str, key: bytes = KEY) -> dict[str, Any]:
    return {"type": "thinking", "thinking": t, "signature": sign_thinking(t, key) if key else ""}


def case(name: str, chat: dict[str, Any], expected: dict[str, Any], key: bytes = KEY) -> Any:
    return pytest.param(chat, expected, key, id=name)


CASES = [
    case("plain text", completion({"content": "Hello!"}, usage=usage()), message([text("Hello!")])),
    case(
        "text then tool call",
        completion(
            {
                "content": "Let me look.",
                "tool_calls": [tc("call_1", "Read", '{"path":"/etc/hosts"}')],
            },
            "tool_calls",
            usage(),
        ),
        message(
            [text("Let me look."), tool_use("call_1", "Read", {"path": "/etc/hosts"})], "tool_use"
        ),
    ),
    case(
        "parallel tool calls keep their order and ids",
        completion(
            {
                "content": None,
                "tool_calls": [tc("call_a", "A", '{"x":1}'), tc("call_b", "B", '{"y":[1,2]}')],
            },
            "tool_calls",
            usage(),
        ),
        message(
            [tool_use("call_a", "A", {"x": 1}), tool_use("call_b", "B", {"y": [1, 2]})], "tool_use"
        ),
    ),
    case(
        "reasoning_content -> signed thinking block first",
        completion({"content": "4", "reasoning_content": "2 + 2 is 4."}, usage=usage()),
        message([thinking("2 + 2 is 4."), text("4")]),
    ),
    case(
        "no signing key -> empty signature",
        completion({"content": "4", "reasoning_content": "2 + 2 is 4."}, usage=usage()),
        message([thinking("2 + 2 is 4.", b""), text("4")]),
        b"",
    ),
    case(
        "reasoning (OpenRouter/Groq name) -> thinking",
        completion({"content": "hi", "reasoning": "greet back"}, usage=usage()),
        message([thinking("greet back"), text("hi")]),
    ),
    case(
        "reasoning_content preferred over reasoning",
        completion({"content": "hi", "reasoning_content": "A", "reasoning": "B"}, usage=usage()),
        message([thinking("A"), text("hi")]),
    ),
    case(
        "reasoning then tool call (DeepSeek tool turn)",
        completion(
            {
                "content": "",
                "reasoning_content": "Use the tool.",
                "tool_calls": [tc("call_0", "weather", '{"city":"SF"}')],
            },
            "tool_calls",
            usage(),
        ),
        message(
            [thinking("Use the tool."), tool_use("call_0", "weather", {"city": "SF"})], "tool_use"
        ),
    ),
    case(
        "whitespace-only text and reasoning produce no block",
        completion(
            {"content": "\n\n", "reasoning_content": "  ", "tool_calls": [tc("c1", "A", "{}")]},
            "tool_calls",
            usage(),
        ),
        message([tool_use("c1", "A", {})], "tool_use"),
    ),
    case(
        "empty answer -> empty content",
        completion({"content": ""}, usage=usage()),
        message([]),
    ),
    case(
        "content as a list of parts",
        completion(
            {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            usage=usage(),
        ),
        message([text("ab")]),
    ),
    case(
        "refusal shown as text, stop follows finish_reason",
        completion({"content": None, "refusal": "I can't help with that."}, usage=usage()),
        message([text("I can't help with that.")]),
    ),
    case(
        "finish stop with tool calls -> tool_use (older Ollama/vLLM)",
        completion({"content": None, "tool_calls": [tc("c1", "A", "{}")]}, "stop", usage()),
        message([tool_use("c1", "A", {})], "tool_use"),
    ),
    case(
        "finish length -> max_tokens",
        completion({"content": "trunc"}, "length", usage()),
        message([text("trunc")], "max_tokens"),
    ),
    case(
        "finish content_filter -> refusal",
        completion({"content": "partial"}, "content_filter", usage()),
        message([text("partial")], "refusal"),
    ),
    case(
        "finish missing -> end_turn",
        completion({"content": "x"}, None, usage()),
        message([text("x")]),
    ),
    case(
        "tool call cut by max_tokens keeps its raw arguments",
        completion(
            {"content": None, "tool_calls": [tc("c1", "Write", '{"path":"/a","conte')]},
            "length",
            usage(),
        ),
        message(
            [tool_use("c1", "Write", {RAW_ARGUMENTS_KEY: '{"path":"/a","conte'})], "max_tokens"
        ),
    ),
    case(
        "tool call without id gets a generated one",
        completion(
            {"content": None, "tool_calls": [tc(None, "A", "{}"), tc("", "B", "{}")]},
            "tool_calls",
            usage(),
        ),
        message(
            [
                tool_use("toolu_01TestTranslation_0", "A", {}),
                tool_use("toolu_01TestTranslation_1", "B", {}),
            ],
            "tool_use",
        ),
    ),
    case(
        "legacy function_call",
        completion(
            {"content": None, "function_call": {"name": "A", "arguments": '{"q":1}'}},
            "function_call",
            usage(),
        ),
        message([tool_use("toolu_01TestTranslation_0", "A", {"q": 1})], "tool_use"),
    ),
    case(
        "usage: cached tokens leave input_tokens",
        completion({"content": "x"}, usage=usage(339, 83, cached=320)),
        message([text("x")], u=anthropic_usage(19, 83, 320)),
    ),
    case(
        "usage: DeepSeek prompt_cache_hit_tokens",
        completion(
            {"content": "x"},
            usage={
                "prompt_tokens": 100,
                "completion_tokens": 2,
                "prompt_cache_hit_tokens": 64,
                "prompt_cache_miss_tokens": 36,
            },
        ),
        message([text("x")], u=anthropic_usage(36, 2, 64)),
    ),
    case(
        "no usage -> zeros",
        completion({"content": "x"}),
        message([text("x")], u=anthropic_usage(0, 0)),
    ),
    case(
        "usage with nulls -> zeros",
        completion(
            {"content": "x"},
            usage={"prompt_tokens": None, "completion_tokens": None, "prompt_tokens_details": None},
        ),
        message([text("x")], u=anthropic_usage(0, 0)),
    ),
    case(
        "extra fields tolerated (obfuscation, service_tier, x_groq, error: null)",
        completion(
            {"content": "x", "annotations": [], "audio": None},
            usage=usage(),
            service_tier="default",
            obfuscation="abc",
            x_groq={"id": "req_1"},
            system_fingerprint="fp",
            error=None,
        ),
        message([text("x")]),
    ),
]


@pytest.mark.parametrize(("chat", "expected", "key"), CASES)
def test_translation(chat: dict[str, Any], expected: dict[str, Any], key: bytes) -> None:
    got = message_from_chat_completion(chat, message_id=MSG_ID, model=MODEL, signing_key=key)
    assert got == expected
    assert "stop_sequence" in got and got["stop_sequence"] is None
    parsed = anthropic.types.Message.model_validate(got)
    assert parsed.model_dump(exclude_none=True)["content"] == orjson.loads(
        orjson.dumps(got["content"])
    )
    orjson.dumps(got)


@pytest.mark.parametrize("replay", [False, True])
def test_replay_flag_does_not_change_output(replay: bool) -> None:
    chat = completion({"content": "4", "reasoning_content": "think"}, usage=usage())
    got = message_from_chat_completion(
        chat, message_id=MSG_ID, model=MODEL, signing_key=KEY, replay_reasoning=replay
    )
    assert got == message([thinking("think"), text("4")])


ARGUMENTS = [
    pytest.param('{"a":1}', {"a": 1}, id="object"),
    pytest.param('  {"a": {"b": [1, "ü"]}}  ', {"a": {"b": [1, "ü"]}}, id="object with padding"),
    pytest.param("", {}, id="empty string"),
    pytest.param("   ", {}, id="blank"),
    pytest.param(None, {}, id="missing"),
    pytest.param("null", {}, id="json null"),
    pytest.param("{}", {}, id="empty object"),
    pytest.param({"a": 1}, {"a": 1}, id="object given directly"),
    pytest.param('"{\\"a\\":1}"', {"a": 1}, id="double-encoded"),
    pytest.param("{not json", {RAW_ARGUMENTS_KEY: "{not json"}, id="invalid JSON"),
    pytest.param("[1,2]", {RAW_ARGUMENTS_KEY: "[1,2]"}, id="array"),
    pytest.param('"text"', {RAW_ARGUMENTS_KEY: '"text"'}, id="string"),
    pytest.param("42", {RAW_ARGUMENTS_KEY: "42"}, id="number"),
    pytest.param(["x"], {RAW_ARGUMENTS_KEY: '["x"]'}, id="list given directly"),
]


@pytest.mark.parametrize(("arguments", "expected"), ARGUMENTS)
def test_tool_arguments(arguments: Any, expected: dict[str, Any]) -> None:
    assert tool_input_from_arguments(arguments) == expected


ERRORS = [
    pytest.param(
        {"error": {"code": 400, "message": "Token limit reached"}, "choices": []},
        400,
        "invalid_request_error",
        "Token limit reached",
        id="OpenRouter error in a 200 body",
    ),
    pytest.param(
        {
            "error": {
                "message": "Rate limit reached",
                "type": "rate_limit_exceeded",
                "code": "rate_limit_exceeded",
            }
        },
        429,
        "rate_limit_error",
        "Rate limit reached",
        id="rate limit",
    ),
    pytest.param(
        {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota"}},
        402,
        "billing_error",
        "quota",
        id="quota",
    ),
    pytest.param(
        {"error": {"code": 502, "message": "Provider down"}},
        500,
        "api_error",
        "Provider down",
        id="provider 502",
    ),
    pytest.param(
        {"error": {"code": 529, "message": "busy"}},
        529,
        "overloaded_error",
        "busy",
        id="overloaded",
    ),
    pytest.param({"error": "boom"}, 500, "api_error", "boom", id="error string"),
    pytest.param({"id": "x", "choices": []}, 500, "api_error", "no choices", id="empty choices"),
    pytest.param({"id": "x"}, 500, "api_error", "no choices", id="missing choices"),
    pytest.param({"choices": ["x"]}, 500, "api_error", "no choices", id="choice not an object"),
    pytest.param([], 500, "api_error", "not a JSON object", id="not an object"),
]


@pytest.mark.parametrize(("chat", "status", "error_type", "words"), ERRORS)
def test_upstream_errors(chat: Any, status: int, error_type: str, words: str) -> None:
    with pytest.raises(ProxyError) as info:
        message_from_chat_completion(chat, message_id=MSG_ID, model=MODEL)
    assert info.value.status == status
    assert info.value.error_type == error_type
    assert words in info.value.message


def test_missing_message_object_gives_empty_content() -> None:
    got = message_from_chat_completion(
        {"choices": [{"index": 0, "finish_reason": "stop"}]}, message_id=MSG_ID, model=MODEL
    )
    assert got == message([], u=anthropic_usage(0, 0))
    anthropic.types.Message.model_validate(got)


def test_signed_reasoning_round_trips_to_a_replay_target() -> None:
    """The signature carrier: reasoning -> signed thinking -> replayed -> reasoning_content."""
    reasoning = "The user wants the weather. Call the tool.\n"
    chat = completion(
        {
            "content": None,
            "reasoning_content": reasoning,
            "tool_calls": [tc("call_00_x", "weather", '{"city":"SF"}')],
        },
        "tool_calls",
        usage(),
    )
    reply = message_from_chat_completion(
        chat, message_id=MSG_ID, model=MODEL, signing_key=KEY, replay_reasoning=True
    )
    block = reply["content"][0]
    assert block["type"] == "thinking"
    assert verify_thinking(reasoning, block["signature"], KEY)
    assert not verify_thinking(reasoning, block["signature"], b"other")

    target = ChatTarget(
        model="deepseek-reasoner", reasoning=True, replay_reasoning=True, signing_key=KEY
    )
    follow_up = {
        "model": MODEL,
        "max_tokens": 1000,
        "messages": [
            {"role": "user", "content": "weather in SF?"},
            {"role": "assistant", "content": reply["content"]},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "call_00_x", "content": "sunny"}
                ],
            },
        ],
    }
    request = chat_request_from_messages(follow_up, target, stream=True)
    assert request["messages"][1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_00_x",
                "type": "function",
                "function": {"name": "weather", "arguments": '{"city":"SF"}'},
            }
        ],
        "reasoning_content": reasoning,
    }
    assert request["messages"][2] == {
        "role": "tool",
        "tool_call_id": "call_00_x",
        "content": "sunny",
    }


# --------------------------------------------------------------- recorded streams


def _chunks(path: Path) -> list[dict[str, Any]]:
    raw = path.read_bytes()
    if path.suffix == ".jsonl":
        return [orjson.loads(line) for line in raw.splitlines() if line.strip()]
    chunks = []
    for line in raw.replace(b"\r\n", b"\n").split(b"\n"):
        if line.startswith(b"data:"):
            data = line[5:].strip()
            if data and data != b"[DONE]":
                chunks.append(orjson.loads(data))
    return chunks


def completion_from_stream(path: Path) -> dict[str, Any]:
    """The non-streaming chat.completion that a recorded stream adds up to."""
    chunks = _chunks(path)
    content: list[str] = []
    reasoning: dict[str, list[str]] = {}
    refusal: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish = None
    found_usage = None
    error = None
    for chunk in chunks:
        if chunk.get("usage"):
            found_usage = chunk["usage"]
        if chunk.get("error"):
            error = chunk["error"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                content.append(delta["content"])
            for key in ("reasoning_content", "reasoning"):
                if delta.get(key):
                    reasoning.setdefault(key, []).append(delta[key])
            if delta.get("refusal"):
                refusal.append(delta["refusal"])
            for n, call in enumerate(delta.get("tool_calls") or []):
                slot = calls.setdefault(
                    call.get("index", n),
                    {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
                )
                if call.get("id"):
                    slot["id"] = call["id"]
                function = call.get("function") or {}
                slot["function"]["name"] += function.get("name") or ""
                slot["function"]["arguments"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
    msg: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    for key, parts in reasoning.items():
        msg[key] = "".join(parts)
    msg["refusal"] = "".join(refusal) or None
    if calls:
        msg["tool_calls"] = [calls[k] for k in sorted(calls)]
    body: dict[str, Any] = {
        "id": chunks[0].get("id"),
        "object": "chat.completion",
        "model": chunks[0].get("model"),
        "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
    }
    if found_usage is not None:
        body["usage"] = found_usage
    if error is not None:
        body["error"] = error
    return body


def recorded(name: str) -> dict[str, Any]:
    return completion_from_stream(CHAT_FIXTURES / name)


def summary(msg: dict[str, Any]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for block in msg["content"]:
        if block["type"] == "text":
            out.append(("text", block["text"]))
        elif block["type"] == "thinking":
            out.append(("thinking", block["thinking"]))
        else:
            out.append(("tool_use", block["id"], block["name"], block["input"]))
    return out


RECORDINGS = [
    pytest.param(
        "pydantic-gpt4omini-tool-then-answer.1.sse",
        [("tool_use", "call_ZR5UUuTt3pf61kjwAJIYdVMj", "get_capital", {"country": "UK"})],
        "tool_use",
        anthropic_usage(53, 15),
        id="gpt-4o-mini tool call",
    ),
    pytest.param(
        "pydantic-gpt4omini-tool-then-answer.2.sse",
        [("text", "The capital of the UK is London.")],
        "end_turn",
        anthropic_usage(78, 9),
        id="gpt-4o-mini answer after tool",
    ),
    pytest.param(
        "oaipy-gpt4o-text-usage.sse",
        [
            (
                "text",
                "I'm unable to provide real-time weather updates. To get the current weather in San "
                "Francisco, I recommend checking a reliable weather website or a weather app.",
            )
        ],
        "end_turn",
        anthropic_usage(14, 30),
        id="gpt-4o text",
    ),
    pytest.param(
        "oaipy-gpt4o-max-tokens-length.sse",
        [("text", '{"')],
        "max_tokens",
        anthropic_usage(79, 1),
        id="gpt-4o max tokens",
    ),
    pytest.param(
        "oaipy-gpt4o-refusal.sse",
        [("text", "I'm sorry, I can't assist with that request.")],
        "end_turn",
        anthropic_usage(79, 11),
        id="gpt-4o refusal",
    ),
    pytest.param(
        "oaipy-gpt4o-tool-call.sse",
        [
            (
                "tool_use",
                "call_c91SqDXlYFuETYv8mUHzz6pp",
                "GetWeatherArgs",
                {"city": "Edinburgh", "country": "UK", "units": "c"},
            )
        ],
        "tool_use",
        anthropic_usage(76, 24),
        id="gpt-4o tool call",
    ),
    pytest.param(
        "oaipy-gpt4o-parallel-tool-calls.sse",
        [
            (
                "tool_use",
                "call_JMW1whyEaYG438VE1OIflxA2",
                "GetWeatherArgs",
                {"city": "Edinburgh", "country": "GB", "units": "c"},
            ),
            (
                "tool_use",
                "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                "get_stock_price",
                {"ticker": "AAPL", "exchange": "NASDAQ"},
            ),
        ],
        "tool_use",
        anthropic_usage(149, 60),
        id="gpt-4o parallel tool calls",
    ),
    pytest.param(
        "vercel-deepseek-reasoning-content.jsonl",
        None,  # checked below: thinking then text
        "end_turn",
        anthropic_usage(18, 219),
        id="deepseek reasoning",
    ),
    pytest.param(
        "vercel-deepseek-reasoning-then-tool-call.jsonl",
        [
            (
                "thinking",
                "The user is asking for the weather in San Francisco. I need to use the weather "
                "tool to get this information. Let me invoke the weather tool with the location "
                'parameter set to "San Francisco".',
            ),
            (
                "tool_use",
                "call_00_ioIn7yN9p1ZOMNpDLwd4MgAF",
                "weather",
                {"location": "San Francisco"},
            ),
        ],
        "tool_use",
        anthropic_usage(19, 83, 320),
        id="deepseek reasoning then tool call (cached)",
    ),
    pytest.param(
        "vercel-groq-tool-call-single-chunk.jsonl",
        [("tool_use", "tk85n1k4m", "weather", {})],
        "tool_use",
        anthropic_usage(210, 15),
        id="groq single-chunk tool call",
    ),
    pytest.param(
        "pydantic-zai-glm-reasoning-content.sse",
        None,
        "end_turn",
        anthropic_usage(13, 564),
        id="glm reasoning",
    ),
]


@pytest.mark.parametrize(("name", "expected", "stop", "expected_usage"), RECORDINGS)
def test_recorded_completions(
    name: str, expected: list[tuple[Any, ...]] | None, stop: str, expected_usage: dict[str, int]
) -> None:
    chat = recorded(name)
    got = message_from_chat_completion(chat, message_id=MSG_ID, model=MODEL, signing_key=KEY)
    parsed = anthropic.types.Message.model_validate(got)
    assert parsed.stop_reason == stop
    assert parsed.stop_sequence is None
    assert got["usage"] == expected_usage
    assert got["id"] == MSG_ID and got["model"] == MODEL
    if expected is not None:
        assert summary(got) == expected
    reasoning = chat["choices"][0]["message"].get("reasoning_content")
    if reasoning:
        first = got["content"][0]
        assert first == {
            "type": "thinking",
            "thinking": reasoning,
            "signature": sign_thinking(reasoning, KEY),
        }
        assert [b["type"] for b in got["content"]] == ["thinking"] + [
            "text" if b["type"] == "text" else "tool_use" for b in got["content"][1:]
        ]
    if expected is None:
        kinds = [b["type"] for b in got["content"]]
        assert kinds == ["thinking", "text"]
        assert got["content"][1]["text"] == chat["choices"][0]["message"]["content"]


def test_recorded_openrouter_midstream_error() -> None:
    chat = recorded("pydantic-openrouter-midstream-error.sse")
    with pytest.raises(ProxyError) as info:
        message_from_chat_completion(chat, message_id=MSG_ID, model=MODEL)
    assert info.value.status == 400
    assert info.value.error_type == "invalid_request_error"
    assert info.value.message == "Token limit reached"

    # The same body without the error: OpenRouter's `reasoning` becomes a thinking block.
    del chat["error"]
    got = message_from_chat_completion(chat, message_id=MSG_ID, model=MODEL, signing_key=KEY)
    anthropic.types.Message.model_validate(got)
    assert [b["type"] for b in got["content"]] == ["thinking"]
    assert got["content"][0]["thinking"].startswith("We need to respond to a greeting.")
    assert got["stop_reason"] == "max_tokens"
