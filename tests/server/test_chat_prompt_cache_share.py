"""Cached input of a Chat agent on Claude through the proxy against the same session sent to
Anthropic directly, on a mock that caches as Anthropic does (``--prefix-cache``: a prefix
is written at each ``cache_control`` breakpoint and read back at or up to 20 blocks before
a later request's breakpoint; no breakpoint, no caching).

opencode's recorded request (recorded_sessions.opencode_request) grows to `TURNS` turns
through a real proxy process on the ``anthropic`` provider: every turn the proxy's reply
(signed reasoning with its continuation suffix, text, a tool call) is appended as opencode
appends it, with the tool's answer, and opencode's marks are moved as it moves them
(`opencode_marks`). Three ways in, each from an empty cache:

- ``marked``: opencode's own requests (its ``cache_control`` marks and session headers);
- ``unmarked``: the same with no marks, the session named by ``x-session-id`` only (a
  client that relies on the proxy's automatic breakpoints);
- ``direct``: the Anthropic requests the proxy sent, without any of its breakpoints, marked
  the way opencode marks a request to Anthropic directly (the system prompt and the last
  two messages), sent straight to the mock.

And ``none``: the same requests without any breakpoint, as they went out before the proxy
read any (the mock caches nothing of them). Shares are cached tokens over all input tokens
of every turn; through the proxy they must be within five points of direct.
"""

from __future__ import annotations

import copy
import http.client
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from hydra_proxy.mock import MockServer
from support.recorded_sessions import opencode_marks, opencode_request
from support.servers import ProxyServer

TURNS = 8
ENV = {"ANTHROPIC_API_KEY": "sk-ant-hydra-cache-share-dummy"}


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer("--prefix-cache") as server:
        yield server


def post(port: int, path: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", path, orjson.dumps(body), {"content-type": "application/json", **headers})
    response = conn.getresponse()
    data = response.read()
    assert response.status == 200, data[:500]
    reply: dict[str, Any] = orjson.loads(data)
    return reply


def share(counts: list[tuple[int, int]]) -> float:
    return sum(c for _, c in counts) / sum(p for p, _ in counts)


def replies() -> list[dict[str, Any]]:
    """The upstream's turns: a tool call each, signed thinking before it; then an answer."""
    turns: list[dict[str, Any]] = [
        {
            "reasoning": f"Step {k}: I list the files with bash.",
            "signature": f"EqQBCkYIBxgCKkB-step-{k}",
            "text": f"Listing step {k}.",
            "tool_calls": [{"id": f"toolu_step{k}", "name": "bash",
                            "arguments": {"command": f"ls /tmp/{k}", "description": "List"}}],
        }
        for k in range(TURNS - 1)
    ]  # fmt: skip
    return [*turns, {"reasoning": "Done.", "signature": "EqQBCkYIBxgCKkB-done", "text": "Done."}]


def through_proxy(
    mock: MockServer, marked: bool
) -> tuple[list[tuple[int, int]], list[dict[str, Any]]]:
    """The session through the proxy: each turn's (prompt, cached) tokens as the client was
    told them, and the Anthropic requests the proxy sent."""
    headers, base = opencode_request()
    sent = {k: v for k, v in headers.items() if k in ("user-agent", "x-session-id")}
    if not marked:  # a client the proxy knows only by its session
        sent["user-agent"] = "chat-agent/1.0"
    messages = [  # the system prompt and the task, unmarked
        {k: v for k, v in m.items() if k != "cache_control"} for m in base["messages"][:2]
    ]
    counts = []
    mock.clear()
    mock.script(replies())
    with ProxyServer(mock.url, "--provider", "anthropic", env=ENV) as proxy:
        for _ in range(TURNS):
            body = {**base, "stream": False}
            body.pop("stream_options")
            body["messages"] = opencode_marks(messages) if marked else messages
            completion = post(proxy.port, "/v1/chat/completions", body, sent)
            usage = completion["usage"]
            counts.append((usage["prompt_tokens"], usage["prompt_tokens_details"]["cached_tokens"]))
            reply = completion["choices"][0]["message"]
            assistant = {"role": "assistant", "content": reply["content"],
                         "reasoning_content": reply["reasoning_content"]}  # fmt: skip
            messages.append(assistant)
            for call in reply.get("tool_calls") or ():
                assistant.setdefault("tool_calls", []).append(call)
                messages.append({"role": "tool", "tool_call_id": call["id"],
                                 "content": f"file-{call['id']}.txt\n"})  # fmt: skip
    upstream = [r["body"] for r in mock.requests() if r["path"] == "/v1/messages"]
    assert len(upstream) == TURNS and mock.pending() == 0
    return counts, upstream


def unmarked(body: dict[str, Any]) -> dict[str, Any]:
    """The Anthropic request without any breakpoint."""
    out = copy.deepcopy(body)
    out.pop("cache_control", None)
    out["stream"] = False
    for block in [*out.get("system", []), *(b for m in out["messages"] for b in m["content"])]:
        if isinstance(block, dict):
            block.pop("cache_control", None)
    return out


def marked_directly(body: dict[str, Any]) -> dict[str, Any]:
    """The Anthropic request marked as opencode marks one to Anthropic itself: the system
    prompt's last block and each of the last two messages' last block."""
    out = unmarked(body)
    for blocks in (out["system"], *(m["content"] for m in out["messages"][-2:])):
        blocks[-1]["cache_control"] = {"type": "ephemeral"}
    return out


def directly(mock: MockServer, bodies: list[dict[str, Any]]) -> list[tuple[int, int]]:
    mock.clear()
    counts = []
    for body in bodies:
        usage = post(mock.port, "/v1/messages", body, {"x-api-key": "sk-ant-dummy"})["usage"]
        counts.append((usage["input_tokens"] + usage["cache_read_input_tokens"],
                       usage["cache_read_input_tokens"]))  # fmt: skip
    return counts


def test_cached_share_of_a_chat_agent_on_claude_matches_anthropic_direct(mock: MockServer) -> None:
    marked, upstream = through_proxy(mock, marked=True)
    # The proxy kept opencode's marks and restored every turn's signed thinking.
    assert all(b["thinking"]["type"] == "enabled" for b in upstream)
    assert all(m["content"][0]["type"] == "thinking" for b in upstream[1:]
               for m in b["messages"] if m["role"] == "assistant")  # fmt: skip
    auto, auto_upstream = through_proxy(mock, marked=False)
    assert all("cache_control" in b for b in auto_upstream), "automatic breakpoints"
    direct = directly(mock, [marked_directly(b) for b in upstream])
    none = directly(mock, [unmarked(b) for b in upstream])

    shares = {name: share(counts) for name, counts in
              (("marked", marked), ("unmarked", auto), ("direct", direct), ("none", none))}  # fmt: skip
    print("cached input share over", TURNS, "turns:",
          ", ".join(f"{name} {value:.4f}" for name, value in shares.items()))  # fmt: skip
    assert shares["none"] == 0, "without breakpoints the mock caches nothing"
    assert shares["direct"] > 0.6
    assert marked[0][1] == 0 and all(cached > 0 for _, cached in marked[1:])
    assert abs(shares["marked"] - shares["direct"]) <= 0.05
    assert abs(shares["unmarked"] - shares["direct"]) <= 0.05
