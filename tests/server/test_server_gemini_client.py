"""Gemini API clients through the running proxy: the google-genai SDK's
`generate_content_stream` / `generate_content` on Chat, Anthropic and Responses upstreams
(every recorded stream rebuilt by the SDK's own parser), passed through to a Gemini
upstream, the thinking carried in `thoughtSignature` and restored on the next turn, the
endpoints around them, and every failure in Gemini's error shape.

Each test runs against a proxy on each transducer implementation (native and pure-Python).
"""

from __future__ import annotations

import base64
import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hydra_proxy import transducers
from hydra_proxy.mock import MockServer
from hydra_proxy.mock.replay import reframe_jsonl
from hydra_proxy.sse import SseParser
from hydra_proxy.stream import events as ev
from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING, _native
from support.servers import ProxyServer

genai = pytest.importorskip(
    "google.genai", reason="the optional test dependency google-genai is not installed"
)
errors = pytest.importorskip("google.genai.errors")

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MODEL = "gemini-3.1-pro-preview"
CLIENT_KEY = "client-gemini-key"
WEATHER = {
    "function_declarations": [
        {
            "name": "get_weather",
            "description": "Weather in a city",
            "parameters": {
                "type": "OBJECT",
                "properties": {"city": {"type": "STRING"}},
                "required": ["city"],
            },
        }
    ]
}


def _recorded(folder: str) -> list[str]:
    return sorted(
        f"{folder}/{p.name}"
        for p in (FIXTURES / folder).iterdir()
        if p.suffix in (".sse", ".jsonl") and not p.name.endswith(".request.json")
    )


def _body(name: str) -> bytes:
    path = FIXTURES / name
    data = path.read_bytes()
    return b"".join(reframe_jsonl(data)) if path.suffix == ".jsonl" else data


class Canonical:
    """What an upstream stream says, as its decoder's canonical events (no encoder)."""

    def __init__(self, name: str, kind: str) -> None:
        self.text, self.thinking = "", ""
        self.calls: list[tuple[str, Any]] = []
        self.usage = ev.Usage()
        self.complete = False
        self.stop: str | None = None
        self.error: ev.Error | None = None
        args: dict[int, list[str]] = {}
        names: dict[int, str] = {}
        kinds: dict[int, Any] = {}

        def emit(event: Any) -> None:
            if isinstance(event, ev.BlockStart):
                kinds[event.block] = event.kind
                if isinstance(event.kind, ev.ToolUse):
                    names[event.block], args[event.block] = event.kind.name, []
            elif isinstance(event, ev.TextDelta):
                self.text += event.text
            elif isinstance(event, ev.ThinkingDelta):
                self.thinking += event.thinking
            elif isinstance(event, ev.ToolArgumentsDelta):
                if event.block in args:  # (a server tool's input is the provider's)
                    args[event.block].append(event.partial_json)
            elif isinstance(event, ev.BlockStop) and event.block in names:
                raw = "".join(args.pop(event.block))
                self.calls.append((names.pop(event.block), json.loads(raw) if raw.strip() else {}))
            elif isinstance(event, ev.Usage):
                self.usage.update(event)
            elif isinstance(event, ev.StopReason):
                self.stop = event.reason
            elif isinstance(event, ev.MessageStop):
                self.complete = True
            elif isinstance(event, ev.Error):
                self.error = event

        decoder = transducers.DECODERS[kind]("msg_x", b"k")
        parser = SseParser(1 << 24)
        decoder.begin(emit)
        for event, data in [*parser.feed(_body(name)), *parser.finish()]:
            decoder.event(event, data, emit)
        if parser.error is not None:
            self.error = ev.Error("api_error", parser.error)
        elif not self.complete and self.error is None:
            decoder.finish(emit)

    @property
    def ok(self) -> bool:
        return self.complete and self.error is None

    @property
    def prompt(self) -> int:
        u = self.usage
        return (
            (u.input_tokens or 0)
            + (u.cache_read_input_tokens or 0)
            + (u.cache_creation_input_tokens or 0)
        )


def sdk_view(parts: list[Any]) -> tuple[str, str, list[tuple[str, Any]]]:
    text = "".join(p.text or "" for p in parts if p.text is not None and not p.thought)
    thinking = "".join(p.text or "" for p in parts if p.text is not None and p.thought)
    calls = [(p.function_call.name, p.function_call.args) for p in parts if p.function_call]
    return text, thinking, calls


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
    env = {"ANTHROPIC_API_KEY": "sk-ant-upstream-SECRET", "GEMINI_API_KEY": "gm-upstream-SECRET"}
    with ProxyServer(base_url, *args, impl=request.param, env=env) as server:
        yield server


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def on_chat(request: pytest.FixtureRequest, mock: MockServer) -> Iterator[ProxyServer]:
    yield from _proxy(request, mock.url + "/v1")


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def on_anthropic(request: pytest.FixtureRequest, mock: MockServer) -> Iterator[ProxyServer]:
    yield from _proxy(request, mock.url, "--provider", "anthropic")


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def on_responses(request: pytest.FixtureRequest, mock: MockServer) -> Iterator[ProxyServer]:
    yield from _proxy(request, mock.url + "/v1", "--provider", "openai-responses")


@pytest.fixture(scope="module", params=IMPLEMENTATIONS[:1])
def on_gemini(request: pytest.FixtureRequest, mock: MockServer) -> Iterator[ProxyServer]:
    yield from _proxy(request, mock.url + "/v1beta", "--provider", "gemini-native")


def client(proxy: ProxyServer) -> Any:
    options = genai.types.HttpOptions(base_url=proxy.url, api_version="v1beta")
    return genai.Client(api_key=CLIENT_KEY, http_options=options)


def stream_parts(proxy: ProxyServer, **config: Any) -> tuple[list[Any], list[Any]]:
    """(every part, every chunk) of a streamed reply."""
    sdk = client(proxy)  # kept while the stream is read: closed when collected
    chunks = list(
        sdk.models.generate_content_stream(
            model=MODEL,
            contents="weather in Paris?",
            config=genai.types.GenerateContentConfig(tools=[WEATHER], **config),
        )
    )
    parts = [p for c in chunks if c.candidates for p in (c.candidates[0].content.parts or [])]
    return parts, chunks


def _rebuild(proxy: ProxyServer, mock: MockServer, name: str, kind: str) -> None:
    mock.script([{"replay": name}])
    want = Canonical(name, kind)
    if not want.ok:
        with pytest.raises(errors.APIError):
            stream_parts(proxy)
        return
    parts, chunks = stream_parts(proxy)
    assert sdk_view(parts) == (want.text, want.thinking, want.calls)
    last = chunks[-1]
    finish = {"max_tokens": "MAX_TOKENS", "refusal": "SAFETY"}.get(want.stop or "", "STOP")
    assert last.candidates[0].finish_reason == finish
    assert last.model_version == MODEL and last.response_id
    assert (last.usage_metadata.prompt_token_count or 0) == want.prompt


@pytest.mark.parametrize("name", _recorded("chat"))
def test_sdk_rebuilds_every_chat_recording(
    on_chat: ProxyServer, mock: MockServer, name: str
) -> None:
    _rebuild(on_chat, mock, name, "chat")
    sent = mock.requests()[-1]
    assert sent["path"] == "/v1/chat/completions" and sent["body"]["stream"] is True


@pytest.mark.parametrize("name", _recorded("anthropic"))
def test_sdk_rebuilds_every_anthropic_recording(
    on_anthropic: ProxyServer, mock: MockServer, name: str
) -> None:
    _rebuild(on_anthropic, mock, name, "anthropic")
    assert mock.requests()[-1]["path"] == "/v1/messages"


@pytest.mark.parametrize("name", _recorded("responses"))
def test_sdk_rebuilds_every_responses_recording(
    on_responses: ProxyServer, mock: MockServer, name: str
) -> None:
    _rebuild(on_responses, mock, name, "responses")
    assert mock.requests()[-1]["path"] == "/v1/responses"


def test_request_reaches_the_upstream_translated(
    on_anthropic: ProxyServer, mock: MockServer
) -> None:
    mock.script([{"text": "Sunny."}])
    sdk = client(on_anthropic)
    reply = sdk.models.generate_content(
        model=MODEL,
        contents="weather in Paris?",
        config=genai.types.GenerateContentConfig(
            system_instruction="Be brief.",
            tools=[WEATHER],
            temperature=0.5,
            max_output_tokens=300,
            stop_sequences=["END"],
        ),
    )
    assert reply.text == "Sunny."
    assert reply.candidates[0].finish_reason == genai.types.FinishReason.STOP
    sent = mock.requests()[-1]["body"]
    assert sent["system"] == "Be brief." and sent["max_tokens"] == 300
    assert sent["temperature"] == 0.5 and sent["stop_sequences"] == ["END"]
    assert sent["tools"][0]["name"] == "get_weather"
    assert sent["tools"][0]["input_schema"]["properties"]["city"] == {"type": "string"}
    assert sent["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "weather in Paris?"}]}
    ]


ANTHROPIC_THINKING = "anthropic/pydantic-thinking-signature.sse"


REASONING = "I should look it up."
SIGNED = "EqQBCkYIBxgCKkCclaudesig"
THINKING = genai.types.ThinkingConfig(include_thoughts=True, thinking_budget=2048)


def two_turns(proxy: ProxyServer, mock: MockServer, **first: Any) -> dict[str, Any]:
    """A tool turn with reasoning, streamed; then the next turn, the SDK's parts replayed as
    they came. The second upstream request."""
    mock.script(
        [
            {"reasoning": REASONING, "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}], **first},
            {"text": "Sunny in Paris."},
        ]
    )  # fmt: skip
    parts, _ = stream_parts(proxy, thinking_config=THINKING)
    call = next(p for p in parts if p.function_call)
    assert call.thought_signature and call.function_call.name == "get_weather"
    assert "".join(p.text for p in parts if p.thought) == REASONING
    answer = genai.types.FunctionResponse(
        id=call.function_call.id, name="get_weather", response={"output": "sunny"}
    )
    history = [
        genai.types.Content(role="user", parts=[genai.types.Part(text="weather in Paris?")]),
        genai.types.Content(role="model", parts=parts),
        genai.types.Content(role="user", parts=[genai.types.Part(function_response=answer)]),
    ]
    sdk = client(proxy)
    reply = sdk.models.generate_content(
        model=MODEL,
        contents=history,
        config=genai.types.GenerateContentConfig(tools=[WEATHER], thinking_config=THINKING),
    )
    assert reply.text == "Sunny in Paris."
    body: dict[str, Any] = mock.requests()[-1]["body"]
    return body


def test_claude_signed_thinking_comes_back(on_anthropic: ProxyServer, mock: MockServer) -> None:
    """The signed thinking of a tool turn travels in the functionCall's thoughtSignature
    and is restored, byte for byte, first in the assistant turn of the next request."""
    sent = two_turns(on_anthropic, mock, signature=SIGNED)
    assistant = sent["messages"][1]
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": REASONING,
        "signature": SIGNED,
    }
    assert assistant["content"][1]["type"] == "tool_use"
    result = sent["messages"][2]["content"][0]
    assert result == {
        "type": "tool_result",
        "tool_use_id": assistant["content"][1]["id"],
        "content": "sunny",
    }


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def on_deepseek(request: pytest.FixtureRequest, mock: MockServer) -> Iterator[ProxyServer]:
    if request.param == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    args = ("--provider", "deepseek")
    env = {"DEEPSEEK_API_KEY": "sk-deepseek-SECRET"}
    with ProxyServer(mock.url + "/v1", *args, impl=request.param, env=env) as server:
        yield server


def test_deepseek_reasoning_comes_back(on_deepseek: ProxyServer, mock: MockServer) -> None:
    """DeepSeek's reasoning of a tool turn goes back to it as reasoning_content."""
    sent = two_turns(on_deepseek, mock)
    assistant = next(m for m in sent["messages"] if m["role"] == "assistant")
    assert assistant["reasoning_content"] == REASONING and assistant["tool_calls"]


def test_responses_encrypted_reasoning_comes_back(
    on_responses: ProxyServer, mock: MockServer
) -> None:
    """A Responses upstream's encrypted reasoning item is sent back to it as it came."""
    sent = two_turns(on_responses, mock, signature="gAAAAABencrypted-by-openai")
    reasoning = [i for i in sent["input"] if i.get("type") == "reasoning"]
    assert [r["encrypted_content"] for r in reasoning] == ["gAAAAABencrypted-by-openai"]
    kinds = [i.get("type") for i in sent["input"]]
    assert (
        kinds.index("reasoning")
        < kinds.index("function_call")
        < kinds.index("function_call_output")
    )


def test_a_forged_signature_restores_nothing(on_anthropic: ProxyServer, mock: MockServer) -> None:
    mock.script([{"text": "ok"}])
    forged = base64.b64encode(
        b"hydra-reasoning:v1:x\n\n[[hydra-continuation:v1:W10.AAAAAAAAAAAAAAAAAAAAAAAA]]"
    ).decode()
    history = [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"text": "hello", "thoughtSignature": forged}]},
        {"role": "user", "parts": [{"text": "again"}]},
    ]
    status, body = post(
        on_anthropic, f"/v1beta/models/{MODEL}:generateContent", {"contents": history}
    )
    assert status == 200, body
    sent = mock.requests()[-1]["body"]
    assert [b["type"] for b in sent["messages"][1]["content"]] == ["text"]


def test_passthrough_to_a_gemini_upstream(on_gemini: ProxyServer, mock: MockServer) -> None:
    mock.script([{"text": "Bonjour."}])
    parts, _ = stream_parts(on_gemini)
    assert "".join(p.text or "" for p in parts) == "Bonjour."
    sent = mock.requests()[-1]
    assert sent["path"] == f"/v1beta/models/{MODEL}:streamGenerateContent"
    assert sent["headers"]["x-goog-api-key"] == "<redacted>"
    assert "model" not in sent["body"] and sent["body"]["contents"][0]["parts"][0]["text"]


def test_server_tools_pass_through_to_gemini(on_gemini: ProxyServer, mock: MockServer) -> None:
    """Google's server tools, refused on every other upstream, reach a Gemini upstream."""
    mock.script([{"text": "Searched."}])
    body = {**HELLO, "tools": [{"googleSearch": {}}]}
    status, _, _ = raw_post(on_gemini, f"/v1beta/models/{MODEL}:generateContent", body)
    assert status == 200
    assert mock.requests()[-1]["body"]["tools"] == [{"googleSearch": {}}]


GEMINI_RECORDINGS = sorted(p.name for p in (FIXTURES / "gemini").glob("*.sse"))


@pytest.mark.parametrize("name", GEMINI_RECORDINGS)
def test_passthrough_is_the_upstream_bytes(
    on_gemini: ProxyServer, mock: MockServer, name: str
) -> None:
    """Gemini passthrough's golden: the client gets the recorded stream byte for byte."""
    mock.script([{"replay": f"gemini/{name}"}])
    conn = http.client.HTTPConnection("127.0.0.1", on_gemini.port, timeout=30)
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    conn.request(
        "POST",
        f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse",
        json.dumps(body),
        {"content-type": "application/json", "x-goog-api-key": CLIENT_KEY},
    )
    response = conn.getresponse()
    assert response.status == 200
    assert response.read() == (FIXTURES / "gemini" / name).read_bytes()
    conn.close()


def raw_post(proxy: ProxyServer, path: str, body: Any) -> tuple[int, str, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, response.getheader("content-type") or "", data


HELLO = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


def test_stream_without_alt_sse_is_one_json_array(on_chat: ProxyServer, mock: MockServer) -> None:
    path = f"/v1beta/models/{MODEL}:streamGenerateContent"
    mock.script([{"text": "Hello there."}, {"text": "Hello there."}])
    status, kind, body = raw_post(on_chat, path, HELLO)
    assert status == 200 and kind.startswith("application/json")
    chunks = json.loads(body)
    status, _, events = raw_post(on_chat, path + "?alt=sse", HELLO)
    sse = [json.loads(e[6:]) for e in events.split(b"\r\n\r\n") if e]
    for chunk in (*chunks, *sse):  # each reply has its own id
        assert chunk.pop("responseId")
    assert chunks == sse
    assert (
        "".join(p["text"] for c in chunks for p in c["candidates"][0]["content"]["parts"])
        == "Hello there."
    )
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"


def test_json_array_stream_ends_with_the_error(on_chat: ProxyServer, mock: MockServer) -> None:
    mock.script([{"text": "partial", "stream_error": {"type": "server_error", "message": "boom"}}])
    status, _, body = raw_post(on_chat, f"/v1beta/models/{MODEL}:streamGenerateContent", HELLO)
    chunks = json.loads(body)
    assert status == 200 and set(chunks[-1]) == {"error"}
    assert chunks[-1]["error"]["status"] == "INTERNAL" and "finishReason" not in json.dumps(chunks)


def test_passthrough_takes_the_proxy_carriers_out(on_gemini: ProxyServer, mock: MockServer) -> None:
    from hydra_proxy import continuation
    from hydra_proxy.gemini.carrier import thought_signature

    carrier = thought_signature([continuation.ThinkingBlock("t", "EqQBsig")], b"any key")
    mock.script([{"text": "ok"}])
    history = {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [
                {"text": "calling", "thoughtSignature": carrier},
                {"functionCall": {"name": "f", "args": {}}, "thoughtSignature": carrier},
                {"functionCall": {"name": "g", "args": {}}, "thoughtSignature": "EpwICpkIAXLI2nx+/w=="},
            ]},
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}, {"functionResponse": {"name": "g", "response": {}}}]},
        ]
    }  # fmt: skip
    status, _, _ = raw_post(on_gemini, f"/v1beta/models/{MODEL}:generateContent", history)
    assert status == 200
    parts = mock.requests()[-1]["body"]["contents"][1]["parts"]
    assert parts[0] == {"text": "calling"}
    assert parts[1]["thoughtSignature"] == "skip_thought_signature_validator"
    assert parts[2]["thoughtSignature"] == "EpwICpkIAXLI2nx+/w=="


# -- endpoints and errors ------------------------------------------------------------------


def post(
    proxy: ProxyServer, path: str, body: Any, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request(
        "POST", path, json.dumps(body), {"content-type": "application/json", **(headers or {})}
    )
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, json.loads(data) if data else {}


def get(proxy: ProxyServer, path: str) -> tuple[int, dict[str, Any]]:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request("GET", path)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, json.loads(data)


def test_models_listing_and_one_model(on_chat: ProxyServer) -> None:
    status, listing = get(on_chat, "/v1beta/models")
    assert status == 200 and isinstance(listing["models"], list)
    for model in listing["models"]:
        assert model["name"].startswith("models/")
        status, one = get(on_chat, f"/v1beta/{model['name']}")
        assert status == 200 and one == model
    status, missing = get(on_chat, "/v1beta/models/no-such-model-x")
    assert status == 404 and missing["error"]["status"] == "NOT_FOUND"


def test_count_tokens(on_chat: ProxyServer) -> None:
    status, body = post(
        on_chat,
        f"/v1beta/models/{MODEL}:countTokens",
        {"contents": [{"role": "user", "parts": [{"text": "hello there " * 50}]}]},
    )
    assert status == 200 and body["totalTokens"] > 50


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"contents": []}, "contents"),
        ({"contents": [{"role": "robot", "parts": [{"text": "x"}]}]}, "contents[0].role"),
        (
            {"contents": [{"parts": [{"text": "x"}]}], "tools": [{"googleSearch": {}}]},
            "tools[0].googleSearch",
        ),
        (
            {"contents": [{"parts": [{"text": "x"}]}], "tools": [{"codeExecution": {}}]},
            "tools[0].codeExecution",
        ),
        (
            {"contents": [{"parts": [{"text": "x"}]}], "generationConfig": {"candidateCount": 2}},
            "generationConfig.candidateCount",
        ),
        (
            {
                "contents": [
                    {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}
                ]
            },
            "contents[0].parts[0].functionResponse.name",
        ),
    ],
)
def test_bad_requests_are_gemini_400s(
    on_chat: ProxyServer, body: dict[str, Any], field: str
) -> None:
    status, reply = post(on_chat, f"/v1beta/models/{MODEL}:generateContent", body)
    assert status == 400
    assert set(reply["error"]) == {"code", "message", "status"}
    assert reply["error"]["code"] == 400 and reply["error"]["status"] == "INVALID_ARGUMENT"
    assert reply["error"]["message"].startswith(field)


def test_sdk_raises_a_server_tool_refusal(on_chat: ProxyServer) -> None:
    sdk = client(on_chat)
    with pytest.raises(errors.ClientError) as caught:
        sdk.models.generate_content(
            model=MODEL,
            contents="hi",
            config=genai.types.GenerateContentConfig(
                tools=[genai.types.Tool(google_search=genai.types.GoogleSearch())]
            ),
        )
    assert caught.value.code == 400 and "googleSearch" in caught.value.message


def test_upstream_error_mid_stream_is_raised(on_chat: ProxyServer, mock: MockServer) -> None:
    mock.script([{"replay": "chat/pydantic-openrouter-midstream-error.sse"}])
    with pytest.raises(errors.APIError):
        stream_parts(on_chat)


def test_key_from_query_or_header_with_proxy_keys(mock: MockServer) -> None:
    with ProxyServer(mock.url + "/v1", env={"HYDRA_PROXY_KEYS": "team-key-1"}) as proxy:
        mock.script([{"text": "a"}, {"text": "b"}])
        body = {"contents": [{"parts": [{"text": "hi"}]}]}
        path = f"/v1beta/models/{MODEL}:generateContent"
        status, reply = post(proxy, path, body)
        assert status == 401 and reply["error"]["status"] == "UNAUTHENTICATED"
        assert post(proxy, path + "?key=team-key-1", body)[0] == 200
        assert post(proxy, path, body, {"x-goog-api-key": "team-key-1"})[0] == 200
        assert "team-key-1" not in proxy.log_tail()
