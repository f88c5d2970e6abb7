"""Codex's web search through the proxy, end to end (harness in codex_cli.py).

Codex offers its ``web_search`` tool on every request. Routed by `server_tools` to an
Anthropic upstream (the mock, answering with a scripted search), the search comes back
as a ``web_search_call`` item Codex shows as a search with its query, then the answer.
On an upstream that cannot search, Codex's turn is served without the tool, and the proxy
says once in its log which route setting keeps it.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_codex_cli import explained
from test_web_search_routing import KEYS, config

from hydra_proxy.mock import MockServer
from support.codex_cli import require_codex, run_codex
from support.servers import ProxyServer

pytestmark = pytest.mark.e2e

TAG = f"[hydra-codex-search-{secrets.token_hex(4)}]"
PROMPT = f"{TAG} Search the web for the hydra proxy release notes and tell me what they say."
QUERY = "hydra proxy release notes"
RESULTS = [{"url": "https://example.com/hydra-release", "title": "Hydra proxy release notes"}]
FINAL = "FINAL-ANSWER: hydra proxy 1.0 translates web search."
ROUTE = '[[routes]]\nserver_tools = true\nprovider = "claude"\nmodel = "claude-sonnet-4-5"\n'


@pytest.fixture(scope="module")
def codex() -> Path:
    return require_codex()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def search_turn() -> dict[str, Any]:
    return {
        "web_search": {"query": QUERY, "results": RESULTS},
        "text": FINAL,
        "match": {"contains": [TAG, '"type":"web_search_20250305"']},
    }


def test_codex_search_on_an_anthropic_route(codex: Path, mock: MockServer, tmp_path: Path) -> None:
    mock.clear()
    path = config(tmp_path / "hydra.toml", mock.url, ROUTE)
    args = ("--config", str(path), "--provider", "chatonly")
    with ProxyServer(mock.url + "/v1", *args, env=KEYS) as proxy:
        mock.script([search_turn()])
        run = run_codex(codex, PROMPT, proxy.url + "/v1")
        with explained(run, mock):
            assert not run.timed_out and run.returncode == 0, run.failure()
            assert mock.pending() == 0, "the search turn was not requested"
            (sent,) = [r for r in mock.requests() if r.get("reply") == "script"]
            assert sent["path"] == "/v1/messages"
            assert {"type": "web_search_20250305", "name": "web_search"} in sent["body"]["tools"]
            # Codex shows the search the provider ran, with its query, then the answer.
            searches = run.items("web_search")
            assert searches and QUERY in json.dumps(searches), run.events
            assert run.messages() == [FINAL]


def test_codex_without_a_search_route_is_served_without_the_tool_and_told_once(
    codex: Path, mock: MockServer, tmp_path: Path
) -> None:
    # Codex offers web_search on every turn: on a Chat upstream that cannot search, the
    # turn is served without that tool (refusing would stop every Codex turn there), and
    # the proxy's log says once what was left out and which setting keeps it.
    mock.clear()
    path = config(tmp_path / "hydra.toml", mock.url)
    args = ("--config", str(path), "--provider", "chatonly")
    answer = "FINAL-ANSWER: answered without searching."
    with ProxyServer(mock.url + "/v1", *args, env=KEYS) as proxy:
        mock.script([{"text": answer, "match": {"contains": [TAG]}}])
        run = run_codex(codex, PROMPT, proxy.url + "/v1", timeout=60)
        with explained(run, mock):
            assert not run.timed_out and run.returncode == 0, run.failure()
            assert run.messages() == [answer]
            sent = [r for r in mock.requests() if r.get("reply") == "script"]
            assert sent and all(
                "web_search" not in json.dumps(r["body"].get("tools", [])) for r in sent
            )
            log = proxy.log_tail()
            assert log.count("the web_search tool was left out") == 1, log
            assert "server_tools = true" in log
