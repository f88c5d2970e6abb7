"""Web search end to end on the mock upstream: a scripted ``web_search`` turn is rendered in
each wire's own form (checked against the recorded streams' shapes), and through the
proxy each client gets it in its own blocks: Claude Code's WebSearch request, routed by
`server_tools` to a Responses upstream, gets the search, its results and the citations;
a Codex request routed to an Anthropic upstream gets a ``web_search_call`` item and
``url_citation`` annotations."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
from test_web_search_routing import ASK, CLAUDE_SEARCH, FIXTURES, KEYS, SEARCH_ROUTE, config

from hydra_proxy.mock import MockServer
from support import anthropic_grammar, responses_grammar
from support.servers import ProxyServer

QUERY = "hydra proxy web search"
RESULTS = [
    {"url": "https://example.com/hydra", "title": "Hydra proxy"},
    {"url": "https://example.org/search", "title": "Web search through a proxy"},
]
TEXT = "Hydra translates web search between protocols."
TURN = {"web_search": {"query": QUERY, "results": RESULTS}, "text": TEXT}


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


def post(port: int, path: str, body: object, headers: dict[str, str]) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", path, json.dumps(body), {"content-type": "application/json", **headers})
    reply = conn.getresponse()
    return reply.status, reply.read()


def test_the_mock_speaks_web_search_in_the_responses_wire(mock: MockServer) -> None:
    mock.script([TURN])
    body = {"model": "gpt-5", "input": "q", "stream": True, "tools": [{"type": "web_search"}]}
    status, out = post(mock.port, "/v1/responses", body, {"authorization": "Bearer k"})
    assert status == 200
    response = responses_grammar.check(out)
    search, message = response["output"]
    assert search["type"] == "web_search_call" and search["action"]["query"] == QUERY
    assert [s["url"] for s in search["action"]["sources"]] == [r["url"] for r in RESULTS]
    annotations = message["content"][0]["annotations"]
    assert [(a["url"], a["title"]) for a in annotations] == [
        (r["url"], r["title"]) for r in RESULTS
    ]


def test_the_mock_speaks_web_search_in_the_anthropic_wire(mock: MockServer) -> None:
    mock.script([TURN])
    body = {
        "model": "claude-x",
        "max_tokens": 50,
        "stream": True,
        "messages": ASK,
        "tools": [CLAUDE_SEARCH],
    }
    status, out = post(mock.port, "/v1/messages", body, {"x-api-key": "k"})
    assert status == 200
    # The recorded stream's shapes: the same block types in the same order.
    recorded = (FIXTURES / "anthropic" / "vercel-web-search-citations.jsonl").read_text()
    recorded_types = [
        json.loads(line)["content_block"]["type"]
        for line in recorded.splitlines()
        if '"content_block_start"' in line
    ]
    events = [
        json.loads(line[6:]) for line in out.decode().splitlines() if line.startswith("data: ")
    ]
    types = [e["content_block"]["type"] for e in events if e["type"] == "content_block_start"]
    assert types == recorded_types[:3] == ["server_tool_use", "web_search_tool_result", "text"]


def test_claude_code_web_search_on_a_responses_upstream(
    tmp_path: Path, mock: MockServer, impl: str
) -> None:
    mock.script([TURN])
    path = config(tmp_path / "hydra.toml", mock.url, SEARCH_ROUTE)
    args = ("--config", str(path), "--provider", "chatonly")
    with ProxyServer(mock.url + "/v1", *args, impl=impl, env=KEYS) as proxy:
        client = anthropic.Anthropic(base_url=proxy.url, api_key="k", max_retries=0)
        with client.messages.stream(
            model="claude-haiku-4-5",
            max_tokens=100,
            messages=ASK,  # type: ignore[arg-type]
            tools=[CLAUDE_SEARCH],  # type: ignore[list-item]
        ) as stream:
            raw = b"".join(stream.response.iter_bytes())
    (sent,) = mock.requests()
    assert sent["path"] == "/v1/responses" and sent["body"]["tools"] == [{"type": "web_search"}]
    rebuilt = anthropic_grammar.check(raw)
    use, result, text = rebuilt.content
    assert use["type"] == "server_tool_use" and use["name"] == "web_search"
    assert use["input"] == {"query": QUERY}
    assert result["type"] == "web_search_tool_result" and result["tool_use_id"] == use["id"]
    assert [r["url"] for r in result["content"]] == [r["url"] for r in RESULTS]
    assert text["text"] == TEXT
    assert [(c["url"], c["title"]) for c in text["citations"]] == [
        (r["url"], r["title"]) for r in RESULTS
    ]


def test_codex_web_search_on_an_anthropic_upstream(
    tmp_path: Path, mock: MockServer, impl: str
) -> None:
    mock.script([TURN])
    codex: dict[str, Any] = json.loads(
        (FIXTURES / "codex" / "request-exec-first-turn.json").read_text()
    )
    route = '[[routes]]\nserver_tools = true\nprovider = "claude"\nmodel = "claude-sonnet-4-5"\n'
    path = config(tmp_path / "hydra.toml", mock.url, route)
    args = ("--config", str(path), "--provider", "chatonly")
    with ProxyServer(mock.url + "/v1", *args, impl=impl, env=KEYS) as proxy:
        status, out = post(proxy.port, "/v1/responses", codex, {"authorization": "Bearer k"})
    assert status == 200
    response = responses_grammar.check(out)
    search, message = response["output"]
    assert search["type"] == "web_search_call" and search["action"] == {
        "type": "search",
        "query": QUERY,
        "sources": [{"type": "url", "url": r["url"]} for r in RESULTS],
    }
    annotations = message["content"][0]["annotations"]
    assert [a["url"] for a in annotations] == [r["url"] for r in RESULTS]
    assert all(a["start_index"] == 0 and a["end_index"] == len(TEXT) for a in annotations)


def test_chat_web_search_options_on_a_responses_upstream(
    tmp_path: Path, mock: MockServer, impl: str
) -> None:
    mock.script([TURN])
    path = config(tmp_path / "hydra.toml", mock.url, SEARCH_ROUTE)
    args = ("--config", str(path), "--provider", "chatonly")
    body = {
        "model": "gpt-x",
        "stream": True,
        "messages": [{"role": "user", "content": "search"}],
        "web_search_options": {
            "user_location": {"type": "approximate", "approximate": {"country": "FR"}}
        },
    }
    with ProxyServer(mock.url + "/v1", *args, impl=impl, env=KEYS) as proxy:
        status, out = post(proxy.port, "/v1/chat/completions", body, {"authorization": "Bearer k"})
    assert status == 200
    (sent,) = mock.requests()
    assert sent["path"] == "/v1/responses"
    assert sent["body"]["tools"] == [
        {"type": "web_search", "user_location": {"type": "approximate", "country": "FR"}}
    ]
    content, annotations = "", []
    for line in out.decode().splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:]).get("choices", []):
                content += choice["delta"].get("content") or ""
                annotations += choice["delta"].get("annotations", [])
    assert content == TEXT
    assert [(a["url_citation"]["url"], a["url_citation"]["title"]) for a in annotations] == [
        (r["url"], r["title"]) for r in RESULTS
    ]


@pytest.fixture(scope="module")
def replaying() -> Iterator[MockServer]:
    with MockServer(fixtures=FIXTURES) as server:
        yield server


def test_recorded_responses_search_replayed_through_the_proxy_to_claude_code(
    tmp_path: Path, replaying: MockServer, impl: str
) -> None:
    """The mock replays the recorded gpt-5-mini search; Claude Code's request gets every
    search of it, with its sources and citations."""
    replaying.clear()
    replaying.script([{"replay": "responses/vercel-gpt5mini-web-search.jsonl"}])
    path = config(tmp_path / "hydra.toml", replaying.url, SEARCH_ROUTE)
    args = ("--config", str(path), "--provider", "chatonly")
    body = {
        "model": "claude-haiku-4-5",
        "max_tokens": 100,
        "stream": True,
        "messages": ASK,
        "tools": [CLAUDE_SEARCH],
    }
    with ProxyServer(replaying.url + "/v1", *args, impl=impl, env=KEYS) as proxy:
        status, out = post(proxy.port, "/v1/messages", body, {"x-api-key": "k"})
    assert status == 200
    recorded = [
        json.loads(line)
        for line in (FIXTURES / "responses" / "vercel-gpt5mini-web-search.jsonl")
        .read_text()
        .splitlines()
        if line.strip()
    ]
    searches = [
        r["item"]
        for r in recorded
        if r["type"] == "response.output_item.done" and r["item"]["type"] == "web_search_call"
    ]
    rebuilt = anthropic_grammar.check(out)
    assert rebuilt.complete
    uses = [b for b in rebuilt.content if b["type"] == "server_tool_use"]
    assert [u["id"] for u in uses] == [s["id"] for s in searches] and len(uses) == 6
    citations = [c for b in rebuilt.content if b["type"] == "text" for c in b.get("citations", [])]
    assert len(citations) == sum(r["type"].endswith("annotation.added") for r in recorded) == 12
