"""The running proxy, driven by the official `anthropic` SDK, over the mock OpenAI upstream.

Each test runs against a proxy on each transducer implementation (native and pure-Python).
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import orjson
import pytest

from hydra_proxy.mock import MockServer
from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING, _native
from support.servers import ProxyServer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
MODEL = "claude-hydra-test"
TOOLS = [
    {
        "name": "Bash",
        "description": "Run a shell command",
        "input_schema": {
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    }
]


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer(fixtures=FIXTURES) as server:
        yield server


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def proxy(request: pytest.FixtureRequest, mock: MockServer) -> Iterator[ProxyServer]:
    if request.param == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    env = {"HYDRA_PING_INTERVAL": "0.5", "HYDRA_MAX_BODY_BYTES": str(1 << 20)}
    with ProxyServer(mock.url + "/v1", impl=request.param, env=env) as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(request: pytest.FixtureRequest) -> None:
    if "mock" in request.fixturenames:
        request.getfixturevalue("mock").clear()


def client(proxy: ProxyServer, **kwargs: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=proxy.url, api_key="sk-client-key", max_retries=0, **kwargs)


def ask(c: anthropic.Anthropic, **kwargs: Any) -> dict[str, Any]:
    params: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 1000,
        "system": "You are terse.",
        "messages": [{"role": "user", "content": "List the files."}],
        "tools": TOOLS,
    }
    params.update(kwargs)
    return params


TEXT_TURN = {
    "text": "Hello — “quoted” text,\nnew line and emoji 🐍.",
    "usage": {"prompt_tokens": 120, "completion_tokens": 9, "cached_tokens": 100},
    "chunk_size": 4,
}
TOOL_TURN = {
    "text": "Let me look.",
    "tool_calls": [{"id": "call_ls1", "name": "Bash", "arguments": {"command": "ls -la"}}],
    "usage": {"prompt_tokens": 300, "completion_tokens": 20},
    "chunk_size": 3,
}


def test_streamed_text(proxy: ProxyServer, mock: MockServer) -> None:
    mock.script([TEXT_TURN])
    with client(proxy).messages.stream(**ask(client(proxy))) as stream:
        message = stream.get_final_message()
    assert [b.model_dump() for b in message.content] == [
        {"type": "text", "text": TEXT_TURN["text"], "citations": None}
    ]
    assert message.stop_reason == "end_turn" and message.stop_sequence is None
    assert message.model == MODEL
    assert (
        message.usage.input_tokens,
        message.usage.cache_read_input_tokens,
        message.usage.output_tokens,
    ) == (20, 100, 9)
    upstream = mock.requests()[-1]
    assert upstream["path"] == "/v1/chat/completions"
    body = upstream["body"]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"][0] == {"role": "system", "content": "You are terse."}
    assert body["tools"][0]["function"]["name"] == "Bash"
    # The client's key and Anthropic headers are not forwarded; the provider key is (redacted in the log).
    assert upstream["headers"].get("authorization") == "<redacted>"
    assert "anthropic-version" not in upstream["headers"] and "x-api-key" not in upstream["headers"]


def test_streamed_tool_call(proxy: ProxyServer, mock: MockServer) -> None:
    mock.script([TOOL_TURN])
    with client(proxy).messages.stream(**ask(client(proxy))) as stream:
        message = stream.get_final_message()
    content = [b.model_dump(exclude_none=True) for b in message.content]
    assert content == [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "call_ls1", "name": "Bash", "input": {"command": "ls -la"}},
    ]
    assert message.stop_reason == "tool_use"


def test_tool_result_round_trip(proxy: ProxyServer, mock: MockServer) -> None:
    mock.script([TEXT_TURN])
    messages = [
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": [{"type": "text", "text": "Let me look."},
                                          {"type": "tool_use", "id": "call_ls1", "name": "Bash", "input": {"command": "ls"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_ls1", "content": "a.txt\nb.txt"},
                                     {"type": "text", "text": "Which is bigger?"}]},
    ]  # fmt: skip
    message = client(proxy).messages.create(**ask(client(proxy), messages=messages))
    assert message.content[0].type == "text"
    sent = mock.requests()[-1]["body"]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert sent[2]["tool_calls"][0] == {
        "id": "call_ls1",
        "type": "function",
        "function": {"name": "Bash", "arguments": '{"command":"ls"}'},
    }
    assert sent[3] == {"role": "tool", "tool_call_id": "call_ls1", "content": "a.txt\nb.txt"}


def test_non_streamed_text_and_tool_call(proxy: ProxyServer, mock: MockServer) -> None:
    mock.script([TEXT_TURN, TOOL_TURN])
    first = client(proxy).messages.create(**ask(client(proxy)))
    assert first.content[0].text == TEXT_TURN["text"] and first.stop_reason == "end_turn"
    second = client(proxy).messages.create(**ask(client(proxy)))
    assert [b.type for b in second.content] == ["text", "tool_use"]
    assert second.content[1].input == {"command": "ls -la"} and second.stop_reason == "tool_use"
    assert mock.requests()[-1]["body"].get("stream") is None


def test_upstream_rate_limit_passes_retry_after(proxy: ProxyServer, mock: MockServer) -> None:
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
    with pytest.raises(anthropic.RateLimitError) as info:
        client(proxy).messages.create(**ask(client(proxy)))
    assert info.value.response.headers["retry-after"] == "30"
    assert info.value.body["error"]["type"] == "rate_limit_error"  # type: ignore[index]
    assert "Slow down" in info.value.message


def test_upstream_5xx_is_retried_before_the_first_byte(
    proxy: ProxyServer, mock: MockServer
) -> None:
    mock.script([{"error": {"status": 503, "type": "server_error", "message": "busy"}}, TEXT_TURN])
    message = client(proxy).messages.create(**ask(client(proxy)))
    assert message.content[0].text == TEXT_TURN["text"]
    assert len(mock.requests()) == 2


def test_persistent_overload_becomes_529(proxy: ProxyServer, mock: MockServer) -> None:
    mock.script([{"error": {"status": 503, "type": "server_error", "message": "busy"}}] * 3)
    with pytest.raises(anthropic.APIStatusError) as info:
        client(proxy).messages.create(**ask(client(proxy)))
    assert info.value.status_code == 529
    assert info.value.body["error"]["type"] == "overloaded_error"  # type: ignore[index]


def test_cut_upstream_stream_is_an_error_not_a_reply(proxy: ProxyServer, mock: MockServer) -> None:
    mock.script([{**TEXT_TURN, "cut": True}])
    with (
        pytest.raises(anthropic.APIStatusError, match="ended before the response was complete"),
        client(proxy).messages.stream(**ask(client(proxy))) as stream,
    ):
        stream.get_final_message()


def test_in_stream_upstream_error(proxy: ProxyServer, mock: MockServer) -> None:
    mock.script(
        [{**TEXT_TURN, "stream_error": {"type": "server_error", "message": "model crashed"}}]
    )
    with (
        pytest.raises(anthropic.APIStatusError, match="model crashed"),
        client(proxy).messages.stream(**ask(client(proxy))) as stream,
    ):
        stream.get_final_message()


def test_error_before_any_content_is_an_http_error(proxy: ProxyServer, mock: MockServer) -> None:
    mock.script([{"raw": 'data: {"error": {"message": "quota gone", "code": 429}}\n\n'}])
    with (
        pytest.raises(anthropic.RateLimitError, match="quota gone"),
        client(proxy).messages.stream(**ask(client(proxy))) as stream,
    ):
        stream.get_final_message()


def test_silent_upstream_gets_pings(proxy: ProxyServer, mock: MockServer) -> None:
    mock.script([{**TEXT_TURN, "ttfb_ms": 1600}])
    events = []
    with client(proxy).messages.stream(**ask(client(proxy))) as stream:
        for event in stream:
            events.append(event.type)
    raw = _raw_stream(proxy, mock, {**TEXT_TURN, "ttfb_ms": 1600})
    assert raw.index(b"event: ping") < raw.index(b"event: content_block_start")
    assert raw.startswith(b"event: message_start")
    assert events[0] == "message_start" and events[-1] == "message_stop"


def _raw_stream(proxy: ProxyServer, mock: MockServer, turn: dict[str, Any]) -> bytes:
    mock.script([turn])
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    body = orjson.dumps(ask(client(proxy), stream=True))
    conn.request(
        "POST",
        "/v1/messages?beta=true",
        body,
        {"content-type": "application/json", "anthropic-version": "2023-06-01"},
    )
    response = conn.getresponse()
    assert response.status == 200 and response.getheader("content-type") == "text/event-stream"
    return response.read()


def test_client_disconnect_cancels_the_upstream(proxy: ProxyServer, mock: MockServer) -> None:
    mock.script([{"text": "x" * 400, "chunk_size": 1, "delay_ms": 50}])
    sock = socket.create_connection(("127.0.0.1", proxy.port))
    body = orjson.dumps(ask(client(proxy), stream=True))
    sock.sendall(
        b"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(body), body)
    )
    assert b"text_delta" in _read_until(sock, b"text_delta")
    sock.close()
    # The mock notices its client (the proxy) going away long before its 20 s reply ends.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if mock.requests()[-1].get("disconnected"):
            break
        time.sleep(0.1)
    assert mock.requests()[-1].get("disconnected"), "the proxy kept reading from the upstream"


def _read_until(sock: socket.socket, marker: bytes) -> bytes:
    data = b""
    sock.settimeout(10)
    while marker not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        (b"{not json", 400, "not valid JSON"),
        (b"[1]", 400, "JSON object"),
        (b'{"max_tokens": 5, "messages": []}', 400, "model"),
        (json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}).encode(), 400, "max_tokens"),
        (json.dumps({"model": MODEL, "max_tokens": 5, "messages": [{"role": "robot", "content": "hi"}]}).encode(), 400, "messages.0.role"),
        (json.dumps({"model": MODEL, "max_tokens": 5, "tools": [{"type": "web_search_20250305", "name": "web_search"}],
                     "messages": [{"role": "user", "content": "hi"}]}).encode(), 400, "web_search"),
        (b'{"model": "x", "pad": "' + b"a" * (1 << 20) + b'"}', 413, "exceeds"),
    ],
)  # fmt: skip
def test_bad_requests_get_anthropic_errors(
    proxy: ProxyServer, body: bytes, status: int, needle: str
) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request("POST", "/v1/messages", body, {"content-type": "application/json"})
    response = conn.getresponse()
    payload = orjson.loads(response.read())
    assert response.status == status
    assert payload["type"] == "error" and needle in payload["error"]["message"]
    expected = {400: "invalid_request_error", 413: "request_too_large"}[status]
    assert payload["error"]["type"] == expected


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("HEAD", "/", 200),
        ("GET", "/health", 200),
        ("POST", "/api/event_logging/batch", 200),
        ("GET", "/nope", 404),
    ],
)
def test_housekeeping_endpoints(proxy: ProxyServer, method: str, path: str, status: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    body, headers = (
        (b"{}", {"content-type": "application/json"}) if method == "POST" else (None, {})
    )
    conn.request(method, path, body, headers)
    assert conn.getresponse().status == status


def test_count_tokens_with_beta_query(proxy: ProxyServer) -> None:
    result = client(proxy).messages.count_tokens(
        model=MODEL, messages=[{"role": "user", "content": "hello " * 100}]
    )
    assert result.input_tokens > 50
