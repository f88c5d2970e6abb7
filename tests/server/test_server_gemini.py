"""The running proxy on a native Gemini upstream (provider kind `gemini`): the anthropic SDK
and the openai Chat SDK over every Gemini recording the mock replays, streamed and not; a
function-calling conversation whose thoughtSignature reaches Gemini again on the next turn;
Gemini's 429 with RetryInfo as each client's rate-limit error with retry-after.

Each test runs against a proxy on each transducer implementation (native and pure-Python).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from hydra_proxy.mock import MockServer
from support.gemini_fixtures import GEMINI, stream_chunks
from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING, _native
from support.servers import ProxyServer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
GEMINI_KEY = "AIza-test-gemini-SECRET-321"
MODEL = "gemini-3-pro-preview"
STREAMS = sorted(p.name for p in GEMINI.iterdir() if p.suffix in (".sse", ".jsonl"))
COMPLETES = sorted(
    p.name for p in GEMINI.glob("vercel-google-*.json") if "candidates" in p.read_text()
)
WEATHER_TOOL = {
    "name": "getWeather",
    "description": "The weather in a city",
    "input_schema": {
        "type": "object",
        "properties": {"location": {"type": "string"}},
        "required": ["location"],
    },
}


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer(fixtures=FIXTURES) as server:
        yield server


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def proxy(request: pytest.FixtureRequest, mock: MockServer) -> Iterator[ProxyServer]:
    if request.param == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    env = {"GEMINI_API_KEY": GEMINI_KEY, "HYDRA_CONTINUATION": "always"}
    args = ("--provider", "gemini-native")
    with ProxyServer(mock.url + "/v1beta", *args, impl=request.param, env=env) as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


def anthropic_client(proxy: ProxyServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=proxy.url, api_key="sk-client", max_retries=0)


def chat_client(proxy: ProxyServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-client", max_retries=0)


def expected(parts: list[dict[str, Any]]) -> tuple[str, str, list[str]]:
    """(text, thinking, tool names) of a recording's parts, read straight off the parts."""
    text = "".join(p["text"] for p in parts if "text" in p and not p.get("thought"))
    thinking = "".join(p["text"] for p in parts if "text" in p and p.get("thought"))
    names = [p["functionCall"]["name"] for p in parts if p.get("functionCall", {}).get("name")]
    return text, thinking, names


def stream_parts(name: str) -> list[dict[str, Any]]:
    return [
        part
        for chunk in stream_chunks(name)
        for candidate in chunk.get("candidates", [])[:1]
        for part in candidate.get("content", {}).get("parts", [])
    ]


def complete_parts(name: str) -> list[dict[str, Any]]:
    data = json.loads((GEMINI / name).read_text())
    body = data.get("body", data)
    parts: list[dict[str, Any]] = body["candidates"][0]["content"]["parts"]
    return parts


def message_summary(message: Any) -> tuple[str, str, list[str]]:
    blocks = message.content
    return (
        "".join(b.text for b in blocks if b.type == "text"),
        "".join(b.thinking for b in blocks if b.type == "thinking"),
        [b.name for b in blocks if b.type == "tool_use"],
    )


def ask(**extra: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "max_tokens": 2000,
        "messages": [{"role": "user", "content": "What is the weather in Boston?"}],
        "tools": [WEATHER_TOOL],
        **extra,
    }


@pytest.mark.parametrize("name", STREAMS)
def test_anthropic_sdk_streams_every_recording(
    proxy: ProxyServer, mock: MockServer, name: str
) -> None:
    mock.script([{"replay": f"gemini/{name}"}])
    with anthropic_client(proxy).messages.stream(**ask()) as stream:
        message = stream.get_final_message()
    text, thinking, names = expected(stream_parts(name))
    assert message_summary(message) == (text, thinking, names)
    assert message.stop_reason == ("tool_use" if names else "end_turn")
    for block in message.content:
        if block.type == "tool_use":
            assert isinstance(block.input, dict) and block.id.startswith("toolu_")
    sent = mock.requests()[-1]
    assert sent["path"] == f"/v1beta/models/{MODEL}:streamGenerateContent"
    assert sent["headers"]["x-goog-api-key"] != ""
    assert sent["body"]["contents"][0]["parts"][0]["text"] == "What is the weather in Boston?"


@pytest.mark.parametrize("name", COMPLETES)
def test_anthropic_sdk_reads_every_complete_recording(
    proxy: ProxyServer, mock: MockServer, name: str
) -> None:
    mock.script([{"replay": f"gemini/{name}"}])
    message = anthropic_client(proxy).messages.create(**ask())
    assert message_summary(message) == expected(complete_parts(name))
    assert mock.requests()[-1]["path"] == f"/v1beta/models/{MODEL}:generateContent"


def _chat_stream(proxy: ProxyServer) -> tuple[str, str, list[str], str | None]:
    stream = chat_client(proxy).chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "What is the weather in Boston?"}],
        tools=[
            {
                "type": "function",
                "function": {"name": "getWeather", "parameters": WEATHER_TOOL["input_schema"]},
            }
        ],
        stream=True,
    )
    text, reasoning, names, finish = [], [], [], None
    for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        text.append(delta.content or "")
        reasoning.append(getattr(delta, "reasoning_content", None) or "")
        for call in delta.tool_calls or []:
            if call.function and call.function.name:
                names.append(call.function.name)
        finish = chunk.choices[0].finish_reason or finish
    return "".join(text), "".join(reasoning), names, finish


@pytest.mark.parametrize("name", STREAMS)
def test_openai_sdk_streams_every_recording(
    proxy: ProxyServer, mock: MockServer, name: str
) -> None:
    mock.script([{"replay": f"gemini/{name}"}])
    text, reasoning, names, finish = _chat_stream(proxy)
    want_text, want_thinking, want_names = expected(stream_parts(name))
    # The continuation suffix (the signed thinking) follows the reasoning of a thinking turn.
    assert text == want_text and reasoning.startswith(want_thinking) and names == want_names
    assert finish == ("tool_calls" if want_names else "stop")


@pytest.mark.parametrize("name", COMPLETES)
def test_openai_sdk_reads_every_complete_recording(
    proxy: ProxyServer, mock: MockServer, name: str
) -> None:
    mock.script([{"replay": f"gemini/{name}"}])
    completion = chat_client(proxy).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "What is the weather in Boston?"}]
    )
    want_text, want_thinking, want_names = expected(complete_parts(name))
    choice = completion.choices[0]
    assert (choice.message.content or "") == want_text
    reasoning = (choice.message.model_extra or {}).get("reasoning_content") or ""
    assert reasoning.startswith(want_thinking)  # then the continuation suffix
    assert [c.function.name for c in choice.message.tool_calls or []] == want_names


# -- thought signatures back on the next turn ----------------------------------------------

CALL_TURN = "pydantic-gemini3pro-stream-function-call-thought-signature.1.sse"


def _signatures(parts: list[dict[str, Any]]) -> list[str]:
    return [p["thoughtSignature"] for p in parts if "thoughtSignature" in p]


def test_anthropic_client_replays_the_thought_signature(
    proxy: ProxyServer, mock: MockServer
) -> None:
    mock.script([{"replay": f"gemini/{CALL_TURN}"}, {"text": "Sunny."}])
    client = anthropic_client(proxy)
    with client.messages.stream(**ask()) as stream:
        first = stream.get_final_message()
    call = next(b for b in first.content if b.type == "tool_use")
    second = ask(
        messages=[
            {"role": "user", "content": "What is the weather in Boston?"},
            {"role": "assistant", "content": [b.model_dump() for b in first.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "sunny"}],
            },
        ]
    )
    with client.messages.stream(**second) as stream:
        assert stream.get_final_message().content[0].text == "Sunny."
    recorded = _signatures(stream_parts(CALL_TURN))
    assert recorded
    replayed = mock.requests()[-1]["body"]["contents"]
    model_turn = next(c for c in replayed if c["role"] == "model")
    calls = [p for p in model_turn["parts"] if "functionCall" in p]
    assert calls and calls[0]["functionCall"]["name"] == call.name
    assert _signatures(model_turn["parts"]) == recorded
    response = next(p for c in replayed for p in c["parts"] if "functionResponse" in p)
    assert response["functionResponse"]["name"] == call.name


COMPLETE_CALL_TURN = "vercel-google-tool-call-gemini3.json"


def test_chat_client_replays_the_thought_signature(proxy: ProxyServer, mock: MockServer) -> None:
    mock.script([{"replay": f"gemini/{COMPLETE_CALL_TURN}"}, {"text": "Sunny."}])
    client = chat_client(proxy)
    tools: Any = [
        {
            "type": "function",
            "function": {"name": "getWeather", "parameters": WEATHER_TOOL["input_schema"]},
        }
    ]
    user = {"role": "user", "content": "What is the weather in Boston?"}
    first = client.chat.completions.create(model=MODEL, messages=[user], tools=tools)
    message = first.choices[0].message
    assert message.tool_calls
    call = message.tool_calls[0]
    assistant: dict[str, Any] = {
        "role": "assistant",
        "content": message.content,
        # carries the continuation suffix, as Zed sends it back
        "reasoning_content": (message.model_extra or {})["reasoning_content"],
        "tool_calls": [c.model_dump() for c in message.tool_calls],
    }
    client.chat.completions.create(
        model=MODEL,
        messages=[user, assistant, {"role": "tool", "tool_call_id": call.id, "content": "sunny"}],
        tools=tools,
    )
    replayed = mock.requests()[-1]["body"]["contents"]
    model_turn = next(c for c in replayed if c["role"] == "model")
    recorded = _signatures(complete_parts(COMPLETE_CALL_TURN))
    assert recorded and _signatures(model_turn["parts"]) == recorded


# -- errors ----------------------------------------------------------------------------------

RATE_LIMITED = {"replay": "gemini/vercel-google-429-retry-info.json"}


def test_rate_limit_in_anthropic_shape(proxy: ProxyServer, mock: MockServer) -> None:
    mock.script([RATE_LIMITED] * 8)  # every attempt: the delay is in the body only
    with pytest.raises(anthropic.RateLimitError) as caught:
        anthropic_client(proxy).messages.create(**ask())
    assert caught.value.response.headers["retry-after"] == "35"
    assert caught.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    assert GEMINI_KEY not in caught.value.response.text


def test_rate_limit_in_openai_shape(proxy: ProxyServer, mock: MockServer) -> None:
    mock.script([RATE_LIMITED] * 8)  # every attempt: the delay is in the body only
    with pytest.raises(openai.RateLimitError) as caught:
        chat_client(proxy).chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}], stream=True
        )
    assert caught.value.response.headers["retry-after"] == "35"
    assert "quota" in caught.value.message


# -- OpenAI Responses clients (Codex) on Gemini ----------------------------------------------

RESPONSES_TOOL: Any = {
    "type": "function",
    "name": "getWeather",
    "parameters": WEATHER_TOOL["input_schema"],
}


def _responses_summary(response: dict[str, Any]) -> tuple[str, str, list[str]]:
    output = response["output"]
    text = "".join(
        part["text"]
        for item in output
        if item["type"] == "message"
        for part in item["content"]
        if part["type"] == "output_text"
    )
    thinking = "".join(
        part["text"] for item in output if item["type"] == "reasoning" for part in item["summary"]
    )
    names = [item["name"] for item in output if item["type"] == "function_call"]
    return text, thinking, names


@pytest.mark.parametrize("name", STREAMS)
def test_responses_sdk_streams_every_recording(
    proxy: ProxyServer, mock: MockServer, name: str
) -> None:
    mock.script([{"replay": f"gemini/{name}"}])
    with chat_client(proxy).responses.stream(
        model=MODEL,
        input="What is the weather in Boston?",
        tools=[RESPONSES_TOOL],
        store=False,
        include=["reasoning.encrypted_content"],
        reasoning={"effort": "low", "summary": "auto"},
    ) as stream:
        got = stream.get_final_response().model_dump(mode="json")
    assert _responses_summary(got) == expected(stream_parts(name))
    signatures = _signatures(stream_parts(name))
    if signatures:  # carried to the client inside the reasoning item's encrypted_content
        reasoning = [i for i in got["output"] if i["type"] == "reasoning"]
        assert reasoning and all(
            i["encrypted_content"].startswith("hydra-reasoning:v1:") for i in reasoning
        )
    assert ":streamGenerateContent" in mock.requests()[-1]["path"]


@pytest.mark.parametrize("name", COMPLETES)
def test_responses_sdk_reads_every_complete_recording(
    proxy: ProxyServer, mock: MockServer, name: str
) -> None:
    mock.script([{"replay": f"gemini/{name}"}])
    got = chat_client(proxy).responses.create(
        model=MODEL,
        input="What is the weather in Boston?",
        store=False,
        reasoning={"summary": "auto"},
    )
    text, _, names = expected(complete_parts(name))
    summary = _responses_summary(got.model_dump(mode="json"))
    assert (summary[0], summary[2]) == (text, names)


def test_responses_client_replays_the_thought_signature(
    proxy: ProxyServer, mock: MockServer
) -> None:
    mock.script([{"replay": f"gemini/{CALL_TURN}"}, {"text": "Sunny."}])
    client = chat_client(proxy)
    ask_once: Any = {
        "model": MODEL,
        "tools": [RESPONSES_TOOL],
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }
    question = {"role": "user", "content": "What is the weather in Boston?"}
    with client.responses.stream(input=[question], **ask_once) as stream:
        first = stream.get_final_response().model_dump(mode="json")
    call = next(i for i in first["output"] if i["type"] == "function_call")
    replay = [
        {k: v for k, v in item.items() if k != "status" or item["type"] != "reasoning"}
        for item in first["output"]
    ]
    second_input = [
        question,
        *replay,
        {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"},
    ]
    assert client.responses.create(input=second_input, **ask_once).output_text == "Sunny."
    replayed = mock.requests()[-1]["body"]["contents"]
    model_turn = next(c for c in replayed if c["role"] == "model")
    assert _signatures(model_turn["parts"]) == _signatures(stream_parts(CALL_TURN))


def test_rate_limit_in_responses_shape(proxy: ProxyServer, mock: MockServer) -> None:
    mock.script([RATE_LIMITED] * 8)  # every attempt: the delay is in the body only
    with pytest.raises(openai.RateLimitError) as caught:
        chat_client(proxy).responses.create(model=MODEL, input="hi", stream=True, store=False)
    assert caught.value.response.headers["retry-after"] == "35"
    assert "quota" in caught.value.message
