"""Keys: provider keys never reach a client or the logs (even from an upstream that echoes
them back), proxy keys are compared in constant time over every key, and a client's own
key goes upstream only in key-passthrough mode.
"""

from __future__ import annotations

import hmac
import http.client
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from hydra_proxy.config import load
from hydra_proxy.server.app import App, ModelEntry
from hydra_proxy.server.pipeline.exchange import is_proxy_key
from support import entries
from support.raw_upstream import RawUpstream, Reply, anthropic_stream, chat_json, chat_stream
from support.servers import PYTHON_DIR, ProxyServer

OPENAI_KEY = "sk-proj-RECOGNISABLE-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-RECOGNISABLE-9876543210fedcba"
CLIENT_KEY = "sk-client-OWN-KEY-5555aaaa"


def sent_key(head: bytes) -> str:
    """The key the proxy sent upstream (Authorization bearer or x-api-key)."""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"authorization":
            return value.strip().decode().removeprefix("Bearer ")
        if name == b"x-api-key":
            return value.strip().decode()
    return ""


def reply_for(head: bytes, body: bytes) -> Reply:
    """Upstreams that echo the key they were sent, in each shape an error arrives in."""
    model = orjson.loads(body).get("model", "")
    key = sent_key(head)
    if model.endswith("echo-401"):  # OpenAI's and Anthropic's shapes, the key in full
        if model.startswith("claude"):
            error = {"type": "error", "error": {"type": "authentication_error", "message": key}}
            return Reply(status=401, body=orjson.dumps(error))
        message = f"Incorrect API key provided: {key}"
        error = {"error": {"message": message, "type": "invalid_request_error"}}
        return Reply(status=401, body=orjson.dumps(error))
    if model.endswith("echo-html"):
        page = f"<html><body>500: bad gateway for key {key}</body></html>"
        return Reply(status=500, body=page.encode(), content_type="text/html")
    if model.endswith("echo-429"):
        error = {"error": {"message": f"rate limited: {key}", "code": "rate_limit_exceeded"}}
        return Reply(status=429, body=orjson.dumps(error))
    if model.startswith("claude"):
        return anthropic_stream()
    if orjson.loads(body).get("stream"):
        return chat_stream(3)
    return Reply(body=chat_json("hi"))


@pytest.fixture(scope="module")
def upstream() -> Iterator[RawUpstream]:
    with RawUpstream(reply=reply_for) as server:
        yield server


def proxy_env(upstream: RawUpstream, **extra: str) -> dict[str, str]:
    return {
        "OPENAI_API_KEY": OPENAI_KEY,
        "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
        "HYDRA_PASSTHROUGH": "1",
        "HYDRA_ANTHROPIC_BASE_URL": upstream.url,
        "HYDRA_USAGE_LEDGER": "off",
        "HYDRA_RETRIES": "0",
        **extra,
    }


def call(
    proxy: ProxyServer, path: str, model: str, *, stream: bool = False, key: str | None = None
) -> tuple[int, bytes]:
    request: dict[str, object] = {"model": model, "stream": stream}
    if path == "/v1/responses":
        request["input"] = "hi"
    else:
        request["messages"] = [{"role": "user", "content": "hi"}]
        request["max_tokens"] = 20
    headers = {"content-type": "application/json"}
    if key is not None:
        headers["x-api-key"] = key
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request("POST", path, orjson.dumps(request), headers)
    response = conn.getresponse()
    return response.status, response.read()


def whole_log(proxy: ProxyServer) -> str:
    proxy.log.seek(0)
    return proxy.log.read().decode("utf-8", "replace")


CASES = [
    ("/v1/messages", "gpt-echo-401"),  # translated: the error converted
    ("/v1/chat/completions", "gpt-echo-401"),  # same protocol: the body as it is
    ("/v1/responses", "gpt-echo-401"),
    ("/v1/messages", "claude-echo-401"),  # Anthropic passthrough
    ("/v1/chat/completions", "claude-echo-401"),  # Anthropic upstream, Chat client
    ("/v1/messages", "gpt-echo-html"),
    ("/v1/chat/completions", "gpt-echo-html"),
    ("/v1/messages", "gpt-echo-429"),
    ("/v1/chat/completions", "gpt-echo-429"),
]


def test_provider_keys_never_reach_a_client_or_the_logs(upstream: RawUpstream) -> None:
    """Every error path with an upstream that echoes the full key: the client gets the
    key's masked id at most, and the access log and stderr (at debug) never have it."""
    args = ("--log-level", "debug")
    with ProxyServer(upstream.url + "/v1", *args, env=proxy_env(upstream)) as proxy:
        bodies: list[bytes] = []
        for path, model in CASES:
            for stream in (False, True):
                got, body = call(proxy, path, model, stream=stream)
                assert got >= 400, (path, model, body)  # (the status mapping: errors.py)
                bodies.append(body)
        log = whole_log(proxy)
    echoed = b"".join(r.raw for r in upstream.requests)
    assert OPENAI_KEY.encode() in echoed and ANTHROPIC_KEY.encode() in echoed  # really sent
    for body in bodies:
        assert OPENAI_KEY.encode() not in body and ANTHROPIC_KEY.encode() not in body, body
    joined = b"".join(bodies)
    # Redacted where the proxy answers (hydra_proxy.redaction): an upstream error's message
    # before it is bounded, and every error body it writes, passed-through ones included.
    assert b"[redacted]" in joined
    assert OPENAI_KEY not in log and ANTHROPIC_KEY not in log
    assert "access" in log or "POST /v1/messages" in log  # the access log was written


def test_proxy_keys_authenticate_and_never_go_upstream(upstream: RawUpstream) -> None:
    env = proxy_env(upstream, HYDRA_PROXY_KEYS="pk-alpha-11111111, pk-beta-22222222")
    with ProxyServer(upstream.url + "/v1", env=env) as proxy:
        before = upstream.requests_count()
        assert call(proxy, "/v1/messages", "gpt-4o", key="pk-beta-22222222")[0] == 200
        assert call(proxy, "/v1/chat/completions", "gpt-4o", key="pk-alpha-11111111")[0] == 200
        sent = upstream.requests[before:]
        assert [sent_key(r.head) for r in sent] == [OPENAI_KEY, OPENAI_KEY]
        for path in ("/v1/messages", "/v1/chat/completions"):
            for key in ("pk-beta-2222222", "pk-beta-222222222", "", None):
                status, body = call(proxy, path, "gpt-4o", key=key)
                assert status == 401
                payload = orjson.loads(body)
                if path == "/v1/messages":
                    assert payload["error"]["type"] == "authentication_error"
                else:
                    assert payload["error"]["type"] == "authentication_error"
                    assert set(payload["error"]) == {"message", "type", "param", "code"}
        assert upstream.requests_count() == before + 2  # refused requests never went out


@pytest.fixture(scope="module")
def keyed(upstream: RawUpstream) -> Iterator[ProxyServer]:
    env = proxy_env(upstream, HYDRA_PROXY_KEYS="pk-alpha-11111111")
    with ProxyServer(upstream.url + "/v1", env=env) as proxy:
        yield proxy


@pytest.mark.parametrize("entry", entries.ENTRIES)
def test_every_entry_needs_a_proxy_key(
    upstream: RawUpstream, keyed: ProxyServer, entry: ModelEntry
) -> None:
    path, body = entry.request("gpt-4o")
    proxy = keyed
    before = upstream.requests_count()
    for key in ("pk-alpha-1111111", "", None):
        headers = {"content-type": "application/json"}
        if key is not None:
            headers["x-goog-api-key" if entry.protocol == "gemini" else "x-api-key"] = key
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
        conn.request("POST", path, orjson.dumps(body), headers)
        response = conn.getresponse()
        payload = orjson.loads(response.read())
        assert response.status == 401
        error = entries.error_of(path, payload)
        assert error.get("type", error.get("status")) in ("authentication_error", "UNAUTHENTICATED")
    assert upstream.requests_count() == before  # refused requests never went out
    headers = {"content-type": "application/json", "authorization": "Bearer pk-alpha-11111111"}
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request("POST", path, orjson.dumps(body), headers)
    assert conn.getresponse().status == 200


def test_every_proxy_key_is_compared_with_no_early_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYDRA_PROXY_KEYS", "pk-one-aaaaaaaa,pk-two-bbbbbbbb,pk-three-cccccccc")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-0000")
    monkeypatch.setenv("HYDRA_SIGNING_KEY_FILE", str(tmp_path / "signing-key"))
    monkeypatch.setenv("HYDRA_USAGE_LEDGER", "off")
    app = App(load({}))
    compared: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", counting)
    assert is_proxy_key(app.worker.proxy_keys, b"pk-one-aaaaaaaa")  # the first key matches...
    assert len(compared) == 3  # ...and every key is still compared
    compared.clear()
    assert not is_proxy_key(app.worker.proxy_keys, b"pk-one-aaaaaaab")
    assert len(compared) == 3


def test_a_clients_key_goes_upstream_only_in_key_passthrough_mode(upstream: RawUpstream) -> None:
    # Off (the default): the provider's key goes upstream, whatever the client sends.
    with ProxyServer(upstream.url + "/v1", env=proxy_env(upstream)) as proxy:
        before = upstream.requests_count()
        assert call(proxy, "/v1/messages", "gpt-4o", key=CLIENT_KEY)[0] == 200
        assert call(proxy, "/v1/messages", "claude-x", key=CLIENT_KEY, stream=True)[0] == 200
        heads = [r.head for r in upstream.requests[before:]]
        assert [sent_key(h) for h in heads] == [OPENAI_KEY, ANTHROPIC_KEY]
        assert all(CLIENT_KEY.encode() not in h for h in heads)
    # On: the client's own key, in the header each upstream protocol takes.
    env = proxy_env(upstream, HYDRA_KEY_PASSTHROUGH="1")
    with ProxyServer(upstream.url + "/v1", env=env) as proxy:
        before = upstream.requests_count()
        assert call(proxy, "/v1/messages", "gpt-4o", key=CLIENT_KEY)[0] == 200
        assert call(proxy, "/v1/messages", "claude-x", key=CLIENT_KEY, stream=True)[0] == 200
        assert (
            call(proxy, "/v1/chat/completions", "claude-x", key=CLIENT_KEY, stream=True)[0] == 200
        )
        heads = [r.head for r in upstream.requests[before:]]
        assert b"authorization: Bearer " + CLIENT_KEY.encode() in heads[0]
        assert b"x-api-key: " + CLIENT_KEY.encode() in heads[1]
        assert b"x-api-key: " + CLIENT_KEY.encode() in heads[2]
        assert all(OPENAI_KEY.encode() not in h and ANTHROPIC_KEY.encode() not in h for h in heads)
        status, body = call(proxy, "/v1/messages", "gpt-4o")  # no key: nothing to forward
        assert status == 401 and b"key passthrough is on" in body
        assert upstream.requests_count() == before + 3


def test_key_passthrough_and_proxy_keys_exclude_each_other(tmp_path: Path) -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HYDRA_")},
        "HOME": str(tmp_path),
        "PYTHONPATH": str(PYTHON_DIR),
        "HYDRA_KEY_PASSTHROUGH": "1",
        "HYDRA_PROXY_KEYS": "pk-one-aaaaaaaa",
        "OPENAI_API_KEY": "sk-test-key-0000",
    }
    done = subprocess.run(
        [sys.executable, "-m", "hydra_proxy", "serve", "--port", "1", "--no-mock"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "key_passthrough and HYDRA_PROXY_KEYS exclude each other" in done.stderr
