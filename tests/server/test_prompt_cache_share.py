"""Cached input through the proxy against a direct client, on a mock that caches by prefix
(``--prefix-cache``: a request's cached tokens are the byte prefix it shares with the last
request of its ``prompt_cache_key``).

Claude Code's recorded session, grown turn by turn (recorded_sessions), goes through a real
proxy process to an OpenAI-style upstream (the ``openai`` preset: the session becomes the
``prompt_cache_key``); the cached tokens are read from the usage the proxy reports back to
Claude Code. The direct client sends the same turns to the same mock as an append-only Chat
client would: each turn the conversation of the last turn cut to that turn's length, with
its own session key. The shares are the cached tokens over the prompt tokens of every
turn; the proxy's must equal the direct client's.
"""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from hydra_proxy.mock import MockServer
from support.recorded_sessions import claude_code_session
from support.servers import ProxyServer

TURNS = 8
# Claude Code's headers the proxy reads (the session); the rest are the CLI's own.
FORWARDED = ("x-claude-code-session-id", "anthropic-version", "anthropic-beta", "user-agent")


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer("--prefix-cache") as server:
        yield server


def post(port: int, path: str, body: dict[str, Any], headers: dict[str, str]) -> bytes:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", path, orjson.dumps(body), {"content-type": "application/json", **headers})
    response = conn.getresponse()
    data = response.read()
    assert response.status == 200, data[:500]
    return data


def anthropic_usage(data: bytes) -> tuple[int, int]:
    """(prompt tokens, cached tokens) of a streamed Messages reply."""
    usage: dict[str, Any] = {}
    for line in data.split(b"\n"):
        if not line.startswith(b"data:"):
            continue
        event = orjson.loads(line[5:])
        if event["type"] == "message_start":
            usage.update(event["message"]["usage"])
        elif event["type"] == "message_delta":
            usage.update(event["usage"])
    cached = usage["cache_read_input_tokens"]
    return usage["input_tokens"] + cached, cached


def chat_usage(data: bytes) -> tuple[int, int]:
    usage = orjson.loads(data)["usage"]
    return usage["prompt_tokens"], usage["prompt_tokens_details"]["cached_tokens"]


def share(counts: list[tuple[int, int]]) -> float:
    return sum(c for _, c in counts) / sum(p for p, _ in counts)


def test_cached_share_through_the_proxy_equals_a_direct_client(mock: MockServer) -> None:
    mock.clear()
    session = claude_code_session(TURNS)
    through_proxy: list[tuple[int, int]] = []
    with ProxyServer(mock.url + "/v1", "--provider", "openai") as proxy:
        for headers, body in session:
            sent = {k: v for k, v in headers.items() if k in FORWARDED}
            through_proxy.append(anthropic_usage(post(proxy.port, "/v1/messages", body, sent)))
    upstream = [r["body"] for r in mock.requests() if r["path"] == "/v1/chat/completions"]
    assert len(upstream) == TURNS
    session_id = session[0][0]["x-claude-code-session-id"]
    assert {b["prompt_cache_key"] for b in upstream} == {session_id}

    # The direct client: the same turns, each the last turn's conversation cut to its length.
    mock.clear()
    final = upstream[-1]["messages"]
    direct: list[tuple[int, int]] = []
    for body in upstream:
        turn = {**body, "messages": final[: len(body["messages"])], "stream": False}
        turn.pop("stream_options", None)
        turn["prompt_cache_key"] = "direct-" + session_id
        direct.append(chat_usage(post(mock.port, "/v1/chat/completions", turn, {})))

    # A client that put a per-request byte first (the billing block, kept) caches nothing
    # but the tools: the mock tells the two apart.
    mock.clear()
    varying: list[tuple[int, int]] = []
    for n, body in enumerate(upstream):
        system = {"role": "system", "content": f"cc_version=2.1.328.{n:03x}"}
        turn = {**body, "messages": [system, *final[: len(body["messages"])]], "stream": False}
        turn.pop("stream_options", None)
        varying.append(chat_usage(post(mock.port, "/v1/chat/completions", turn, {})))
    tools = len(orjson.dumps(upstream[0]["tools"])) // 4
    assert all(cached <= tools + 16 for _, cached in varying[1:]), (varying, tools)

    proxy_share, direct_share = share(through_proxy), share(direct)
    print(
        f"cached input share over {TURNS} turns: through the proxy {proxy_share:.4f}, "
        f"direct {direct_share:.4f}, a varying first byte {share(varying):.4f}"
    )
    assert through_proxy[0][1] == 0 and all(cached > 0 for _, cached in through_proxy[1:])
    # The same share: every turn's cached prefix is the direct client's (the stream flag
    # and its options are the only bytes that differ, after the conversation).
    assert proxy_share == pytest.approx(direct_share, abs=0.002)
    assert proxy_share > 0.8
