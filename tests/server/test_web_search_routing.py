"""Web search routing: the `server_tools` route trait sends a request carrying web search
(Claude Code's `web_search_*` server tool, Codex's `web_search`, Chat's
`web_search_options`) to an upstream that runs it, in that upstream's form; an upstream
that cannot gets no request, and the client a 400 in its own protocol naming the tool and
the setting."""

from __future__ import annotations

import http.client
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from hydra_proxy import cli
from hydra_proxy.canonical.web_search import (
    WEB_SEARCH_TOOL,
    refusal,
    runs_chat_web_search,
    runs_web_search,
)
from hydra_proxy.chat.request.writer import ChatTarget, chat_request_from_messages
from hydra_proxy.config import environment, load
from hydra_proxy.config.routes import Route, request_traits
from hydra_proxy.gemini.request.writer import gemini_request_from_messages, gemini_target
from hydra_proxy.mock import MockServer
from hydra_proxy.responses.request.writer import ResponsesTarget, responses_request_from_messages
from support.servers import ProxyServer

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
# Claude Code's WebSearch sends Anthropic's tool as it is, with its use limit.
CLAUDE_SEARCH = {"type": "web_search_20250305", "name": "web_search", "max_uses": 8}
ASK = [{"role": "user", "content": "Perform a web search for the query: hydra proxy"}]
KEYS = {"RESP_KEY": "sk-resp", "ANT_KEY": "sk-ant"}


def canonical(**extra: Any) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 100, "messages": ASK, "tools": [CLAUDE_SEARCH], **extra}


# -- the trait


def test_the_trait_is_set_by_the_canonical_tool_only() -> None:
    assert request_traits(canonical()).server_tools
    assert not request_traits(canonical(tools=[{"name": "f", "input_schema": {}}])).server_tools
    assert not request_traits({"model": "m", "messages": ASK}).server_tools


def test_a_server_tools_route_claims_only_search_requests() -> None:
    route = Route(match="*", provider="search", server_tools=True)
    assert route.applies(request_traits(canonical())) and route.conditional
    assert not route.applies(request_traits({"model": "m", "messages": ASK}))


# -- each upstream's form


def test_responses_upstream_gets_its_web_search_tool_and_the_sources() -> None:
    body = canonical(
        tools=[
            {"name": "f", "input_schema": {"type": "object"}},
            {**CLAUDE_SEARCH, "allowed_domains": ["example.com"]},
        ],
        tool_choice={"type": "tool", "name": "web_search"},
    )
    got = responses_request_from_messages(body, ResponsesTarget(model="gpt-5"), stream=True)
    assert got["tools"][0]["type"] == "function"
    assert got["tools"][1] == {
        "type": "web_search",
        "filters": {"allowed_domains": ["example.com"]},
    }
    assert got["tool_choice"] == "required"
    assert "web_search_call.action.sources" in got["include"]


def test_gemini_upstream_gets_google_search_grounding() -> None:
    got = gemini_request_from_messages(canonical(), gemini_target("gemini-2.5-flash"))
    assert got["tools"] == [{"google_search": {}}]


def test_openrouter_gets_its_web_plugin() -> None:
    got = chat_request_from_messages(canonical(), ChatTarget(model="x"), stream=True)
    assert got["plugins"] == [{"id": "web", "max_results": 8}] and "tools" not in got


def test_the_refusal_names_the_tool_and_the_setting() -> None:
    for client, form in (
        ("anthropic", "web_search server tool"),
        ("responses", "web_search tool"),
        ("chat", "web_search_options"),
    ):
        error = refusal(client, "deepseek", "chat")
        assert form in error.message and "server_tools = true" in error.message
        assert error.status == 400 and "deepseek" in error.message
    assert 'web_search = "disabled"' in refusal("responses", "d", "chat").message


# -- end to end


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


def config(path: Path, url: str, routes: str = "") -> Path:
    path.write_text(
        f"""
[providers.chatonly]
kind = "chat"
base_url = "{url}/v1"
api_key_env = "OPENAI_API_KEY"

[providers.search]
kind = "responses"
base_url = "{url}/v1"
api_key_env = "RESP_KEY"

[providers.claude]
kind = "anthropic"
base_url = "{url}"
api_key_env = "ANT_KEY"

{routes}
""",
        encoding="utf-8",
    )
    return path


SEARCH_ROUTE = """
[[routes]]
name = "search"
server_tools = true
provider = "search"
model = "gpt-5-mini"
"""


@pytest.fixture
def unrouted(tmp_path: Path, mock: MockServer) -> Iterator[ProxyServer]:
    args = ("--config", str(config(tmp_path / "hydra.toml", mock.url)), "--provider", "chatonly")
    with ProxyServer(mock.url + "/v1", *args, env=KEYS) as proxy:
        yield proxy


@pytest.fixture
def routed(tmp_path: Path, mock: MockServer) -> Iterator[ProxyServer]:
    path = config(tmp_path / "hydra.toml", mock.url, SEARCH_ROUTE)
    with ProxyServer(
        mock.url + "/v1", "--config", str(path), "--provider", "chatonly", env=KEYS
    ) as p:
        yield p


def test_claude_code_search_without_a_route_is_a_400_naming_the_setting(
    unrouted: ProxyServer, mock: MockServer
) -> None:
    client = anthropic.Anthropic(base_url=unrouted.url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(
            model="claude-haiku-4-5", max_tokens=50, messages=ASK, tools=[CLAUDE_SEARCH]
        )  # type: ignore[list-item]
    body: Any = caught.value.body
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert "server_tools = true" in body["error"]["message"]
    assert "WebSearch" in body["error"]["message"]
    assert mock.requests() == []


def test_chat_web_search_options_without_a_route_is_a_400(
    unrouted: ProxyServer, mock: MockServer
) -> None:
    client = openai.OpenAI(base_url=unrouted.url + "/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="gpt-x", messages=[{"role": "user", "content": "hi"}], web_search_options={}
        )
    body: Any = caught.value.body
    assert "web_search_options" in body["message"] and "server_tools" in body["message"]
    assert body["param"] == "web_search_options"
    assert mock.requests() == []


def test_claude_code_search_goes_to_the_search_route(routed: ProxyServer, mock: MockServer) -> None:
    client = anthropic.Anthropic(base_url=routed.url, api_key="k", max_retries=0)
    client.messages.create(
        model="claude-haiku-4-5", max_tokens=50, messages=ASK, tools=[CLAUDE_SEARCH]
    )  # type: ignore[list-item]
    # A request without search stays on the default provider.
    client.messages.create(model="claude-haiku-4-5", max_tokens=50, messages=ASK)
    first, second = mock.requests()
    assert first["path"] == "/v1/responses" and first["body"]["model"] == "gpt-5-mini"
    assert first["body"]["tools"] == [{"type": "web_search"}]
    assert second["path"] == "/v1/chat/completions"


def test_codex_search_on_claude_carries_the_server_tool(tmp_path: Path, mock: MockServer) -> None:
    codex = json.loads((FIXTURES / "codex" / "request-exec-first-turn.json").read_text())
    route = '[[routes]]\nserver_tools = true\nprovider = "claude"\nmodel = "claude-sonnet-4-5"\n'
    path = config(tmp_path / "hydra.toml", mock.url, route)
    with ProxyServer(
        mock.url + "/v1", "--config", str(path), "--provider", "chatonly", env=KEYS
    ) as proxy:
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
        conn.request(
            "POST", "/v1/responses", json.dumps(codex), {"content-type": "application/json"}
        )
        reply = conn.getresponse()
        assert reply.status == 200 and b"response.completed" in reply.read()
    (sent,) = mock.requests()
    assert sent["path"] == "/v1/messages"
    assert [t for t in sent["body"]["tools"] if "input_schema" not in t] == [WEB_SEARCH_TOOL]


# -- the documented example


def test_the_documented_example_routes_searches_and_only_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = (Path(__file__).resolve().parent.parent.parent / "docs" / "CONFIG.md").read_text("utf-8")
    section = doc[doc.index("\n### Web search\n") :]
    example = section[section.index("```toml\n") + 8 : section.index("```\n", 20)]
    for name in list(os.environ):
        if name.startswith("HYDRA_") or name.endswith("_API_KEY"):
            monkeypatch.delenv(name)
    for var in ("OPENAI_API_KEY", "DEEPSEEK_API_KEY"):
        monkeypatch.setenv(var, f"sk-{var.lower()}-0000000000")
    path = tmp_path / "hydra.toml"
    path.write_text(example, encoding="utf-8")
    settings = load({"config": str(path)}, environment(dotenv=tmp_path / "none"))
    assert cli.require_keys(settings) == []

    def chain(request: dict[str, Any], client: str = "anthropic") -> list[tuple[str, str, str]]:
        decision = settings.decide(request_traits(request, client=client))
        assert decision is not None
        return [(a.provider.name, a.provider.kind, a.model) for a in decision.attempts]

    plain = json.loads((FIXTURES / "claude-code" / "request-plain.json").read_text())["body"]
    assert chain(plain)[0][0] == "deepseek"
    assert chain(canonical()) == [("openai-search", "responses", "gpt-5-mini")]


def test_blocked_domains_have_no_responses_form_and_are_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    body = canonical(tools=[{**CLAUDE_SEARCH, "blocked_domains": ["spam.example"]}])
    with caplog.at_level("INFO", logger="hydra_proxy.canonical.web_search"):
        got = responses_request_from_messages(body, ResponsesTarget(model="gpt-5"), stream=True)
    assert got["tools"] == [{"type": "web_search"}]
    assert any("blocked_domains" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("kind", "url", "runs"),
    [
        ("anthropic", "https://api.anthropic.com", True),
        ("responses", "https://api.openai.com/v1", True),
        ("gemini", "https://generativelanguage.googleapis.com/v1beta", True),
        ("chat", "https://openrouter.ai/api/v1", True),
        ("chat", "https://api.deepseek.com/v1", False),
        ("chat", "http://127.0.0.1:8000/openrouter.ai/v1", False),  # the host decides
    ],
)
def test_who_runs_web_search(kind: str, url: str, runs: bool) -> None:
    assert runs_web_search(kind, url) is runs


def test_chat_passthrough_keeps_search_for_openai_and_openrouter_only() -> None:
    assert runs_chat_web_search("https://api.openai.com/v1")
    assert runs_chat_web_search("https://openrouter.ai/api/v1")
    assert not runs_chat_web_search("https://api.deepseek.com/v1")
