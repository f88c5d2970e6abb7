"""The running proxy and OpenAI Responses: the openai SDK's `responses.stream` /
`responses.create` through `POST /v1/responses` (passed through to a `responses` provider,
or translated onto Chat and Anthropic upstreams), and Anthropic / Chat clients on a
`responses` provider; the proxy's state refusals and errors in OpenAI's shape.

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
from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING, _native
from support.servers import ProxyServer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
RESPONSES = FIXTURES / "responses"
MODEL = "gpt-5.1-codex"
TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def _events(name: str) -> list[dict[str, Any]]:
    raw = (RESPONSES / name).read_text(encoding="utf-8")
    if name.endswith(".sse"):
        return [json.loads(line[5:]) for line in raw.splitlines() if line.startswith("data:")]
    return [json.loads(line) for line in raw.splitlines() if line.strip()]


def final_response(name: str) -> dict[str, Any]:
    """The response a recorded stream ends with (its terminal event's)."""
    last = [e for e in _events(name) if e.get("type") in TERMINAL]
    response: dict[str, Any] = last[-1]["response"]
    return response


def _body(name: str) -> Any:
    data = json.loads((RESPONSES / name).read_text(encoding="utf-8"))
    return data.get("body", data) if isinstance(data, dict) and "status" in data else data


STREAMS = sorted(
    p.name
    for p in RESPONSES.iterdir()
    if p.suffix in (".sse", ".jsonl")
    and any(e.get("type") in TERMINAL for e in _events(p.name))
    # one response per stream (a multi-step agent recording holds several)
    and sum(e.get("type") == "response.created" for e in _events(p.name)) == 1
)
COMPLETES = sorted(
    p.name
    for p in RESPONSES.glob("*.json")
    if not p.name.endswith(".request.json")
    and isinstance(_body(p.name), dict)
    and _body(p.name).get("object") == "response"
)


def output_text(response: dict[str, Any]) -> str:
    return "".join(
        part.get("text", "")
        for item in response.get("output") or []
        if item.get("type") == "message"
        for part in item.get("content") or []
        if part.get("type") == "output_text"
    )


def calls(response: dict[str, Any]) -> list[tuple[str, Any]]:
    return [
        (item["name"], json.loads(item["arguments"] or "{}"))
        for item in response.get("output") or []
        if item.get("type") == "function_call"
    ]


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer(fixtures=FIXTURES) as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


def _proxy(request: pytest.FixtureRequest, base_url: str, *args: str) -> Iterator[ProxyServer]:
    if request.param == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    env = {"ANTHROPIC_API_KEY": "sk-ant-upstream-SECRET"}
    with ProxyServer(base_url, *args, impl=request.param, env=env) as server:
        yield server


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def on_responses(request: pytest.FixtureRequest, mock: MockServer) -> Iterator[ProxyServer]:
    yield from _proxy(request, mock.url + "/v1", "--provider", "openai-responses")


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def on_chat(request: pytest.FixtureRequest, mock: MockServer) -> Iterator[ProxyServer]:
    yield from _proxy(request, mock.url + "/v1")


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def on_anthropic(request: pytest.FixtureRequest, mock: MockServer) -> Iterator[ProxyServer]:
    yield from _proxy(request, mock.url, "--provider", "anthropic")


def responses_client(proxy: ProxyServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-client", max_retries=0)


# -- Responses clients on a Responses upstream: passed through ---------------------------


@pytest.mark.parametrize("name", STREAMS)
def test_sdk_stream_rebuilds_every_recording(
    on_responses: ProxyServer, mock: MockServer, name: str
) -> None:
    mock.script([{"replay": f"responses/{name}"}])
    recorded = final_response(name)
    with responses_client(on_responses).responses.stream(model=MODEL, input="hi") as stream:
        got = stream.get_final_response().model_dump(mode="json")
    assert got["id"] == recorded["id"] and got["status"] == recorded["status"]
    assert [i["id"] for i in got["output"]] == [i["id"] for i in recorded["output"]]
    assert output_text(got) == output_text(recorded) and calls(got) == calls(recorded)
    sent = mock.requests()[-1]
    assert sent["path"] == "/v1/responses" and sent["headers"]["authorization"] == "<redacted>"


@pytest.mark.parametrize("name", COMPLETES)
def test_sdk_create_rebuilds_every_recording(
    on_responses: ProxyServer, mock: MockServer, name: str
) -> None:
    mock.script([{"replay": f"responses/{name}"}])
    recorded = _body(name)
    got = responses_client(on_responses).responses.create(model=MODEL, input="hi")
    dumped = got.model_dump(mode="json")
    assert dumped["id"] == recorded["id"]
    assert [i["id"] for i in dumped["output"]] == [i["id"] for i in recorded["output"]]
    assert got.output_text == output_text(recorded) and calls(dumped) == calls(recorded)


def test_proxy_carriers_never_reach_openai(on_responses: ProxyServer, mock: MockServer) -> None:
    carrier = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [],
        "encrypted_content": "hydra-reasoning:v1:AAAA",
    }
    responses_client(on_responses).responses.create(
        model=MODEL,
        input=[{"role": "user", "content": "hi"}, carrier, {"role": "user", "content": "again"}],
    )
    sent = mock.requests()[-1]["body"]
    assert "hydra-reasoning" not in json.dumps(sent)
    assert [i.get("role") for i in sent["input"]] == ["user", "user"]


# -- Responses clients on Chat and Anthropic upstreams: translated -------------------------


CHAT_RECORDING = "chat/oaipy-gpt4o-tool-call.sse"
CHAT_TEXT = "chat/oaipy-gpt4o-text-usage.sse"
ANTHROPIC_RECORDING = "anthropic/sdkpy-text-then-tool-use.sse"
ANTHROPIC_THINKING = "anthropic/pydantic-thinking-signature.sse"

WEATHER: Any = {
    "type": "function",
    "name": "get_weather",
    "description": "weather",
    "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
}


def _chat_expectation(name: str) -> tuple[str, list[str]]:
    text, names = [], []
    for line in (FIXTURES / name).read_text().splitlines():
        if not line.startswith("data:") or line.strip() == "data: [DONE]":
            continue
        chunk = json.loads(line[5:])
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text.append(delta.get("content") or "")
            names += [
                c["function"]["name"]
                for c in delta.get("tool_calls") or []
                if c.get("function", {}).get("name")
            ]
    return "".join(text), names


def _anthropic_expectation(name: str) -> tuple[str, str, list[str]]:
    text, thinking, names = [], [], []
    for line in (FIXTURES / name).read_text().splitlines():
        if not line.startswith("data:"):
            continue
        event = json.loads(line[5:])
        if (
            event.get("type") == "content_block_start"
            and event["content_block"]["type"] == "tool_use"
        ):
            names.append(event["content_block"]["name"])
        delta = event.get("delta") or {}
        text.append(delta.get("text") or "")
        thinking.append(delta.get("thinking") or "")
    return "".join(text), "".join(thinking), names


@pytest.mark.parametrize("name", [CHAT_RECORDING, CHAT_TEXT])
def test_sdk_reads_a_chat_recording_as_responses(
    on_chat: ProxyServer, mock: MockServer, name: str
) -> None:
    mock.script([{"replay": name}])
    with responses_client(on_chat).responses.stream(
        model=MODEL, input="weather?", tools=[WEATHER], store=False
    ) as stream:
        got = stream.get_final_response().model_dump(mode="json")
    text, names = _chat_expectation(name)
    assert output_text(got) == text and [n for n, _ in calls(got)] == names
    assert got["status"] in ("completed", "incomplete")
    sent = mock.requests()[-1]
    assert sent["path"] == "/v1/chat/completions" and sent["body"]["stream"] is True


@pytest.mark.parametrize("name", [ANTHROPIC_RECORDING, ANTHROPIC_THINKING])
def test_sdk_reads_an_anthropic_recording_as_responses(
    on_anthropic: ProxyServer, mock: MockServer, name: str
) -> None:
    mock.script([{"replay": name}])
    with responses_client(on_anthropic).responses.stream(
        model=MODEL,
        input="weather?",
        tools=[WEATHER],
        store=False,
        include=["reasoning.encrypted_content"],
        reasoning={"effort": "low", "summary": "auto"},
    ) as stream:
        got = stream.get_final_response().model_dump(mode="json")
    text, thinking, names = _anthropic_expectation(name)
    assert output_text(got) == text and [n for n, _ in calls(got)] == names
    reasoning = [i for i in got["output"] if i["type"] == "reasoning"]
    if thinking:
        assert reasoning and reasoning[0]["encrypted_content"].startswith("hydra-reasoning:v1:")
        summary = "".join(s["text"] for s in reasoning[0]["summary"])
        assert summary == thinking
    assert mock.requests()[-1]["path"] == "/v1/messages"


def test_sdk_create_on_a_chat_upstream(on_chat: ProxyServer, mock: MockServer) -> None:
    mock.script([{"text": "Hello there.", "usage": {"prompt_tokens": 10, "completion_tokens": 3}}])
    got = responses_client(on_chat).responses.create(model=MODEL, input="hi", store=False)
    assert got.output_text == "Hello there." and got.status == "completed"
    assert got.usage is not None and got.usage.output_tokens == 3


def test_web_search_asked_alone_of_an_upstream_without_it_is_refused(
    on_chat: ProxyServer, mock: MockServer
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        responses_client(on_chat).responses.create(
            model=MODEL, input="hi", store=False, tools=[{"type": "web_search"}]
        )
    body: Any = caught.value.body
    assert "web_search" in body["message"] and "server_tools = true" in body["message"]
    assert mock.requests() == []


def test_web_search_offered_among_tools_is_left_out_for_an_upstream_without_it(
    on_chat: ProxyServer, mock: MockServer
) -> None:
    # Codex offers web_search on every turn: the turn is served without it.
    mock.clear()
    reply = responses_client(on_chat).responses.create(
        model=MODEL, input="hi", store=False, tools=[WEATHER, {"type": "web_search"}]
    )
    assert reply.status == "completed"
    (sent,) = mock.requests()
    assert [tool["function"]["name"] for tool in sent["body"]["tools"]] == [WEATHER["name"]]


@pytest.mark.parametrize(
    ("extra", "param"),
    [({"store": True}, "store"), ({"previous_response_id": "resp_1"}, "previous_response_id")],
)
def test_state_is_refused_with_a_400(
    on_chat: ProxyServer, mock: MockServer, extra: dict[str, Any], param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        responses_client(on_chat).responses.create(model=MODEL, input="hi", **extra)
    body: Any = caught.value.body
    assert body["param"] == param and "conversation state" in body["message"]
    assert mock.requests() == []


def test_upstream_error_in_openai_shape(on_chat: ProxyServer, mock: MockServer) -> None:
    mock.script(
        [
            {
                "error": {
                    "status": 429,
                    "type": "rate_limit_exceeded",
                    "message": "Slow down",
                    "retry_after": "30",
                }
            }
        ]
    )
    with pytest.raises(openai.RateLimitError) as caught:
        responses_client(on_chat).responses.create(model=MODEL, input="hi", stream=True)
    assert caught.value.response.headers["retry-after"] == "30"
    assert "Slow down" in caught.value.message


# -- Anthropic and Chat clients on a Responses upstream ---------------------------------


@pytest.mark.parametrize("name", STREAMS)
def test_anthropic_sdk_on_every_responses_stream(
    on_responses: ProxyServer, mock: MockServer, name: str
) -> None:
    mock.script([{"replay": f"responses/{name}"}])
    recorded = final_response(name)
    client = anthropic.Anthropic(base_url=on_responses.url, api_key="k", max_retries=0)
    with client.messages.stream(
        model=MODEL, max_tokens=1000, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        message = stream.get_final_message()
    text = "".join(b.text for b in message.content if b.type == "text")
    assert text == output_text(recorded)
    assert [(b.name, b.input) for b in message.content if b.type == "tool_use"] == calls(recorded)
    sent = mock.requests()[-1]
    assert sent["path"] == "/v1/responses" and sent["body"]["store"] is False


@pytest.mark.parametrize("name", COMPLETES)
def test_chat_sdk_on_every_responses_reply(
    on_responses: ProxyServer, mock: MockServer, name: str
) -> None:
    mock.script([{"replay": f"responses/{name}"}])
    # A Chat client on a `responses` provider: translated (Chat passthrough is for `openai`).
    completion = responses_client(on_responses).chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "hi"}]
    )
    recorded = _body(name)
    message = completion.choices[0].message
    assert (message.content or "") == output_text(recorded)
    got = [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]
    assert got == calls(recorded)


def test_dropped_server_tools_are_logged_once_at_info(mock: MockServer) -> None:
    with ProxyServer(mock.url + "/v1", "--log-level", "info", impl="python") as proxy:
        responses_client(proxy).responses.create(
            model=MODEL,
            input="hi",
            store=False,
            tools=[WEATHER, {"type": "file_search"}, {"type": "code_interpreter"}],
        )
        lines = [line for line in proxy.log_tail().splitlines() if "left out of" in line]
    assert len(lines) == 1, lines
    assert "INFO" in lines[0] and "file_search" in lines[0] and "code_interpreter" in lines[0]
