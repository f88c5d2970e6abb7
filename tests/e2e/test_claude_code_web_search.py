"""Claude Code's WebSearch through the proxy, end to end (harness in claude_code.py).

The main conversation runs on a Chat upstream that cannot search; its model calls
WebSearch, and Claude Code runs it as a request of its own carrying Anthropic's
``web_search`` server tool. With a `server_tools` route that request goes to a Responses
upstream (the mock, answering with a scripted search), and Claude Code gets the search,
its results and the citations in its own blocks: the links reach the model in the tool
result, and the final answer is shown. Without such a route, the error Claude Code shows
names the setting.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_web_search_routing import KEYS, SEARCH_ROUTE, config

from hydra_proxy.mock import MockServer
from support.claude_code import explained, require_claude, run_claude
from support.servers import ProxyServer

pytestmark = pytest.mark.e2e

TAG = "[hydra-e2e-search]"
QUERY = f"{TAG} hydra proxy release notes"
PROMPT = f"{TAG} Use the WebSearch tool to search for: {QUERY}. Then tell me what you found."
CALL_ID = "toolu_hydra_search_1"
RESULTS = [
    {"url": "https://example.com/hydra-release", "title": "Hydra proxy release notes"},
    {"url": "https://example.org/hydra-search", "title": "Searching through hydra"},
]
SEARCH_TEXT = "Hydra proxy 1.0 translates web search between protocols."
FINAL = "FINAL-ANSWER-SEARCH: the release notes are at example.com."
CHAT_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"


def search_call_turn() -> dict[str, Any]:
    return {
        "tool_calls": [{"id": CALL_ID, "name": "WebSearch", "arguments": {"query": QUERY}}],
        "match": {"has_tools": True, "contains": PROMPT.split(".")[0]},
    }


def search_turn() -> dict[str, Any]:
    # Only the search request carries the Responses web_search tool.
    return {
        "web_search": {"query": QUERY, "results": RESULTS},
        "text": SEARCH_TEXT,
        "match": {"contains": '"type":"web_search"'},
    }


def final_turn() -> dict[str, Any]:
    return {"text": FINAL, "match": {"contains": [TAG, RESULTS[0]["url"]]}}


@pytest.fixture(scope="module")
def claude() -> Path:
    return require_claude()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


def scripted(mock: MockServer, path: str) -> list[dict[str, Any]]:
    return [r for r in mock.requests() if r["path"] == path and r.get("reply") == "script"]


def test_web_search_on_a_search_route(
    claude: Path, mock: MockServer, impl: str, tmp_path: Path
) -> None:
    path = config(tmp_path / "hydra.toml", mock.url, SEARCH_ROUTE)
    args = ("--config", str(path), "--provider", "chatonly")
    with ProxyServer(mock.url + "/v1", *args, impl=impl, env=KEYS) as proxy:
        mock.script([search_call_turn(), search_turn(), final_turn()])
        run = run_claude(claude, PROMPT, proxy.url, allowed_tools=("WebSearch",))
        with explained(run, proxy, mock):
            assert not run.timed_out and run.returncode == 0
            result = run.result()
            assert result.get("is_error") is False and FINAL in result.get("result", ""), result
            assert mock.pending() == 0, "not every scripted turn was requested"
            (search,) = scripted(mock, RESPONSES_PATH)
            # Claude Code's server tool, in the Responses upstream's form.
            assert {"type": "web_search"} in search["body"]["tools"]
            assert QUERY in json.dumps(search["body"]["input"], ensure_ascii=False)
            # The results Claude Code read from the translated blocks reached the model.
            results = run.blocks("user", "tool_result")
            assert [r["tool_use_id"] for r in results] == [CALL_ID]
            shown = json.dumps(results[0]["content"], ensure_ascii=False)
            # (A Responses search names its pages by URL only: the titles are empty.)
            for page in RESULTS:
                assert page["url"] in shown, shown
            assert SEARCH_TEXT in shown, shown
            assert not results[0].get("is_error")
            _, last = scripted(mock, CHAT_PATH)
            assert RESULTS[0]["url"] in json.dumps(last["body"]["messages"])


def test_web_search_without_a_route_names_the_setting(
    claude: Path, mock: MockServer, impl: str, tmp_path: Path
) -> None:
    path = config(tmp_path / "hydra.toml", mock.url)
    args = ("--config", str(path), "--provider", "chatonly")
    final = {"text": FINAL, "match": {"contains": [TAG, "server_tools"]}}
    with ProxyServer(mock.url + "/v1", *args, impl=impl, env=KEYS) as proxy:
        mock.script([search_call_turn(), final])
        run = run_claude(claude, PROMPT, proxy.url, allowed_tools=("WebSearch",))
        with explained(run, proxy, mock):
            assert not run.timed_out
            assert scripted(mock, RESPONSES_PATH) == []
            # The search's error, as Claude Code shows it to the model and the user.
            results = run.blocks("user", "tool_result")
            assert [r["tool_use_id"] for r in results] == [CALL_ID]
            shown = json.dumps(results[0]["content"], ensure_ascii=False)
            assert "server_tools = true" in shown, shown
