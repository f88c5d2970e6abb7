"""Cached input tokens, end to end: each upstream reports its prompt-cache hits in its own
field (OpenAI ``prompt_tokens_details.cached_tokens``, DeepSeek ``prompt_cache_hit_tokens``,
Responses ``input_tokens_details.cached_tokens``, Gemini ``cachedContentTokenCount``,
Anthropic ``cache_read_input_tokens``); every client protocol gets them back in its own
field, streamed and not, translated and passed through, and the ledger prices them at
the cache-read rate. Both transducer implementations."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_server_usage import rows

from hydra_proxy.mock import MockServer
from support.every_kind import EVERY_KIND
from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING, _native
from support.servers import ProxyServer

PROMPT, CACHED, COMPLETION = 1000, 800, 7
# USD per million tokens: the cache read at a tenth of the input (as OpenAI and DeepSeek).
INPUT_RATE, CACHE_RATE, OUTPUT_RATE = 2.0, 0.2, 8.0

CONFIG = (
    EVERY_KIND
    + """
[[routes]]
match = "cache-openai"
provider = "chat"

[[routes]]
match = "cache-deepseek"
provider = "chat"

[[routes]]
match = "cache-responses"
provider = "responses"

[[routes]]
match = "cache-claude"
provider = "claude"

[[routes]]
match = "cache-gemini"
provider = "gemini"
model = "cache-gemini-flash"

[pricing."*cache-*"]
input = {input}
cache_read = {cache}
output = {output}
"""
)
UPSTREAMS = ("openai", "deepseek", "responses", "claude", "gemini")
CLIENTS = ("anthropic", "chat", "responses")


def turn(upstream: str) -> dict[str, Any]:
    usage: dict[str, int] = {"prompt_tokens": PROMPT, "completion_tokens": COMPLETION}
    usage["prompt_cache_hit_tokens" if upstream == "deepseek" else "cached_tokens"] = CACHED
    return {"text": "Hello there.", "usage": usage}


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def proxy(
    request: pytest.FixtureRequest, mock: MockServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[ProxyServer, str]]:
    if request.param == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    home = Path(tmp_path_factory.mktemp("cached"))
    config = home / "hydra.toml"
    config.write_text(
        CONFIG.format(url=mock.url, input=INPUT_RATE, cache=CACHE_RATE, output=OUTPUT_RATE),
        encoding="utf-8",
    )
    ledger = f"sqlite:{home / 'usage.sqlite3'}"
    env = {"UP_KEY": "sk-upstream-key-for-cache", "HYDRA_USAGE_LEDGER": ledger}
    args = ("--config", str(config))
    with ProxyServer(mock.url + "/v1", *args, impl=request.param, env=env) as server:
        yield server, ledger


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


def request_body(client: str, model: str, stream: bool) -> tuple[str, dict[str, Any]]:
    if client == "anthropic":
        body: dict[str, Any] = {"model": model, "max_tokens": 100, "stream": stream,
                                "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip
        return "/v1/messages", body
    if client == "chat":
        body = {"model": model, "stream": stream, "messages": [{"role": "user", "content": "hi"}]}
        if stream:
            body["stream_options"] = {"include_usage": True}
        return "/v1/chat/completions", body
    return "/v1/responses", {"model": model, "stream": stream, "input": "hi", "store": False}


def events(data: bytes) -> list[dict[str, Any]]:
    return [
        orjson.loads(line[5:])
        for line in data.split(b"\n")
        if line.startswith(b"data:") and line[5:].strip() != b"[DONE]"
    ]


def client_usage(client: str, stream: bool, data: bytes) -> tuple[int, int]:
    """(the prompt as the client counts it, the cached tokens it is told)."""
    if client == "anthropic":
        if stream:
            usage: dict[str, Any] = {}
            for event in events(data):
                if event["type"] == "message_start":
                    usage.update(event["message"]["usage"])
                elif event["type"] == "message_delta":
                    usage.update(event["usage"])
        else:
            usage = orjson.loads(data)["usage"]
        cached = usage["cache_read_input_tokens"]
        return usage["input_tokens"] + cached + usage["cache_creation_input_tokens"], cached
    if client == "chat":
        if stream:
            (usage,) = [e["usage"] for e in events(data) if e.get("usage")]
        else:
            usage = orjson.loads(data)["usage"]
        if "prompt_tokens_details" not in usage:  # passed through from DeepSeek: its own field
            return usage["prompt_tokens"], usage["prompt_cache_hit_tokens"]
        return usage["prompt_tokens"], usage["prompt_tokens_details"]["cached_tokens"]
    if stream:
        (done,) = [e for e in events(data) if e["type"] == "response.completed"]
        usage = done["response"]["usage"]
    else:
        usage = orjson.loads(data)["usage"]
    return usage["input_tokens"], usage["input_tokens_details"]["cached_tokens"]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("client", CLIENTS)
def test_cached_tokens_reach_every_client_and_the_ledger(
    proxy: tuple[ProxyServer, str], mock: MockServer, client: str, stream: bool
) -> None:
    server, ledger = proxy
    request_ids = {}
    for upstream in UPSTREAMS:
        mock.script([turn(upstream)])
        path, body = request_body(client, f"cache-{upstream}", stream)
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
        conn.request("POST", path, orjson.dumps(body), headers)
        response = conn.getresponse()
        data = response.read()
        assert response.status == 200, (upstream, data)
        request_ids[upstream] = response.getheader("x-request-id")
        assert client_usage(client, stream, data) == (PROMPT, CACHED), (upstream, data[-600:])
        (upstream_request,) = [r for r in mock.requests() if r["method"] == "POST"]
        assert upstream_request["reply"] == "script", upstream
        mock.clear()
    records = wait_for_rows(ledger, set(request_ids.values()))
    for upstream, request_id in request_ids.items():
        record = records[request_id]
        assert (record.input_tokens, record.cache_read_tokens) == (PROMPT - CACHED, CACHED), (
            upstream
        )
        expected = (
            (PROMPT - CACHED) * INPUT_RATE
            + CACHED * CACHE_RATE
            + record.output_tokens * OUTPUT_RATE
        ) / 1e6
        assert record.cost_usd == pytest.approx(expected), upstream
        assert record.output_tokens == COMPLETION, upstream


def wait_for_rows(ledger: str, wanted: set[str | None]) -> dict[str, Any]:
    """The ledger rows of `wanted` (a record is written after the reply's last byte)."""
    import time

    deadline = time.monotonic() + 10
    while True:
        found = rows(ledger)
        if wanted <= set(found) or time.monotonic() > deadline:
            return found
        time.sleep(0.1)
