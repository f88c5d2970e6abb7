"""Refusals a session survives, through the running proxy on a DeepSeek-like Chat mock:
a parameter the upstream refuses (OpenAI's real 400 for ``reasoning_effort``) is retried
once without it before any byte reaches the client and left out from then on; max_tokens
above the model's output limit is lowered to it; a prompt longer than the window reaches
every client protocol (`PROTOCOLS`) as the error that client recovers from."""

from __future__ import annotations

import http.client
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hydra_proxy.config.protocols import PROTOCOLS
from hydra_proxy.mock import MockServer
from hydra_proxy.upstream_errors import CONTEXT_LENGTH_EXCEEDED, GEMINI_TOO_LONG, PROMPT_TOO_LONG
from support.servers import ProxyServer

OUTPUT_LIMIT = 16384
CONFIG = """
[providers.ds]
preset = "openai-reasoning"
base_url = "{base}"
api_key_env = "OPENAI_API_KEY"
max_tokens_field = "max_tokens"
context_window = 131072
max_output = {limit}

[[routes]]
match = "*"
provider = "ds"
model = "deepseek-chat"
"""


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    args = ("--refuse-param", "reasoning_effort", "--max-output", str(OUTPUT_LIMIT))
    with MockServer(*args) as server:
        yield server


@pytest.fixture(scope="module")
def proxy(mock: MockServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyServer]:
    config: Path = tmp_path_factory.mktemp("refusals") / "hydra.toml"
    config.write_text(CONFIG.format(base=mock.url + "/v1", limit=OUTPUT_LIMIT))
    with ProxyServer(mock.url + "/v1", "--config", str(config), "--log-level", "info") as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


def post(proxy: ProxyServer, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, bytes]:  # fmt: skip
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request("POST", path, json.dumps(body), {"content-type": "application/json", **headers})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


def claude_code_turn(stream: bool) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 128000,  # what Claude Code asks
        "stream": stream,
        "thinking": {"type": "enabled", "budget_tokens": 16384},
        "messages": [{"role": "user", "content": "hello"}],
    }


def chat_bodies(mock: MockServer) -> list[tuple[str, dict[str, Any]]]:
    return [
        (r.get("reply", ""), r["body"])
        for r in mock.requests()
        if r["path"] == "/v1/chat/completions"
    ]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_a_refused_parameter_is_retried_once_without_and_left_out_after(
    proxy: ProxyServer, mock: MockServer, stream: bool
) -> None:
    headers = {"anthropic-version": "2023-06-01", "x-claude-code-session-id": f"s-{stream}"}
    status, data = post(proxy, "/v1/messages", claude_code_turn(stream), headers)
    assert status == 200, data
    assert b"error" not in data
    sent = chat_bodies(mock)
    if stream:  # the first request of this proxy: refused, then sent again without it
        assert [reply for reply, _ in sent] == ["refused", "default"]
        assert sent[0][1]["reasoning_effort"] == "high"
    assert "reasoning_effort" not in sent[-1][1]
    # max_tokens 128000 lowered to the model's output limit
    assert all(body["max_tokens"] == OUTPUT_LIMIT for _, body in sent)
    mock.clear()
    status, _ = post(proxy, "/v1/messages", claude_code_turn(stream), headers)
    assert status == 200
    ((reply, body),) = chat_bodies(mock)  # remembered: no refused request any more
    assert reply == "default" and "reasoning_effort" not in body
    log = proxy.log_text()
    assert log.count("refuses 'reasoning_effort'") == 1
    assert log.count("max_tokens 128000 lowered to 16384") >= 1


OVERFLOW = {
    "status": 400,
    "message": "This model's maximum context length is 131072 tokens. However, you "
    "requested 140000 tokens. Please reduce the length of the messages.",
    "code": CONTEXT_LENGTH_EXCEEDED,
}
TEXT = [{"role": "user", "content": "a very long prompt"}]
REQUESTS: dict[str, tuple[str, dict[str, Any], dict[str, str]]] = {
    "anthropic": (
        "/v1/messages",
        {"model": "m", "max_tokens": 100, "messages": TEXT},
        {"anthropic-version": "2023-06-01"},
    ),
    "chat": ("/v1/chat/completions", {"model": "m", "messages": TEXT}, {}),
    "responses": ("/v1/responses", {"model": "m", "input": "a very long prompt"}, {}),
    "gemini": (
        "/v1beta/models/m:generateContent",
        {"contents": [{"role": "user", "parts": [{"text": "a very long prompt"}]}]},
        {},
    ),
}


def anthropic_check(error: dict[str, Any]) -> None:
    assert error["type"] == "error"
    assert error["error"]["type"] == "invalid_request_error"
    assert error["error"]["message"].startswith(PROMPT_TOO_LONG)  # Claude Code compacts


def openai_check(error: dict[str, Any]) -> None:
    assert error["error"]["code"] == CONTEXT_LENGTH_EXCEEDED  # Codex, the SDKs
    assert error["error"]["type"] == "invalid_request_error"


def gemini_check(error: dict[str, Any]) -> None:
    assert error["error"]["status"] == "INVALID_ARGUMENT"
    assert GEMINI_TOO_LONG in error["error"]["message"]  # Gemini's own words


CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "anthropic": anthropic_check,
    "chat": openai_check,
    "responses": openai_check,
    "gemini": gemini_check,
}


def test_every_client_protocol_is_covered() -> None:
    assert set(REQUESTS) == set(CHECKS) == set(PROTOCOLS)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_prompt_too_long_reaches_each_client_as_its_recoverable_error(
    proxy: ProxyServer, mock: MockServer, protocol: str
) -> None:
    path, body, headers = REQUESTS[protocol]
    mock.script([{"error": OVERFLOW}])
    status, data = post(proxy, path, body, headers)
    assert status == 400, data
    CHECKS[protocol](json.loads(data))


@pytest.mark.parametrize(
    ("status", "body", "overflow"),
    [
        (400, {"error": {"message": "x", "type": "invalid_request_error", "code": CONTEXT_LENGTH_EXCEEDED}}, True),  # OpenAI
        (400, {"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}, True),  # Anthropic
        (400, {"error": {"message": "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens", "type": "invalid_request_error"}}, True),  # DeepSeek
        (400, {"error": {"code": 400, "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}, True),  # Gemini
        (400, {"error": {"message": "Unsupported parameter: 'reasoning_effort' is not supported with this model.", "param": "reasoning_effort", "code": "unsupported_parameter"}}, False),
        (429, {"error": {"message": "too many tokens per minute", "code": "rate_limit_exceeded"}}, False),
    ],
    ids=["openai", "anthropic", "deepseek", "gemini", "unsupported-parameter", "rate-limit"],
)  # fmt: skip
def test_context_overflow_in_every_provider_s_words(
    status: int, body: dict[str, Any], overflow: bool
) -> None:
    from hydra_proxy.upstream_errors import is_context_overflow, read_error_body

    assert is_context_overflow(status, read_error_body(json.dumps(body).encode())) is overflow


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"error": {"message": "Unsupported parameter: 'reasoning_effort' is not supported with this model.", "type": "invalid_request_error", "param": "reasoning_effort", "code": "unsupported_parameter"}}, "reasoning_effort"),
        ({"error": {"message": "Unrecognized request argument supplied: parallel_tool_calls", "type": "invalid_request_error"}}, "parallel_tool_calls"),
        ({"object": "error", "message": "[{'type': 'extra_forbidden', 'loc': ('body', 'thinking'), 'msg': 'Extra inputs are not permitted'}]"}, "thinking"),
        ({"error": {"message": "Unsupported value: 'temperature' does not support 0.2", "param": "temperature"}}, None),
        ({"error": {"message": "reasoning_effort must be one of low, medium, high"}}, None),
    ],
    ids=["openai-param", "openai-unrecognized", "vllm-extra", "not-droppable", "no-refusal"],
)  # fmt: skip
def test_which_refusals_name_a_droppable_field(body: dict[str, Any], param: str | None) -> None:
    from hydra_proxy.server.pipeline.refusals import refused_param
    from hydra_proxy.upstream_errors import read_error_body

    assert refused_param(400, read_error_body(json.dumps(body).encode())) == param
