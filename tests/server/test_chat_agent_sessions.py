"""What the proxy reads from the headers of agent clients: the session (every header of
`sessions.SESSION_HEADERS` and the ``session_headers`` setting's), the agents known to replay
reasoning (`ingress.chat.REPLAYING_CLIENTS`), and the notice when a tool turn's thinking
had to be turned off. Real proxy processes on the mock upstream."""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from hydra_proxy import continuation
from hydra_proxy.mock import MockServer
from hydra_proxy.server.checks.admission import session_of
from hydra_proxy.server.ingress.chat import REPLAYING_CLIENTS
from hydra_proxy.server.pipeline.sessions import SESSION_HEADERS, session_cache_key, session_id
from support.servers import ProxyServer

CONFIGURED = "x-my-agent-session"  # named by the session_headers setting
NAMES = [*(name.decode() for name in SESSION_HEADERS), CONFIGURED]
ENV = {
    "ANTHROPIC_API_KEY": "sk-ant-dummy",
    "OPENAI_API_KEY": "sk-dummy",
    "HYDRA_SESSION_HEADERS": CONFIGURED.upper(),  # header names are not case-sensitive
}
THINKING_TURN = {"reasoning": "Let me think.", "signature": "EqQBCkYIBxgCKkB-sig", "text": "Hi."}


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(scope="module")
def claude(mock: MockServer) -> Iterator[ProxyServer]:
    with ProxyServer(mock.url, "--provider", "anthropic", env=ENV) as server:
        yield server


@pytest.fixture(scope="module")
def openai(mock: MockServer) -> Iterator[ProxyServer]:
    with ProxyServer(mock.url + "/v1", "--provider", "openai", env=ENV) as server:
        yield server


def post(port: int, path: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", path, orjson.dumps(body), {"content-type": "application/json", **headers})
    response = conn.getresponse()
    data = response.read()
    assert response.status == 200, data[:500]
    reply: dict[str, Any] = orjson.loads(data)
    return reply


def chat(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "messages": list(messages), **extra}


def last_upstream(mock: MockServer) -> dict[str, Any]:
    body: dict[str, Any] = mock.requests()[-1]["body"]
    return body


def test_the_session_headers_are_read_in_order() -> None:
    sent = {name.encode(): f"value-of-{name}".encode() for name in NAMES}
    assert session_id(sent.get) == f"value-of-{NAMES[0]}"
    for name in NAMES[:-1]:
        only = {name.encode(): b"abc-1"}
        assert session_id(only.get) == "abc-1"
        assert session_cache_key(None, only.get) == "abc-1"
        assert session_cache_key("own-key", only.get) == "own-key"
        scope = {"type": "http", "headers": [(name.encode(), b"abc-1")]}
        assert session_of(scope, "key1") == "s:abc-1"  # the fair queue's session
    assert session_of({"type": "http", "headers": []}, "key1") == "k:key1"


@pytest.mark.parametrize("name", NAMES)
def test_a_session_header_is_the_upstreams_cache_key(
    name: str, mock: MockServer, openai: ProxyServer
) -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip
    post(openai.port, "/v1/messages", body, {name: "ses_0123abc"})
    assert last_upstream(mock)["prompt_cache_key"] == "ses_0123abc"


@pytest.mark.parametrize("name", NAMES)
def test_a_chat_session_on_claude_gets_automatic_breakpoints(
    name: str, mock: MockServer, claude: ProxyServer
) -> None:
    ua = {"user-agent": "some-chat-client/1.0"}
    post(claude.port, "/v1/chat/completions", chat({"role": "user", "content": "hi"}), ua)
    assert "cache_control" not in last_upstream(mock), "no session: nothing to cache for"
    post(claude.port, "/v1/chat/completions",
         chat({"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}),
         {**ua, name: "ses_0123abc"})  # fmt: skip
    sent = last_upstream(mock)
    assert sent["cache_control"] == {"type": "ephemeral"}
    assert sent["system"] == [{"type": "text", "text": "Be brief.",
                               "cache_control": {"type": "ephemeral"}}]  # fmt: skip


@pytest.mark.parametrize("name", [n.decode() for n in REPLAYING_CLIENTS])
def test_known_agents_get_the_suffix_and_automatic_breakpoints(
    name: str, mock: MockServer, claude: ProxyServer
) -> None:
    mock.script([THINKING_TURN])
    reply = post(claude.port, "/v1/chat/completions",
                 chat({"role": "user", "content": "hi"}, reasoning_effort="low"),
                 {"user-agent": f"{name.capitalize()}/9.9 (linux)"})  # fmt: skip
    reasoning = reply["choices"][0]["message"]["reasoning_content"]
    assert reasoning.startswith("Let me think." + continuation.PREFIX)
    assert "cache_control" in last_upstream(mock)


def tool_turn(reasoning: str) -> dict[str, Any]:
    return chat(
        {"role": "user", "content": "list the files"},
        {"role": "assistant", "content": None, "reasoning_content": reasoning,
         "tool_calls": [{"id": "call_1", "type": "function",
                         "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a.txt"},
        tools=[{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}],
        reasoning_effort="low",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("user_agent", "why"),
    [
        ("some-chat-client/1.0", "the client is not known to replay reasoning"),
        ("opencode/1.18.33", "the reasoning it replayed did not verify"),
    ],
)
def test_a_tool_turn_without_thinking_is_said_once_per_session(
    user_agent: str, why: str, mock: MockServer, claude: ProxyServer
) -> None:
    session = f"ses_{abs(hash(user_agent))}"
    headers = {"user-agent": user_agent, "x-session-id": session}
    forged = "I will list them." + continuation.PREFIX + "e30.AAAAAAAAAAAAAAAAAAAAAAAA]]"
    for _ in range(2):
        post(claude.port, "/v1/chat/completions", tool_turn(forged), headers)
        assert last_upstream(mock)["thinking"] == {"type": "disabled"}
    log = claude.log_text()
    assert log.count("thinking turned off for a tool turn") >= 1
    told = [line for line in log.splitlines() if why in line]
    assert len(told) == 1, log[-3000:]
