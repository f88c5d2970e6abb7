"""Limits on what clients send, and clients that misbehave, against the running proxy
(granian) over a scripted upstream that counts its connections:

- bodies too large (by Content-Length, chunked, with Expect: 100-continue), malformed,
  not an object, invalid UTF-8, nested too deep, of the wrong content type: each a clear
  error in the client's protocol, on every model endpoint;
- head size and field count (granian/hyper: 431);
- a slow-loris upload (408, the connection closed);
- a client that stops reading: the upstream is paused (its writes stop, the proxy's memory
  stays flat), and after send_stall_timeout the upstream request is dropped and the stream
  ends with an error event;
- a client that leaves cancels the upstream request at once, its connection closed (not
  pooled), on the translated stream, the non-streamed and the passthrough paths.
"""

from __future__ import annotations

import http.client
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from support import entries
from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING, _native
from support.raw_upstream import (
    RawUpstream,
    Reply,
    anthropic_stream,
    chat_json,
    chat_stream,
    endless_chat_stream,
)
from support.servers import ProxyServer

MAX_BODY = 65536
MAX_DEPTH = 32
# Every model-request entry of the app, and both count_tokens endpoints.
ENDPOINTS = [
    *entries.paths(),
    "/v1/messages/count_tokens",
    entries.COUNT_PATHS[1].replace("{model}", "gpt-4o"),
]


def reply_for(head: bytes, body: bytes) -> Reply:
    request = orjson.loads(body)
    model = request.get("model", "")
    if model == "gpt-endless":
        return endless_chat_stream()
    if model == "gpt-paced":
        return chat_stream(400, delay=0.05)
    if model == "gpt-slow-json":
        return Reply(body=chat_json("late"), delay=20)
    if model == "claude-paced":
        return anthropic_stream(delay=0.5)
    if request.get("stream"):
        return chat_stream(3)
    return Reply(body=chat_json("hi"))


@pytest.fixture(scope="module")
def upstream() -> Iterator[RawUpstream]:
    with RawUpstream(reply=reply_for) as server:
        yield server


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def proxy(request: pytest.FixtureRequest, upstream: RawUpstream) -> Iterator[ProxyServer]:
    if request.param == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    env = {
        "HYDRA_MAX_BODY_BYTES": str(MAX_BODY),
        "HYDRA_BODY_TIMEOUT": "1",
        "HYDRA_MAX_JSON_DEPTH": str(MAX_DEPTH),
        "HYDRA_SEND_STALL_TIMEOUT": "3",
        "HYDRA_PASSTHROUGH": "1",
        "HYDRA_ANTHROPIC_BASE_URL": upstream.url,
        "ANTHROPIC_API_KEY": "sk-ant-upstream-key",
        "HYDRA_USAGE_LEDGER": "off",
    }
    with ProxyServer(upstream.url + "/v1", impl=request.param, env=env) as server:
        yield server


def model_request(path: str, **extra: object) -> dict[str, object]:
    return entries.body_for(path, **extra)


def post(
    proxy: ProxyServer, path: str, body: bytes, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], dict[str, object]]:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request("POST", path, body, {"content-type": "application/json", **(headers or {})})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, dict(response.getheaders()), orjson.loads(data)


def assert_error(path: str, payload: dict[str, object], error_type: str, *needles: str) -> None:
    """The error in the shape of the endpoint's protocol (entries.error_of): Anthropic's
    type, OpenAI's invalid_request_error, Gemini's status; the message names the problem
    and the limit."""
    error = entries.error_of(path, payload)
    if path.startswith("/v1/messages"):
        assert error["type"] == error_type
    elif "type" in error:
        assert error["type"] == "invalid_request_error"
    else:
        assert error["status"] == "INVALID_ARGUMENT" or error["code"] == 413
    for needle in needles:
        assert needle in str(error["message"])


def openai_code(payload: dict[str, object]) -> object:
    error = payload["error"]
    assert isinstance(error, dict)
    return error["code"]


# -- body size --------------------------------------------------------------------------


@pytest.mark.parametrize("path", ENDPOINTS)
def test_a_body_over_max_body_bytes_gets_413_in_the_clients_protocol(
    proxy: ProxyServer, upstream: RawUpstream, path: str
) -> None:
    before = len(upstream.requests)
    body = orjson.dumps(model_request(path, pad="a" * (MAX_BODY + 1)))
    status, _, payload = post(proxy, path, body)  # written whole, then read: no EPIPE
    assert status == 413
    assert_error(path, payload, "request_too_large", str(MAX_BODY), "max_body_bytes")
    if "code" in payload["error"] and "type" in payload["error"]:  # type: ignore[operator]
        assert openai_code(payload) == "request_too_large"
    assert len(upstream.requests) == before  # nothing went upstream


def test_a_chunked_body_is_refused_once_it_passes_the_bound(proxy: ProxyServer) -> None:
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    sock.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"transfer-encoding: chunked\r\n\r\n"
    )
    piece = b"a" * 8192
    for _ in range(MAX_BODY // len(piece) + 2):
        sock.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
    sock.sendall(b"0\r\n\r\n")
    status, payload = read_response(sock)
    assert status == 413
    assert_error("/v1/chat/completions", payload, "request_too_large", "max_body_bytes")
    assert openai_code(payload) == "request_too_large"


def test_expect_100_continue_is_refused_before_the_body_is_sent(proxy: ProxyServer) -> None:
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    sock.sendall(
        b"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"expect: 100-continue\r\ncontent-length: %d\r\n\r\n" % (MAX_BODY * 100)
    )
    status, payload = read_response(sock)  # no byte of the body was sent
    assert status == 413
    assert_error("/v1/messages", payload, "request_too_large", "max_body_bytes")


# -- malformed bodies -------------------------------------------------------------------


def nested(depth: int) -> bytes:
    """A JSON value of `depth` levels of arrays (inside a request object: +1 level)."""
    return b"[" * depth + b"]" * depth


BAD_BODIES = [
    (b"{not json", None, "not valid JSON"),
    (b"[1, 2]", None, "must be a JSON object, not an array"),
    (b'"text"', None, "must be a JSON object, not a string"),
    (b'{"model": "gpt-4o", "x": "\xff\xfe"}', None, "not valid UTF-8"),
    (b'{"model": "gpt-4o", "x": ' + nested(MAX_DEPTH) + b"}", None, f"deeper than {MAX_DEPTH}"),
    (b'{"x": ' + nested(5000) + b"}", None, f"deeper than {MAX_DEPTH} levels (max_json_depth)"),
    (b'{"model": "gpt-4o"}', "text/plain", "content-type must be application/json"),
    (b"model=gpt-4o", "application/x-www-form-urlencoded", "content-type must be"),
]


@pytest.mark.parametrize("path", ENDPOINTS)
@pytest.mark.parametrize(("body", "content_type", "needle"), BAD_BODIES)
def test_malformed_bodies_get_a_clear_400(
    proxy: ProxyServer, path: str, body: bytes, content_type: str | None, needle: str
) -> None:
    headers = {"content-type": content_type} if content_type else {}
    status, _, payload = post(proxy, path, body, headers)
    assert status == 400
    assert_error(path, payload, "invalid_request_error", needle)


def test_nesting_at_the_bound_is_accepted_and_one_level_more_is_not(proxy: ProxyServer) -> None:
    # The request object is level 1, "tools" 2, the tool 3, its schema 4: the rest nests.
    def count(levels: int) -> tuple[int, dict[str, object]]:
        schema: dict[str, object] = {"type": "object"}
        for _ in range(levels - 4):
            schema = {"type": "object", "properties": {"a": schema}}  # two levels each
        body = orjson.dumps(
            {**model_request("/v1/messages"), "tools": [{"name": "t", "input_schema": schema}]}
        )
        status, _, payload = post(proxy, "/v1/messages/count_tokens", body)
        return status, payload

    status, payload = count(MAX_DEPTH // 2 + 2)  # depth 4 + 2 * (levels - 4) = MAX_DEPTH
    assert status == 200 and isinstance(payload["input_tokens"], int)
    status, payload = count(MAX_DEPTH // 2 + 3)
    assert status == 400
    assert_error("/v1/messages", payload, "invalid_request_error", "max_json_depth")


@pytest.mark.parametrize("path", ENDPOINTS)
def test_a_request_without_content_type_is_refused(proxy: ProxyServer, path: str) -> None:
    # A web page can send a body of no declared type to any address (fetch, no-cors).
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request("POST", path, orjson.dumps(model_request(path)))
    response = conn.getresponse()
    payload = orjson.loads(response.read())
    assert response.status == 400
    assert_error(path, payload, "invalid_request_error", "no Content-Type", "application/json")


# -- heads ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "head",
    [
        b"".join(b"x-field-%d: v\r\n" % i for i in range(101)),  # hyper: at most 100 fields
        b"x-big: " + b"a" * (70 * 1024) + b"\r\n",  # past the 64 KiB head buffer (run.py)
    ],
    ids=["101-fields", "70-KiB"],
)
def test_oversized_heads_get_431(proxy: ProxyServer, head: bytes) -> None:
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    sock.sendall(b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n" + head + b"\r\n")
    answer = read_to_eof(sock)  # and that connection is closed
    assert answer.startswith(b"HTTP/1.1 431 ")
    assert b"\r\nconnection: close\r\n" in answer.lower()


def test_a_head_just_under_the_bounds_is_served(proxy: ProxyServer) -> None:
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
    fields = b"".join(b"x-field-%d: %s\r\n" % (i, b"v" * 500) for i in range(98))
    sock.sendall(b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n" + fields + b"\r\n")
    assert sock.recv(100).startswith(b"HTTP/1.1 200 ")


# -- slow clients -----------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/chat/completions"])
def test_a_slow_loris_upload_gets_408_and_its_connection_closed(
    proxy: ProxyServer, path: str
) -> None:
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=15)
    sock.sendall(
        b"POST %s HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b'content-length: 1000\r\n\r\n{"model": ' % path.encode()
    )
    status, payload = read_response(sock)  # the rest never comes
    assert status == 408
    assert_error(path, payload, "invalid_request_error", "1 s (body_timeout)")
    if path == "/v1/chat/completions":
        assert openai_code(payload) == "request_timeout"
    # The connection carries no other request. granian may keep reading the declared body
    # (a receive it started is still waiting for it), so the rest is sent, then a request:
    # the answer must be EOF, not a reply to that request.
    try:
        sock.sendall(b" " * 990 + b"GET /health HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        return  # already closed
    assert read_to_eof(sock) == b""  # closed by the proxy


def rss_kib(pid: int) -> int:
    """Resident memory of a process and its children (granian's workers)."""
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if int(entry.name) != pid and int(stat[1]) != pid:
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total


def test_a_client_that_stops_reading_pauses_the_upstream_then_its_stream_ends(
    proxy: ProxyServer, upstream: RawUpstream
) -> None:
    """granian's send stops taking bodies at once; the relay then stops reading the
    upstream. Without that, the endless upstream here grew the worker ~80 MB a second."""
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=15)
    body = orjson.dumps(model_request("/v1/messages", model="gpt-endless", stream=True))
    sock.sendall(
        b"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(body), body)
    )
    assert b"200 OK" in sock.recv(200)
    start = upstream.requests_count()
    assert upstream.wait_for(lambda: upstream.open_connections() >= 1)
    rss_before = rss_kib(proxy.process.pid) if proxy.process else 0
    time.sleep(1.0)
    written = upstream.bytes_written
    time.sleep(1.0)  # still within send_stall_timeout (3 s)
    assert upstream.bytes_written == written, "the upstream was not paused"
    rss_after = rss_kib(proxy.process.pid) if proxy.process else 0
    assert rss_after - rss_before < 32 * 1024
    # Past the stall timeout the upstream request is dropped, the client still connected.
    assert upstream.wait_for(lambda: upstream.open_connections() == 0, 10)
    assert upstream.requests_count() == start
    data = b""  # the client reads again: what was queued, then the end
    while not data.endswith(b"\r\n0\r\n\r\n"):  # a complete chunked transfer
        chunk = sock.recv(1 << 20)
        assert chunk, data[-300:]
        data += chunk
    assert b"event: error" in data[-1000:] and b"send_stall_timeout" in data[-1000:]


# -- client disconnect ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "model", "stream"),
    [
        ("/v1/messages", "gpt-paced", True),  # translated stream (relay)
        ("/v1/chat/completions", "gpt-paced", True),  # same protocol (forward)
        ("/v1/messages", "gpt-slow-json", False),  # non-streamed, translated
        ("/v1/chat/completions", "gpt-slow-json", False),  # non-streamed, passthrough
        ("/v1/messages", "claude-paced", True),  # Anthropic passthrough (forward)
        ("/v1/responses", "gpt-paced", True),  # Responses over Chat (relay)
    ],
)
def test_a_client_that_leaves_cancels_the_upstream_and_closes_its_connection(
    proxy: ProxyServer, upstream: RawUpstream, path: str, model: str, stream: bool
) -> None:
    assert upstream.wait_for(lambda: upstream.open_connections() == 0)
    before = upstream.requests_count()
    sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=15)
    body = orjson.dumps(model_request(path, model=model, stream=stream))
    sock.sendall(
        b"POST %s HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (path.encode(), len(body), body)
    )
    assert upstream.wait_for(lambda: upstream.requests_count() > before)
    if stream:
        assert b"200 OK" in sock.recv(65536)  # the stream is flowing
    assert upstream.open_connections() == 1
    sock.close()
    # Closed at once, not kept for the pool: the upstream sees its client go.
    assert upstream.wait_for(lambda: upstream.open_connections() == 0, 5)


def read_response(sock: socket.socket) -> tuple[int, dict[str, object]]:
    """One HTTP/1.1 response with a Content-Length body: (status, parsed JSON body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a response: {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk
        rest += chunk
    return int(head.split()[1]), orjson.loads(rest[:length])


def read_to_eof(sock: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data
