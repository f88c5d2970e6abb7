"""Routing, model names, passthrough to Anthropic, proxy keys and key hygiene, end to end."""

from __future__ import annotations

import http.client
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anthropic
import orjson
import pytest

from hydra_proxy.mock import MockServer
from hydra_proxy.signature import sign_thinking
from support.servers import PYTHON_DIR, ProxyServer

UPSTREAM_KEY = "sk-upstream-SECRET-key"
ANTHROPIC_KEY = "sk-ant-upstream-SECRET"


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


def request(
    proxy: ProxyServer,
    method: str,
    path: str,
    body: object = None,
    headers: dict[str, str] | None = None,
):  # type: ignore[no-untyped-def]
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request(
        method,
        path,
        None if body is None else orjson.dumps(body),
        {"content-type": "application/json", **(headers or {})},
    )
    response = conn.getresponse()
    return response.status, response.read()


ASK = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 100,
    "messages": [{"role": "user", "content": "hi"}],
}


def test_spoof_and_target_model(mock: MockServer) -> None:
    env = {"HYDRA_SPOOF_MODEL": "claude-spoofed-1", "HYDRA_TARGET_MODEL": "gpt-target"}
    with ProxyServer(mock.url + "/v1", env=env) as proxy:
        client = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0)
        message = client.messages.create(
            model="claude-haiku-4-5", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
        )
        assert message.model == "claude-spoofed-1"
        with client.messages.stream(
            model="claude-haiku-4-5", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
        ) as s:
            assert s.get_final_message().model == "claude-spoofed-1"
        assert {r["body"]["model"] for r in mock.requests()} == {"gpt-target"}
        status, body = request(
            proxy, "GET", "/v1/models", headers={"anthropic-version": "2023-06-01"}
        )
        models = orjson.loads(body)
        # The listing names what a client asks for: the spoof name (the upstream model
        # behind it is the proxy's business).
        assert status == 200 and [m["id"] for m in models["data"]] == ["claude-spoofed-1"]
        assert models["data"][0]["type"] == "model" and models["has_more"] is False
        status, body = request(proxy, "GET", "/v1/models")
        assert orjson.loads(body)["object"] == "list"


def test_requested_name_is_forwarded_and_echoed_by_default(mock: MockServer) -> None:
    with ProxyServer(mock.url + "/v1") as proxy:
        client = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0)
        message = client.messages.create(
            model="deepseek-chat", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
        )
        assert (
            message.model == "deepseek-chat"
            and mock.requests()[-1]["body"]["model"] == "deepseek-chat"
        )


def test_passthrough_to_anthropic_strips_proxy_signatures(mock: MockServer) -> None:
    env = {
        "HYDRA_PASSTHROUGH": "true",
        "HYDRA_ANTHROPIC_BASE_URL": mock.url,
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
    }
    with ProxyServer(mock.url + "/v1", env=env) as proxy:
        client = anthropic.Anthropic(base_url=proxy.url, api_key="client-key", max_retries=0)
        ours = sign_thinking("my reasoning", b"any-key")
        history = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "my reasoning", "signature": ours},
                {"type": "thinking", "thinking": "claude's own", "signature": "RealAnthropicSig=="},
                {"type": "text", "text": "hello"}]},
            {"role": "user", "content": "again"},
        ]  # fmt: skip
        with client.messages.stream(model="claude-opus-4-1", max_tokens=50, messages=history) as s:
            message = s.get_final_message()
        assert message.content[0].type == "text"
        upstream = mock.requests()[-1]
        assert upstream["path"] == "/v1/messages"
        assert (
            upstream["headers"]["x-api-key"] == "<redacted>"
        )  # the provider key, not the client's
        sent = upstream["body"]["messages"][1]["content"]
        assert [b.get("signature") for b in sent if b["type"] == "thinking"] == [
            "RealAnthropicSig=="
        ]
        # A non-claude model still goes to the OpenAI upstream, translated.
        client.messages.create(
            model="gpt-4.1", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
        )
        assert mock.requests()[-1]["path"] == "/v1/chat/completions"


def test_passthrough_relays_anthropic_errors_as_is(mock: MockServer) -> None:
    env = {
        "HYDRA_PASSTHROUGH": "true",
        "HYDRA_ANTHROPIC_BASE_URL": mock.url,
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
    }
    with ProxyServer(mock.url + "/v1", env=env) as proxy:
        mock.script(
            [
                {
                    "error": {
                        "status": 529,
                        "type": "overloaded_error",
                        "message": "Overloaded",
                        "retry_after": "30",
                    }
                }
            ]
        )
        status, body = request(proxy, "POST", "/v1/messages", ASK)
        assert status == 529 and orjson.loads(body)["error"]["type"] == "overloaded_error"


def test_proxy_keys(mock: MockServer) -> None:
    with ProxyServer(mock.url + "/v1", env={"HYDRA_PROXY_KEYS": "team-key-1, team-key-2"}) as proxy:
        status, body = request(proxy, "POST", "/v1/messages", ASK)
        assert status == 401 and orjson.loads(body)["error"]["type"] == "authentication_error"
        assert request(proxy, "POST", "/v1/messages", ASK, {"x-api-key": "wrong"})[0] == 401
        assert request(proxy, "POST", "/v1/messages", ASK, {"x-api-key": "team-key-2"})[0] == 200
        assert (
            request(proxy, "POST", "/v1/messages", ASK, {"authorization": "Bearer team-key-1"})[0]
            == 200
        )
        assert request(proxy, "GET", "/health")[0] == 200  # health needs no key


def test_refuses_public_bind_without_keys(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hydra_proxy", "serve", "--host", "0.0.0.0", "--port", "1"],
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(PYTHON_DIR)},
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2 and "refusing to listen on 0.0.0.0" in result.stderr


def test_upstream_key_never_leaks(mock: MockServer) -> None:
    with ProxyServer(mock.url + "/v1", "--log-level", "debug") as proxy:
        mock.script(
            [
                {
                    "error": {
                        "status": 401,
                        "type": "invalid_api_key",
                        "message": "Incorrect API key provided",
                    }
                }
            ]
        )
        status, body = request(proxy, "POST", "/v1/messages", ASK)
        assert status == 401 and orjson.loads(body)["error"]["type"] == "authentication_error"
        status, body = request(proxy, "POST", "/v1/messages", {**ASK, "stream": True})
        assert status == 200
        log = proxy.log_tail()
    assert UPSTREAM_KEY not in log and UPSTREAM_KEY.encode() not in body


def test_graceful_shutdown_lets_streams_finish(mock: MockServer) -> None:
    import os
    import signal
    import threading

    mock.script([{"text": "x" * 20, "chunk_size": 1, "delay_ms": 100}])
    result: dict[str, bytes] = {}
    with ProxyServer(mock.url + "/v1") as proxy:

        def stream() -> None:
            result["body"] = request(proxy, "POST", "/v1/messages", {**ASK, "stream": True})[1]

        client = threading.Thread(target=stream)
        client.start()
        time.sleep(0.6)  # mid-stream
        assert proxy.process is not None
        os.killpg(proxy.process.pid, signal.SIGTERM)
        client.join(30)
        assert proxy.process.wait(30) == 0
    body = result["body"]
    assert body.count(b"text_delta") == 20 and body.endswith(
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )


def test_request_id_header_and_access_log(mock: MockServer) -> None:
    with ProxyServer(mock.url + "/v1", "--log-level", "info") as proxy:
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
        conn.request(
            "POST",
            "/v1/messages",
            orjson.dumps({**ASK, "stream": True}),
            {"content-type": "application/json"},
        )
        response = conn.getresponse()
        response.read()
        request_id = response.getheader("x-request-id")
        assert request_id and request_id.startswith("req_")
        status, body = request(proxy, "POST", "/v1/messages", {"model": "m"})
        assert status == 400
        time.sleep(0.3)
        log = proxy.log_tail()
    line = next(line for line in log.splitlines() if request_id in line)
    assert (
        "POST /v1/messages 200" in line
        and "model=claude-sonnet-4-5" in line
        and "stop=end_turn" in line
    )
    assert orjson.loads(body)["request_id"].startswith("req_")


def test_passthrough_drops_a_stalled_upstream(mock: MockServer) -> None:
    env = {"HYDRA_IDLE_TIMEOUT": "1", "HYDRA_PING_INTERVAL": "0.5"}
    with ProxyServer(mock.url + "/v1", env=env) as proxy:
        mock.script([{"text": "a b c d", "chunk_size": 2, "delay_ms": 3000}])
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
        body = {"model": "gpt-x", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        conn.request(
            "POST", "/v1/chat/completions", orjson.dumps(body), {"content-type": "application/json"}
        )
        response = conn.getresponse()
        assert response.status == 200
        # Cut at the idle timeout: the transfer ends broken, not as a complete reply.
        with pytest.raises(http.client.IncompleteRead):
            response.read()
