"""Remote compaction through the running proxy, on every upstream kind (`DIALECTS`): a
Responses request ending with ``compaction_trigger`` (streamed or not) and
``POST /v1/responses/compact`` are answered with exactly one ``compaction`` item that the
route's model wrote; a replayed item reaches the model as its summary; an item the proxy
did not make is a 400, except on an OpenAI Responses upstream, which gets it as it is.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest

from hydra_proxy.config.presets import presets
from hydra_proxy.mock import MockServer
from hydra_proxy.responses.compaction import COMPACTION_PREFIX, SUMMARY_REQUEST
from hydra_proxy.server.pipeline.upstream_kinds import DIALECTS
from support.servers import ProxyServer

MODEL = "gpt-5.1-codex"
SUMMARY = "SUMMARY: the user wants ünïcödé kept; ran `ls`, saw a.txt."
# where each kind's wire sits on the mock (the base URL its preset would have)
MOCK_BASE = {"chat": "/v1", "responses": "/v1", "anthropic": "", "gemini": "/v1beta"}
KINDS = sorted(DIALECTS)
UPSTREAM_PATHS = ("/v1/chat/completions", "/v1/messages", "/v1/responses", "/v1beta/models/")


def preset_of(kind: str) -> str:
    """The first shipped preset of this kind."""
    return next(name for name, row in presets().items() if row["kind"] == kind)


HISTORY: list[dict[str, Any]] = [
    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
    {"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": '{"cmd":"ls"}'},
    {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
]  # fmt: skip
TOOLS = [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(scope="module", params=KINDS)
def proxy(request: pytest.FixtureRequest, mock: MockServer) -> Iterator[tuple[str, ProxyServer]]:
    kind = request.param
    env = {"ANTHROPIC_API_KEY": "sk-ant-x", "GEMINI_API_KEY": "g-x"}
    base = mock.url + MOCK_BASE[kind]
    with ProxyServer(base, "--provider", preset_of(kind), env=env) as server:
        yield kind, server


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


def post(proxy: ProxyServer, path: str, body: dict[str, Any]) -> tuple[int, str, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, response.getheader("content-type") or "", data


def upstream_bodies(mock: MockServer) -> list[dict[str, Any]]:
    return [r["body"] for r in mock.requests() if r["path"].startswith(UPSTREAM_PATHS)]


def sse_events(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in data.decode().splitlines() if line.startswith("data:")]


def compaction_request(stream: bool) -> dict[str, Any]:
    return {
        "model": MODEL,
        "input": [*HISTORY, {"type": "compaction_trigger"}],
        "tools": TOOLS,
        "stream": stream,
        "store": False,
    }


def compact(proxy: ProxyServer, mock: MockServer) -> dict[str, Any]:
    """A compaction through /v1/responses/compact: the new history's compaction item."""
    mock.script([{"text": SUMMARY, "usage": {"prompt_tokens": 70, "completion_tokens": 20}}])
    body = {"model": MODEL, "input": HISTORY, "instructions": "Be brief.", "tools": TOOLS}
    status, _, data = post(proxy, "/v1/responses/compact", body)
    assert status == 200, data
    output = json.loads(data)["output"]
    # the user's own messages are kept, the compaction item follows them
    assert [i.get("role", i["type"]) for i in output] == ["user", "compaction"]
    return dict(output[-1])


def test_compact_endpoint_answers_the_new_history(
    proxy: tuple[str, ProxyServer], mock: MockServer
) -> None:
    _, server = proxy
    item = compact(server, mock)
    assert item["encrypted_content"].startswith(COMPACTION_PREFIX)
    assert item["id"].startswith("cmp_")
    (sent,) = upstream_bodies(mock)
    assert SUMMARY_REQUEST in json.dumps(sent, ensure_ascii=False)  # the route's model wrote it


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_compaction_trigger_is_answered_with_one_compaction_item(
    proxy: tuple[str, ProxyServer], mock: MockServer, stream: bool
) -> None:
    kind, server = proxy
    mock.script([{"text": SUMMARY, "usage": {"prompt_tokens": 70, "completion_tokens": 20}}])
    status, content_type, data = post(server, "/v1/responses", compaction_request(stream))
    assert status == 200, data
    if kind == "responses":  # OpenAI compacts by itself: the request goes as it is
        (sent,) = upstream_bodies(mock)
        assert sent["input"] == compaction_request(stream)["input"]
        return
    if stream:
        assert content_type.startswith("text/event-stream")
        events = sse_events(data)
        assert [e["type"] for e in events] == [
            "response.created",
            "response.output_item.added",
            "response.output_item.done",
            "response.completed",
        ]
        assert [e["sequence_number"] for e in events] == [0, 1, 2, 3]
        response = events[-1]["response"]
        assert events[2]["item"] == response["output"][0]
    else:
        response = json.loads(data)
    assert response["status"] == "completed"
    (item,) = response["output"]
    assert item["type"] == "compaction"
    assert item["encrypted_content"].startswith(COMPACTION_PREFIX)
    assert SUMMARY not in item["encrypted_content"]  # carried, not shown as text
    assert response["usage"]["input_tokens"] == 70 and response["usage"]["output_tokens"] == 20
    (sent,) = upstream_bodies(mock)
    assert "stream" not in sent or sent["stream"] is False or kind == "gemini"
    assert SUMMARY_REQUEST in json.dumps(sent, ensure_ascii=False)
    assert "compaction_trigger" not in json.dumps(sent)


def test_a_replayed_compaction_is_the_summary_the_model_reads(
    proxy: tuple[str, ProxyServer], mock: MockServer
) -> None:
    _, server = proxy
    item = compact(server, mock)
    mock.clear()
    mock.script([{"text": "ok"}])
    body = {
        "model": MODEL,
        "input": [
            HISTORY[1],
            item,
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go on"}]},
        ],
        "stream": False,
        "store": False,
    }  # fmt: skip
    status, _, data = post(server, "/v1/responses", body)
    assert status == 200, data
    (sent,) = upstream_bodies(mock)
    text = json.dumps(sent, ensure_ascii=False)
    assert SUMMARY in text and COMPACTION_PREFIX not in text


@pytest.mark.parametrize(
    "encrypted",
    ["gAAAAB-openai-opaque-compaction", "TAMPERED"],
    ids=["openai-item", "tampered-carrier"],
)
def test_a_compaction_item_the_proxy_did_not_make(
    proxy: tuple[str, ProxyServer], mock: MockServer, encrypted: str
) -> None:
    kind, server = proxy
    if encrypted == "TAMPERED":
        good = compact(server, mock)["encrypted_content"]
        encrypted = good[:-3] + ("AAA" if not good.endswith("AAA") else "BBB")
        mock.clear()
    mock.script([{"text": "ok"}])
    item = {"type": "compaction", "id": "cmp_1", "encrypted_content": encrypted}
    body = {"model": MODEL, "input": [HISTORY[1], item], "stream": False, "store": False}
    status, _, data = post(server, "/v1/responses", body)
    if kind == "responses" and not encrypted.startswith(COMPACTION_PREFIX):
        assert status == 200, data  # OpenAI's own item goes to OpenAI untouched
        (sent,) = upstream_bodies(mock)
        assert sent["input"][1] == item
        return
    assert status == 400, data
    error = json.loads(data)["error"]
    assert error["type"] == "invalid_request_error"
    assert "compaction" in error["message"] and error["param"].startswith("input")
    assert upstream_bodies(mock) == []
