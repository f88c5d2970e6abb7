"""Graceful shutdown (SIGTERM) of a real granian server with paced streams in flight:
streams that finish within `shutdown_grace` finish; the others end with a well-formed
error event in their client's protocol (never a cut connection); the process exits.
Requests arriving while the worker drains are refused in the client's protocol.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from hydra_proxy.config import load
from hydra_proxy.server.app import App
from hydra_proxy.server.transport.shutdown import STREAM_END_MESSAGE
from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING, _native
from support.raw_upstream import RawUpstream, Reply, anthropic_stream, chat_json, chat_stream
from support.servers import ProxyServer

GRACE = 2.0


def reply_for(head: bytes, body: bytes) -> Reply:
    model = orjson.loads(body).get("model", "")
    if model == "gpt-paced":
        return chat_stream(200, delay=0.1)  # 20 s: past the grace
    if model == "gpt-short":
        return chat_stream(4, delay=0.2)  # within it
    if model == "claude-paced":
        return anthropic_stream(delay=1.0)
    return Reply(body=chat_json("hi"))


@pytest.fixture(scope="module")
def upstream() -> Iterator[RawUpstream]:
    with RawUpstream(reply=reply_for) as server:
        yield server


def start_stream(port: int, path: str, model: str) -> socket.socket:
    request: dict[str, Any] = {"model": model, "stream": True}
    if path == "/v1/responses":
        request["input"] = "hi"
    else:
        request["messages"] = [{"role": "user", "content": "hi"}]
        request["max_tokens"] = 50
    body = orjson.dumps(request)
    sock = socket.create_connection(("127.0.0.1", port), timeout=20)
    sock.sendall(
        b"POST %s HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (path.encode(), len(body), body)
    )
    return sock


def read_until_end(sock: socket.socket, data: bytes) -> bytes:
    """The whole chunked response (`data`: its start): it must end with its last chunk."""
    while not data.endswith(b"\r\n0\r\n\r\n"):
        chunk = sock.recv(65536)
        assert chunk, f"cut before the end of the response: {data[-400:]!r}"
        data += chunk
    return data


def dechunked(data: bytes) -> bytes:
    """The body of a chunked HTTP/1.1 response."""
    rest = data.split(b"\r\n\r\n", 1)[1]
    body = b""
    while True:
        size_line, rest = rest.split(b"\r\n", 1)
        size = int(size_line, 16)
        if size == 0:
            return body
        body, rest = body + rest[:size], rest[size + 2 :]


def last_event(data: bytes) -> bytes:
    text = dechunked(data).replace(b"\r\n", b"\n")
    return [e for e in text.split(b"\n\n") if b"data:" in e][-1]


# (client endpoint, model, what the last event must say): translated streams (relay) and
# same-protocol ones (forward).
STREAMS = [
    ("/v1/messages", "gpt-paced", b"event: error\ndata:", b'"overloaded_error"'),
    ("/v1/chat/completions", "claude-paced", b'data: {"error":', b'"message"'),
    ("/v1/responses", "gpt-paced", b"event: response.failed", b'"status":"failed"'),
    ("/v1/messages", "claude-paced", b"event: error\ndata:", b'"overloaded_error"'),
    ("/v1/chat/completions", "gpt-paced", b'data: {"error":', b'"message"'),
]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_sigterm_lets_short_streams_finish_and_ends_the_rest_well_formed(
    upstream: RawUpstream, impl: str
) -> None:
    if impl == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    env = {
        "HYDRA_SHUTDOWN_GRACE": str(GRACE),
        "HYDRA_PASSTHROUGH": "1",
        "HYDRA_ANTHROPIC_BASE_URL": upstream.url,
        "ANTHROPIC_API_KEY": "sk-ant-upstream-key",
        "HYDRA_USAGE_LEDGER": "off",
    }
    with ProxyServer(upstream.url + "/v1", impl=impl, env=env) as proxy:
        assert proxy.process is not None
        long = [start_stream(proxy.port, path, model) for path, model, _, _ in STREAMS]
        short = start_stream(proxy.port, "/v1/messages", "gpt-short")
        first = {sock: sock.recv(65536) for sock in [*long, short]}
        assert all(b"200 OK" in data for data in first.values())  # every stream flows
        os.killpg(proxy.process.pid, signal.SIGTERM)
        # Within the grace: the short stream ends as it would have.
        assert b"event: message_stop" in read_until_end(short, first[short])
        for sock, (path, model, kind, detail) in zip(long, STREAMS, strict=True):
            event = last_event(read_until_end(sock, first[sock]))
            assert event.startswith(kind), (path, model, event)
            assert detail in event and STREAM_END_MESSAGE.encode() in event, (path, model)
        assert proxy.process.wait(30) == 0
        assert "shutting down: 6 stream(s) in flight" in proxy.log_tail()
    assert upstream.wait_for(lambda: upstream.open_connections() == 0)


def run_asgi(app: App, scope: dict[str, Any], body: bytes) -> tuple[int, dict[bytes, bytes], Any]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start, reply = sent[0], sent[1]
    return start["status"], dict(start["headers"]), orjson.loads(reply["body"])


@pytest.mark.parametrize(
    ("path", "shape"),
    [
        ("/v1/messages", "anthropic"),
        ("/v1/chat/completions", "openai"),
        ("/v1/responses", "openai"),
    ],
)
def test_requests_that_arrive_while_draining_are_refused_in_the_clients_protocol(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str, shape: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("HYDRA_SIGNING_KEY_FILE", str(tmp_path / "signing-key"))
    monkeypatch.setenv("HYDRA_USAGE_LEDGER", "off")
    app = App(load({}))
    app.worker.shutdown.draining = True
    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [(b"content-type", b"application/json")],
        "query_string": b"",
    }
    status, headers, payload = run_asgi(app, scope, b'{"model": "gpt-4o"}')
    assert status == 503
    assert headers[b"connection"] == b"close"  # the client reconnects elsewhere
    if shape == "anthropic":
        assert payload["type"] == "error"
        assert payload["error"]["type"] == "overloaded_error"  # SDKs retry it
        assert payload["error"]["message"] == STREAM_END_MESSAGE
    else:  # OpenAI's own word for an overload (docs/ERRORS.md)
        assert payload["error"]["type"] == "overloaded_error"
        assert payload["error"]["message"] == STREAM_END_MESSAGE


def test_the_drain_starts_on_sigterm_and_keeps_the_servers_own_handler() -> None:
    """The worker's handler runs beside granian's loop handler (kept and called)."""

    async def scenario() -> tuple[bool, list[int]]:
        from hydra_proxy.server.transport.shutdown import Shutdown

        seen: list[int] = []
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, seen.append, signal.SIGTERM)  # granian's
        shutdown = Shutdown(grace=60)
        shutdown.install(loop)
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            deadline = time.monotonic() + 5
            while not (shutdown.draining and seen) and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            return shutdown.draining, seen
        finally:
            loop.remove_signal_handler(signal.SIGTERM)
            signal.signal(signal.SIGINT, signal.default_int_handler)

    draining, seen = asyncio.run(scenario())
    assert draining
    assert seen == [signal.SIGTERM]
