"""What every model-request entry of the app (MODEL_ENTRIES) records, end to end on the
proxy process (both transducer implementations) and the embedded mock (a Chat upstream
that, like OpenAI and vLLM, sends a stream's usage only when asked): the upstream's counts
whatever the client asked for; a stream the client cut, or one that ended before its
counts, recorded with what the client was sent and the input's estimate, marked
estimated, never as free; a Chat client that did not ask for the usage chunk does not get
it."""

from __future__ import annotations

import http.client
import socket
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from hydra_proxy.mock import MockServer
from hydra_proxy.server.app import ModelEntry
from hydra_proxy.tokens import text_tokens
from hydra_proxy.usage.backends import open_ledger
from support import entries
from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING, _native
from support.servers import ProxyServer
from support.team_keys import PRICES, config

TEXT = "The quick brown fox jumps over the lazy dog, " * 20


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def rig(
    request: pytest.FixtureRequest, mock: MockServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ProxyServer, str]]:
    if request.param == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    directory = tmp_path_factory.mktemp("usage")
    ledger = f"sqlite:{directory / 'usage.sqlite3'}"
    env = {"HYDRA_USAGE_LEDGER": ledger, "HYDRA_CONFIG": str(config(mock, directory)),
           "HYDRA_RETRIES": "0"}  # fmt: skip
    with ProxyServer(mock.url + "/v1", impl=request.param, env=env) as server:
        yield server, ledger


def send(
    server: ProxyServer, entry: ModelEntry, body: dict[str, Any], path: str
) -> tuple[int, bytes, str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("POST", path, orjson.dumps(body), {"content-type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data, response.getheader("x-request-id") or ""


def wait_record(ledger: str, request_id: str) -> Any:
    """The ledger's record of a request (written in batches)."""
    reader = open_ledger(ledger, start=False)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for row in reader.query():
            if row.request_id == request_id:
                return row
        time.sleep(0.05)
    raise AssertionError(f"no record of {request_id}")


@pytest.mark.parametrize("entry", entries.ENTRIES)
def test_the_upstreams_counts_whatever_the_client_asked(
    rig: tuple[ProxyServer, str], mock: MockServer, entry: ModelEntry
) -> None:
    server, ledger = rig
    mock.clear()
    mock.script([{"text": TEXT, "usage": {"prompt_tokens": 50, "completion_tokens": 120}}])
    path, body = entry.request("priced-x", stream=entry.streams is None)
    status, data, request_id = send(server, entry, body, path)
    assert status == 200
    upstream = mock.requests()[0]["body"]
    if upstream.get("stream"):  # asked for the usage whatever the client did
        assert upstream["stream_options"] == {"include_usage": True}
    if entry.protocol == "chat":  # the client did not ask: it gets no usage chunk
        assert b'"usage":{' not in data and b'"choices":[]' not in data
        assert data.rstrip().endswith(b"data: [DONE]")
    row = wait_record(ledger, request_id)
    assert (row.input_tokens, row.output_tokens, row.estimated) == (50, 120, False)
    inp, out = PRICES["priced-a"]
    assert row.cost_usd == pytest.approx((50 * inp + 120 * out) / 1e6)


@pytest.mark.parametrize("entry", entries.STREAMED)
def test_a_stream_the_client_cuts_is_recorded_with_what_it_was_sent(
    rig: tuple[ProxyServer, str], mock: MockServer, entry: ModelEntry
) -> None:
    server, ledger = rig
    mock.clear()
    mock.script([{"text": TEXT, "chunk_size": 20, "delay_ms": 30,
                  "usage": {"prompt_tokens": 50, "completion_tokens": 120}}])  # fmt: skip
    path, body = entry.request("priced-x", stream=True)
    data = orjson.dumps(body)
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    sock.sendall(
        f"POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        f"content-length: {len(data)}\r\n\r\n".encode()
        + data
    )
    received = b""
    while received.count(b"fox") < 3:  # a few pieces of text, then the client leaves
        received += sock.recv(65536)
    head = received.split(b"\r\n\r\n")[0].decode("latin-1").lower()
    request_id = head.split("x-request-id: ")[1].split("\r\n")[0]
    sock.close()
    row = wait_record(ledger, request_id)
    assert row.estimated and row.error_type == "client_gone"
    assert 10 <= row.output_tokens < text_tokens(TEXT)  # what it was sent before it left
    assert row.input_tokens > 0 and row.cost_usd > 0


@pytest.mark.parametrize("entry", entries.STREAMED)
def test_a_stream_without_counts_is_counted_by_the_proxy(
    rig: tuple[ProxyServer, str], mock: MockServer, entry: ModelEntry
) -> None:
    server, ledger = rig
    mock.clear()
    mock.script([{"text": TEXT, "cut": True}])  # ends before its usage chunk
    path, body = entry.request("priced-x", stream=True)
    _, _, request_id = send(server, entry, body, path)
    row = wait_record(ledger, request_id)
    assert row.estimated
    assert row.output_tokens == text_tokens(TEXT)  # the text the client was sent
    assert row.input_tokens > 0 and row.cost_usd > 0


def test_a_chat_client_that_asked_for_usage_gets_it(
    rig: tuple[ProxyServer, str], mock: MockServer
) -> None:
    server, _ = rig
    mock.clear()
    mock.script([{"text": "hi", "usage": {"prompt_tokens": 5, "completion_tokens": 7}}])
    entry = next(e for e in entries.MODEL_ENTRIES if e.protocol == "chat")
    path, body = entry.request("priced-x", stream=True)
    body["stream_options"] = {"include_usage": True}
    _, data, _ = send(server, entry, body, path)
    assert b'"usage":{"prompt_tokens":5,"completion_tokens":7' in data
