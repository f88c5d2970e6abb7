"""No body stalls a worker: while one request's largest allowed body of any entry
(MODEL_ENTRIES) is parsed, read and planned (in a thread: server/app.py), the same
worker keeps answering /health, on the running proxy (one worker) and a raw upstream
that notes when the big request reaches it."""

from __future__ import annotations

import http.client
import threading
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from hydra_proxy.server.app import ModelEntry
from support import entries
from support.raw_upstream import RawUpstream, Reply, chat_json, chat_stream
from support.servers import ProxyServer

MAX_BODY = 4 << 20
ARRIVED: list[float] = []


def reply_for(head: bytes, body: bytes) -> Reply:
    ARRIVED.append(time.monotonic())
    if b'"stream":true' in body:
        return chat_stream(3)
    return Reply(body=chat_json("ok"))


@pytest.fixture(scope="module")
def upstream() -> Iterator[RawUpstream]:
    with RawUpstream(reply=reply_for) as server:
        yield server


@pytest.fixture(scope="module")
def proxy(upstream: RawUpstream) -> Iterator[ProxyServer]:
    env = {"HYDRA_MAX_BODY_BYTES": str(MAX_BODY), "HYDRA_USAGE_LEDGER": "off",
           "HYDRA_RETRIES": "0"}  # fmt: skip
    with ProxyServer(upstream.url + "/v1", "--workers", "1", env=env) as server:
        yield server


def big_body(entry: ModelEntry) -> tuple[str, bytes]:
    """The entry's request with its conversation grown to nearly MAX_BODY bytes of small
    turns: the most parsing and translating work a body of that size asks."""
    path, body = entry.request("gpt-4o", stream=entry.streams is None)
    member = entry.conversation.decode()
    turn: Any = (
        {"role": "user", "parts": [{"text": "hi"}]}
        if entry.protocol == "gemini"
        else {"role": "user", "content": "hi"}
    )
    size = len(orjson.dumps(turn)) + 1
    body[member] = [turn] * ((MAX_BODY - 4096) // size)
    return path, orjson.dumps(body)


@pytest.mark.parametrize("entry", entries.ENTRIES)
def test_health_answers_while_a_big_body_is_processed(
    proxy: ProxyServer, entry: ModelEntry
) -> None:
    path, data = big_body(entry)
    assert MAX_BODY - 8192 < len(data) <= MAX_BODY
    ARRIVED.clear()
    uploaded: list[float] = []
    finished: list[tuple[int, float]] = []

    def big() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=120)
        conn.request("POST", path, data, {"content-type": "application/json"})
        uploaded.append(time.monotonic())
        response = conn.getresponse()
        response.read()
        finished.append((response.status, time.monotonic()))
        conn.close()

    sender = threading.Thread(target=big)
    sender.start()
    answered: list[float] = []
    health = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=120)
    while not finished:
        health.request("GET", "/health")
        response = health.getresponse()
        assert response.status == 200 and response.read() == b'{"status":"ok"}'
        answered.append(time.monotonic())
        time.sleep(0.02)
    sender.join()
    health.close()
    status, _ = finished[0]
    assert status == 200
    assert uploaded and ARRIVED
    # While the body was worked on (uploaded, not yet sent upstream), /health was answered
    # again and again: a worker whose event loop did that work answered it at most once
    # (a check that slipped in before the work began).
    during = [t for t in answered if uploaded[0] < t < ARRIVED[0]]
    assert len(during) >= 3, (len(during), ARRIVED[0] - uploaded[0])
