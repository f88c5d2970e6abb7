"""The attacks on an exposed proxy, against the running server (both implementations where
the transducers matter): a request that froze a worker, a web page driving the loopback
proxy, one member resting the whole key pool, holes in the exposure guard and the reload,
weak signing keys, unbounded names, telemetry and nesting, forged log lines.

Each test names the attack, and failed on the code before these defences; the two that
check real clients are still served (loopback names, a Host behind client keys) passed
there too.
"""

from __future__ import annotations

import base64
import http.client
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
import pytest

from hydra_proxy.mock import MockServer
from hydra_proxy.mock.server import free_port
from hydra_proxy.server.app import ModelEntry
from support import entries
from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING, _native
from support.raw_upstream import RawUpstream, Reply, chat_json
from support.servers import PYTHON_DIR, ProxyServer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
ASK = {"model": "gpt-4o", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}
JSON = {"content-type": "application/json"}


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer(fixtures=FIXTURES) as server:
        yield server


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def proxy(request: pytest.FixtureRequest, mock: MockServer) -> Iterator[ProxyServer]:
    if request.param == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    with ProxyServer(mock.url + "/v1", impl=request.param, env={"HYDRA_USAGE_LEDGER": "off"}) as p:
        yield p


def call(
    proxy: ProxyServer,
    method: str,
    path: str,
    body: bytes | dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 60,
) -> tuple[int, dict[str, str], bytes]:
    """One request; `timeout` only guards against a hang (a frozen worker)."""
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=timeout)
    data = orjson.dumps(body) if isinstance(body, dict) else body
    conn.request(method, path, data, headers or {})
    response = conn.getresponse()
    payload = response.read()
    conn.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, payload


def error_of(path: str, payload: bytes) -> dict[str, Any]:
    """The error object, checked to be in the endpoint's protocol."""
    body = orjson.loads(payload)
    if path.startswith("/dashboard"):
        assert body["type"] == "error"
        error: dict[str, Any] = body["error"]
        return error
    return entries.error_of(path, body)


def kind_of(error: dict[str, Any]) -> str:
    """An error's class: its type, or a Gemini error's status (as the classes map)."""
    return str(error.get("type") or GEMINI_STATUS[error["status"]])


GEMINI_STATUS = {
    "PERMISSION_DENIED": "permission_error",
    "INVALID_ARGUMENT": "invalid_request_error",
}


# --- one request froze a worker ----------------------------------------------------------


def test_a_hostile_pdf_to_count_tokens_is_answered_and_health_answers_meanwhile(
    proxy: ProxyServer,
) -> None:
    pdf = b"%PDF-1.7\n" + b"/Count 1 " * ((1 << 20) // 9)  # 1 MB: froze the worker for minutes
    document = {
        "type": "document",
        "source": {
            "type": "base64",
            "media_type": "application/pdf",
            "data": base64.b64encode(pdf).decode(),
        },
    }
    body = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": [document]}]}
    answers: list[tuple[int, bytes]] = []

    def health() -> None:
        for _ in range(5):
            status, _, payload = call(proxy, "GET", "/health", timeout=30)
            answers.append((status, payload))

    watcher = threading.Thread(target=health)
    watcher.start()
    status, _, payload = call(proxy, "POST", "/v1/messages/count_tokens", body, JSON)
    watcher.join()
    assert status == 200
    assert orjson.loads(payload)["input_tokens"] >= 2000  # at least a page
    assert answers == [(200, b'{"status":"ok"}')] * 5


# --- a web page drives the proxy ---------------------------------------------------------


def test_a_no_cors_post_from_a_rebinding_page_is_refused(proxy: ProxyServer) -> None:
    # What fetch(url, {mode: "no-cors", body: new Blob([json])}) sends after DNS rebinding.
    headers = {"Host": "attacker.example", "Origin": "http://attacker.example"}
    status, _, payload = call(proxy, "POST", "/v1/messages", orjson.dumps(ASK), headers)
    assert status == 403
    error = error_of("/v1/messages", payload)
    assert error["type"] == "permission_error" and "allowed_hosts" in error["message"]


@pytest.mark.parametrize("entry", entries.ENTRIES)
def test_a_cross_site_post_is_refused_by_its_origin(proxy: ProxyServer, entry: ModelEntry) -> None:
    path, body = entry.request("gpt-4o")
    for content_type in ("text/plain", "application/json"):
        headers = {"Origin": "https://evil.example", "content-type": content_type}
        status, _, payload = call(proxy, "POST", path, orjson.dumps(body), headers)
        assert status == 403
        error = error_of(path, payload)
        assert kind_of(error) == "permission_error" and "allowed_origins" in error["message"]


@pytest.mark.parametrize("path", ["/dashboard", "/health", "/v1/models", "/metrics", "/"])
def test_every_endpoint_refuses_a_foreign_host(proxy: ProxyServer, path: str) -> None:
    status, _, payload = call(proxy, "GET", path, headers={"Host": "rebound.example:3456"})
    assert status == 403 and b"allowed_hosts" in payload


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", "127.0.0.1:1", "LOCALHOST"])
def test_loopback_names_and_the_proxys_own_origin_are_served(proxy: ProxyServer, host: str) -> None:
    assert call(proxy, "GET", "/health", headers={"Host": host})[0] == 200
    own = {"Origin": f"http://127.0.0.1:{proxy.port}", **JSON}
    assert call(proxy, "POST", "/v1/messages", orjson.dumps(ASK), own)[0] == 200


def test_listed_hosts_and_origins_are_served_with_cors(mock: MockServer) -> None:
    env = {
        "HYDRA_ALLOWED_HOSTS": "hydra.internal",
        "HYDRA_ALLOWED_ORIGINS": "http://localhost:5173",
        "HYDRA_USAGE_LEDGER": "off",
    }
    with ProxyServer(mock.url + "/v1", env=env) as proxy:
        assert call(proxy, "GET", "/health", headers={"Host": "hydra.internal:8080"})[0] == 200
        origin = {"Origin": "http://localhost:5173", **JSON}
        status, headers, _ = call(proxy, "POST", "/v1/messages", orjson.dumps(ASK), origin)
        assert status == 200
        assert headers["access-control-allow-origin"] == "http://localhost:5173"
        assert "x-request-id" in headers["access-control-expose-headers"]
        preflight = {
            "Origin": "http://localhost:5173",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, x-api-key, anthropic-version",
            "Access-Control-Request-Private-Network": "true",
        }
        status, headers, _ = call(proxy, "OPTIONS", "/v1/messages", headers=preflight)
        assert status == 204
        assert headers["access-control-allow-origin"] == "http://localhost:5173"
        assert "POST" in headers["access-control-allow-methods"]
        assert (
            headers["access-control-allow-headers"] == "content-type, x-api-key, anthropic-version"
        )
        assert headers["access-control-allow-private-network"] == "true"
        # Any other origin gets no CORS: its preflight is refused, naming the setting.
        other = {**preflight, "Origin": "http://localhost:9999"}
        status, headers, payload = call(proxy, "OPTIONS", "/v1/messages", headers=other)
        assert status == 403 and "access-control-allow-origin" not in headers
        assert b"allowed_origins" in payload


def test_with_client_keys_the_host_is_not_checked(mock: MockServer) -> None:
    env = {"HYDRA_PROXY_KEYS": "team-key-0001", "HYDRA_USAGE_LEDGER": "off"}
    with ProxyServer(mock.url + "/v1", env=env) as proxy:
        headers = {"Host": "hydra.example.com", "x-api-key": "team-key-0001", **JSON}
        assert call(proxy, "POST", "/v1/messages", orjson.dumps(ASK), headers)[0] == 200
        assert (
            call(proxy, "POST", "/v1/messages", orjson.dumps(ASK), {"Host": "x", **JSON})[0] == 401
        )


# --- one member rests the key pool ----------------------------------------------------


NO_ACCESS = (
    b'{"error":{"message":"You do not have access to model gpt-5-pro","type":'
    b'"invalid_request_error","param":null,"code":"model_not_found"}}'
)


def pool_reply(head: bytes, body: bytes) -> Reply:
    if orjson.loads(body).get("model") == "gpt-5-pro":
        return Reply(status=403, body=NO_ACCESS)
    return Reply(body=chat_json("hi"))


def test_a_model_the_account_may_not_use_does_not_rest_the_key_pool(tmp_path: Path) -> None:
    with RawUpstream(reply=pool_reply) as upstream:
        config = tmp_path / "hydra.toml"
        config.write_text(
            '[server]\nprovider = "pool"\n\n[providers.pool]\npreset = "openai"\n'
            f'base_url = "{upstream.url}/v1"\napi_key_env = ["POOL_KEY_1", "POOL_KEY_2"]\n'
        )
        env = {
            "POOL_KEY_1": "sk-pool-one-000000001",
            "POOL_KEY_2": "sk-pool-two-000000002",
            "HYDRA_USAGE_LEDGER": "off",
        }
        with ProxyServer(upstream.url + "/v1", "--config", str(config), env=env) as proxy:
            for _ in range(2):  # once with each key
                status, _, payload = call(
                    proxy, "POST", "/v1/messages", orjson.dumps({**ASK, "model": "gpt-5-pro"}), JSON
                )
                assert status == 403 and b"do not have access" in payload
            status, _, payload = call(proxy, "POST", "/v1/messages", orjson.dumps(ASK), JSON)
            assert status == 200, payload
            assert call(proxy, "POST", "/v1/messages", orjson.dumps(ASK), JSON)[0] == 200


# --- the exposure guard and the reload ---------------------------------------------------


def serve(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`hydra-proxy serve` expected to refuse to start; one that starts anyway is stopped
    after 20 s, workers and all, and fails the test."""
    process = subprocess.Popen(
        [sys.executable, "-m", "hydra_proxy", "serve", "--port", str(free_port()), "--no-mock",
         *args],
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(PYTHON_DIR),
             "OPENAI_API_KEY": "sk-test-key-0000", **env},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


@pytest.mark.parametrize("keys", [",", " , ", "team-key-1,,team-key-2", "team-key-1,", ""])
def test_empty_client_key_entries_stop_the_server(tmp_path: Path, keys: str) -> None:
    done = serve(tmp_path, "--host", "0.0.0.0", HYDRA_PROXY_KEYS=keys)
    assert done.returncode == 2
    assert "HYDRA_PROXY_KEYS is set but" in done.stderr and "empty" in done.stderr


def test_a_reload_that_would_expose_the_providers_keys_is_refused(
    tmp_path: Path, mock: MockServer
) -> None:
    config = tmp_path / "hydra.toml"
    config.write_text("[server]\nkey_passthrough = true\n")
    args = ("--host", "0.0.0.0", "--config", str(config), "--log-level", "info")
    with ProxyServer(mock.url + "/v1", *args, env={"HYDRA_USAGE_LEDGER": "off"}) as proxy:
        assert call(proxy, "POST", "/v1/messages", orjson.dumps(ASK), JSON)[0] == 401
        config.write_text("[server]\nkey_passthrough = false\n")
        assert proxy.process is not None
        os.kill(proxy.process.pid, signal.SIGHUP)
        deadline = time.monotonic() + 30
        while "config reload" not in proxy.log_tail() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "config reload refused" in proxy.log_tail()
        assert "refusing to listen on 0.0.0.0" in proxy.log_tail()
        time.sleep(1)  # the workers come back with the settings in force
        status, _, _ = call(proxy, "POST", "/v1/messages", orjson.dumps(ASK), JSON)
        assert status == 401  # still key passthrough: never the operator's key


# --- signing keys --------------------------------------------------------------------------


@pytest.mark.parametrize("content", [b"", b"short key", b"x" * 31])
def test_a_short_signing_key_file_stops_the_server(tmp_path: Path, content: bytes) -> None:
    key = tmp_path / "signing-key"
    key.write_bytes(content)
    done = serve(tmp_path, HYDRA_SIGNING_KEY_FILE=str(key))
    assert done.returncode == 2
    assert f"holds {len(content)} bytes" in done.stderr and "at least 32" in done.stderr
    assert key.read_bytes() == content  # never replaced behind the operator's back


def test_a_new_signing_key_is_32_random_bytes_readable_by_its_owner_only(
    tmp_path: Path, mock: MockServer
) -> None:
    key = tmp_path / "keys" / "signing-key"
    env = {"HYDRA_SIGNING_KEY_FILE": str(key), "HYDRA_USAGE_LEDGER": "off"}
    with ProxyServer(mock.url + "/v1", "--workers", "2", env=env):
        pass
    assert len(key.read_bytes()) == 32
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert [p.name for p in key.parent.iterdir()] == ["signing-key"]  # nothing left aside


# --- bounds -----------------------------------------------------------------------------


@pytest.mark.parametrize("entry", entries.ENTRIES)
@pytest.mark.parametrize(
    ("model", "needle"),
    [("m" * 257, "at most 256"), ("gpt-4o\nFORGED 200", "not printable"), ("a\x1b[2J", "U+001B")],
    ids=["long", "newline", "escape"],
)
def test_model_names_are_bounded(
    proxy: ProxyServer, entry: ModelEntry, model: str, needle: str
) -> None:
    path, body = entry.request(quote(model, safe=""))  # a path's model arrives quoted
    if not entry.model_in_path:
        path, body = entry.request(model)
    status, _, payload = call(proxy, "POST", path, orjson.dumps(body), JSON)
    assert status == 400
    error = error_of(path, payload)
    assert kind_of(error) == "invalid_request_error" and needle in error["message"]
    path, body = entry.request("m" * 256)
    assert call(proxy, "POST", path, orjson.dumps(body), JSON)[0] == 200


def test_a_forged_access_log_line_is_escaped(mock: MockServer) -> None:
    with ProxyServer(mock.url + "/v1", "--log-level", "info") as proxy:
        call(proxy, "GET", "/v1/nothing%0a2026-01-01%20INFO%20hydra_proxy.access:%20FORGED")
        call(proxy, "GET", "/health%1b%5b2J")
        time.sleep(0.5)
        log = proxy.log_tail()
    lines = log.splitlines()
    assert not any(
        "FORGED" in line and not line.startswith(" ") and "/v1/nothing" not in line
        for line in lines
    )
    assert "/v1/nothing\\n2026-01-01 INFO hydra_proxy.access: FORGED" in log
    assert "/health\\x1b[2J" in log and "\x1b" not in log


def test_telemetry_is_bounded_and_behind_the_client_key(mock: MockServer) -> None:
    big = b'{"events":["' + b"x" * (2 << 20) + b'"]}'
    with ProxyServer(mock.url + "/v1", env={"HYDRA_USAGE_LEDGER": "off"}) as proxy:
        status, _, payload = call(proxy, "POST", "/api/event_logging/batch", big, JSON)
        assert status == 413 and b"1 MiB" in payload
        assert call(proxy, "POST", "/api/event_logging/batch", b"{}", JSON)[0] == 200
    env = {"HYDRA_PROXY_KEYS": "team-key-0001", "HYDRA_USAGE_LEDGER": "off"}
    with ProxyServer(mock.url + "/v1", env=env) as proxy:
        assert call(proxy, "POST", "/api/event_logging/batch", b"{}", JSON)[0] == 401
        keyed = {"x-api-key": "team-key-0001", **JSON}
        assert call(proxy, "POST", "/api/event_logging/batch", b"{}", keyed)[0] == 200


def deep_arguments(depth: int) -> dict[str, Any]:
    nested = "[" * depth + "]" * depth
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 20,
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "f", "arguments": '{"x":' + nested + "}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "ok"},
        ],
    }


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def claude_proxy(request: pytest.FixtureRequest, mock: MockServer) -> Iterator[ProxyServer]:
    """Chat clients' claude-* models to an Anthropic upstream (the mock): translated."""
    if request.param == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    env = {
        "HYDRA_PASSTHROUGH": "1",
        "HYDRA_ANTHROPIC_BASE_URL": mock.url,
        "ANTHROPIC_API_KEY": "sk-ant-upstream-key",
        "HYDRA_USAGE_LEDGER": "off",
    }
    with ProxyServer(mock.url + "/v1", impl=request.param, env=env) as p:
        yield p


def test_tool_arguments_nested_past_what_can_be_written_are_a_400(
    claude_proxy: ProxyServer,
) -> None:
    path = "/v1/chat/completions"
    status, _, payload = call(claude_proxy, "POST", path, deep_arguments(300), JSON)
    assert status == 400, payload
    assert "nested deeper than 128" in error_of(path, payload)["message"]
    status, _, payload = call(claude_proxy, "POST", path, deep_arguments(100), JSON)
    assert status == 200, payload


def test_a_json_depth_setting_past_what_can_be_written_stops_the_server(tmp_path: Path) -> None:
    done = serve(tmp_path, HYDRA_MAX_JSON_DEPTH="1000")
    assert done.returncode == 2 and "max_json_depth" in done.stderr and "1 to 200" in done.stderr


def test_a_gemini_tool_schema_whose_refs_nest_too_deep_is_a_400(mock: MockServer) -> None:
    def deep(levels: int, leaf: dict[str, Any]) -> dict[str, Any]:
        for _ in range(levels):
            leaf = {"type": "object", "properties": {"a": leaf}}
        return leaf

    defs: dict[str, Any] = {f"d{i}": deep(40, {"$ref": f"#/$defs/d{i + 1}"}) for i in range(15)}
    defs["d15"] = {"type": "string"}
    schema = {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs}
    body = {**ASK, "model": "gemini-2.5-pro", "tools": [{"name": "f", "input_schema": schema}]}
    env = {"GEMINI_API_KEY": "AIza-test-key-0000000000000", "HYDRA_USAGE_LEDGER": "off"}
    with ProxyServer(mock.url + "/v1beta", "--provider", "gemini-native", env=env) as proxy:
        status, _, payload = call(proxy, "POST", "/v1/messages", orjson.dumps(body), JSON)
    assert status == 400, payload
    assert "deeper than" in error_of("/v1/messages", payload)["message"]
