"""OpenAI Chat clients on Claude, end to end: the official `openai` SDK against the running
proxy, over the mock Anthropic upstream replaying the recorded Anthropic streams; and Zed's
two ways of replaying reasoning across a tool turn, checked on the request Anthropic gets.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from hydra_proxy import continuation
from hydra_proxy.mock import MockServer
from support.chat_chunks import anthropic_truth, sealed
from support.implementations import ANTHROPIC_STREAMS, IMPLEMENTATIONS, NATIVE_MISSING, _native
from support.servers import ProxyServer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
REPLAYS = sorted(name for name in ANTHROPIC_STREAMS if name.endswith((".sse", ".jsonl")))


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer(fixtures=FIXTURES) as server:
        yield server


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def proxy(request: pytest.FixtureRequest, mock: MockServer) -> Iterator[ProxyServer]:
    if request.param == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    env = {"ANTHROPIC_API_KEY": "sk-ant-upstream-SECRET"}
    with ProxyServer(mock.url, "--provider", "anthropic", impl=request.param, env=env) as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


def client(proxy: ProxyServer, *, zed: bool = True) -> openai.OpenAI:
    # Zed is recognised by its user agent and gets the continuation suffix.
    headers = {"user-agent": "Zed/0.210.0 (linux; x86_64)"} if zed else {}
    return openai.OpenAI(
        base_url=proxy.url + "/v1", api_key="client-key", max_retries=0, default_headers=headers
    )


def collect(stream: Any) -> dict[str, Any]:
    text, reasoning, tools, finish, usage = [], [], {}, None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            delta = choice.delta
            text.append(delta.content or "")
            reasoning.append((delta.model_extra or {}).get("reasoning_content") or "")
            for call in delta.tool_calls or []:
                entry = tools.setdefault(
                    call.index, {"id": call.id, "name": call.function.name, "arguments": ""}
                )
                entry["arguments"] += call.function.arguments or ""
            finish = choice.finish_reason or finish
    return {
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "tools": list(tools.values()),
        "finish": finish,
        "usage": usage,
    }


@pytest.mark.parametrize("name", REPLAYS)
def test_openai_sdk_streams_every_recording(
    proxy: ProxyServer, mock: MockServer, name: str
) -> None:
    mock.script([{"replay": f"anthropic/{name}"}])
    stream = client(proxy).chat.completions.create(
        model="claude-sonnet-4-5", messages=[{"role": "user", "content": "hi"}], stream=True,
        stream_options={"include_usage": True},
    )  # fmt: skip
    got = collect(stream)
    truth = anthropic_truth(ANTHROPIC_STREAMS[name])
    assert got["text"] == truth["text"]
    assert [(t["id"], t["name"], json.loads(t["arguments"])) for t in got["tools"]] == truth[
        "tools"
    ]
    assert got["finish"] == truth["finish"]
    assert (
        got["usage"].prompt_tokens == truth["prompt"]
        and got["usage"].completion_tokens == truth["completion"]
    )
    if truth["blocks"]:
        assert sealed(got["reasoning"], _signing_key(proxy)) == truth["blocks"]
    else:
        assert got["reasoning"] == truth["reasoning"]
    sent = mock.requests()[-1]
    assert sent["path"] == "/v1/messages" and sent["headers"]["x-api-key"] == "<redacted>"
    assert sent["body"]["stream"] is True
    assert sent["body"]["messages"] in (
        [{"role": "user", "content": "hi"}],
        [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    )


def _signing_key(proxy: ProxyServer) -> bytes:
    return (Path(proxy.home.name) / "signing-key").read_bytes()


def test_non_streamed_redacted_thinking(proxy: ProxyServer, mock: MockServer) -> None:
    mock.script([{"replay": "anthropic/pydantic-nonstream-redacted-thinking.1.response.json"}])
    completion = client(proxy).chat.completions.create(
        model="claude-sonnet-4-5", messages=[{"role": "user", "content": "hi"}]
    )
    recorded = json.loads(
        (FIXTURES / "anthropic/pydantic-nonstream-redacted-thinking.1.response.json").read_text()
    )["body"]
    message = completion.choices[0].message
    texts = [b["text"] for b in recorded["content"] if b["type"] == "text"]
    assert message.content == "".join(texts) or message.content == "\n".join(texts)
    reasoning = (message.model_extra or {})["reasoning_content"]
    assert sealed(reasoning, _signing_key(proxy)) == [
        continuation.RedactedBlock(b["data"])
        for b in recorded["content"]
        if b["type"] == "redacted_thinking"
    ]
    assert (
        completion.usage is not None
        and completion.usage.prompt_tokens >= recorded["usage"]["input_tokens"]
    )


def test_no_suffix_for_clients_that_do_not_replay(proxy: ProxyServer, mock: MockServer) -> None:
    mock.script([{"replay": "anthropic/pydantic-thinking-signature.sse"}])
    stream = client(proxy, zed=False).chat.completions.create(
        model="claude-x", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    got = collect(stream)
    assert got["reasoning"] and continuation.PREFIX not in got["reasoning"]


@pytest.mark.parametrize(
    ("turn", "error"),
    [
        ({"error": {"status": 429, "type": "rate_limit_error", "message": "Slow down", "retry_after": "30"}}, openai.RateLimitError),
        ({"error": {"status": 400, "type": "invalid_request_error", "message": "bad thing"}}, openai.BadRequestError),
        ({"error": {"status": 529, "type": "overloaded_error", "message": "Overloaded"}}, openai.InternalServerError),
    ],
)  # fmt: skip
def test_upstream_errors_in_openai_shape(
    proxy: ProxyServer, mock: MockServer, turn: dict[str, Any], error: type
) -> None:
    mock.script([turn] * 3)
    with pytest.raises(error) as info:
        client(proxy).chat.completions.create(
            model="claude-x", messages=[{"role": "user", "content": "hi"}]
        )
    body = info.value.body  # type: ignore[attr-defined]
    assert set(body) >= {"message", "type"} and turn["error"]["message"] in body["message"]


def test_in_stream_error_raises(proxy: ProxyServer, mock: MockServer) -> None:
    mock.script(
        [
            {
                "text": "partial answer",
                "stream_error": {"type": "overloaded_error", "message": "Overloaded"},
            }
        ]
    )
    with pytest.raises(openai.APIError, match="Overloaded"):
        collect(
            client(proxy).chat.completions.create(
                model="claude-x", messages=[{"role": "user", "content": "hi"}], stream=True
            )
        )


def test_bad_request_names_the_field(proxy: ProxyServer) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client(proxy).chat.completions.create(
            model="claude-x", messages=[{"role": "user", "content": "hi"}], n=2
        )
    assert info.value.body["param"] == "n"  # type: ignore[index]


# -- Zed's reasoning replay across a tool turn -------------------------------------------------

REASONING = 'The user wants 2+2 — I\'ll use the calculator. 🧮 "quoted"\n'
TURN_1 = {
    "reasoning": REASONING,
    "signature": "EqQBCkgIARABGAIiQL1uNSIG_sig_A==",
    "redacted_thinking": ["EmwKAhgBEgy3va3pzix/LafPsn4a_redacted_X"],
    "text": "Let me compute that.",
    "tool_calls": [{"id": "toolu_calc1", "name": "calc", "arguments": {"expr": "2+2"}}],
    "chunk_size": 5,
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "calc",
            "parameters": {"type": "object", "properties": {"expr": {"type": "string"}}},
        },
    }
]


def _first_turn(proxy: ProxyServer, mock: MockServer) -> dict[str, Any]:
    mock.script([TURN_1, {"text": "It is 4."}])
    got = collect(
        client(proxy).chat.completions.create(
            model="claude-sonnet-4-5", messages=[{"role": "user", "content": "What is 2+2?"}], tools=TOOLS,  # type: ignore[arg-type]
            reasoning_effort="medium", stream=True, stream_options={"include_usage": True},
        )
    )  # fmt: skip
    assert got["text"] == TURN_1["text"] and got["finish"] == "tool_calls"
    assert got["reasoning"].startswith(REASONING + continuation.PREFIX)
    return got


def _second_turn(proxy: ProxyServer, mock: MockServer, assistant: dict[str, Any]) -> dict[str, Any]:
    messages = [
        {"role": "user", "content": "What is 2+2?"},
        assistant,
        {"role": "tool", "tool_call_id": "toolu_calc1", "content": "4"},
    ]
    got = collect(
        client(proxy).chat.completions.create(
            model="claude-sonnet-4-5",
            messages=messages,
            tools=TOOLS,
            reasoning_effort="medium",
            stream=True,  # type: ignore[arg-type]
        )
    )
    assert got["text"] == "It is 4."
    sent: dict[str, Any] = mock.requests()[-1]["body"]
    assert continuation.PREFIX.strip() not in json.dumps(sent), "no suffix reaches Anthropic"
    return sent


EXPECTED_ASSISTANT = [
    {"type": "thinking", "thinking": REASONING, "signature": TURN_1["signature"]},
    {"type": "redacted_thinking", "data": TURN_1["redacted_thinking"][0]},  # type: ignore[index]
    {"type": "text", "text": "Let me compute that."},
    {"type": "tool_use", "id": "toolu_calc1", "name": "calc", "input": {"expr": "2+2"}},
]


def _tool_calls(got: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "id": t["id"],
            "type": "function",
            "function": {"name": t["name"], "arguments": t["arguments"]},
        }
        for t in got["tools"]
    ]


def test_zed_interleaved_reasoning_replay(proxy: ProxyServer, mock: MockServer) -> None:
    got = _first_turn(proxy, mock)
    assistant = {
        "role": "assistant",
        "content": got["text"],
        "reasoning_content": got["reasoning"],
        "tool_calls": _tool_calls(got),
    }
    sent = _second_turn(proxy, mock, assistant)
    assert sent["messages"][1] == {"role": "assistant", "content": EXPECTED_ASSISTANT}
    assert sent["thinking"]["type"] in ("enabled", "adaptive")
    assert sent["messages"][2]["content"][0]["type"] == "tool_result"


@pytest.mark.parametrize("separator", ["", "\n\n"])
def test_zed_default_replay_as_plain_text(
    proxy: ProxyServer, mock: MockServer, separator: str
) -> None:
    got = _first_turn(proxy, mock)
    # Zed's default: the thinking text falls through to the text arm, before the visible text.
    assistant = {
        "role": "assistant",
        "content": got["reasoning"] + separator + got["text"],
        "tool_calls": _tool_calls(got),
    }
    sent = _second_turn(proxy, mock, assistant)
    assert sent["messages"][1] == {"role": "assistant", "content": EXPECTED_ASSISTANT}
    assert REASONING not in json.dumps(
        [b for b in sent["messages"][1]["content"] if b["type"] == "text"]
    )


def test_plain_reasoning_is_never_forged(proxy: ProxyServer, mock: MockServer) -> None:
    got = _first_turn(proxy, mock)
    plain = got["reasoning"][: got["reasoning"].index(continuation.PREFIX)]
    assistant = {
        "role": "assistant",
        "content": got["text"],
        "reasoning_content": plain,
        "tool_calls": _tool_calls(got),
    }
    sent = _second_turn(proxy, mock, assistant)
    blocks = sent["messages"][1]["content"]
    assert [b["type"] for b in blocks] == ["text", "tool_use"], "unsigned reasoning is dropped"
    assert "thinking" not in sent or sent["thinking"]["type"] == "disabled", (
        "thinking is off rather than a 400"
    )
