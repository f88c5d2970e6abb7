"""The model listings through the running proxy: the names a client may ask for (routes'
names and aliases) in each client's shape (OpenAI's, Anthropic's with what model answers,
Codex's catalog with its window and reasoning levels), ``GET /v1/models/{id}``, routing by
an alias, and the hint for a path without ``/v1``."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hydra_proxy.config.presets import presets
from hydra_proxy.mock import MockServer
from hydra_proxy.server.app import ROUTES
from support.servers import ProxyServer

DEEPSEEK = presets()["deepseek"]
CONFIG = """
[providers.ds]
preset = "deepseek"
base_url = "{base}"
api_key_env = "OPENAI_API_KEY"

[[routes]]
match = "claude-*"
provider = "ds"
model = "deepseek-chat"
aliases = ["claude-sonnet-4-5", "claude-haiku-4-5"]

[[routes]]
match = "deepseek-reasoner"
provider = "ds"
"""
CLAUDE_NAMES = ["claude-haiku-4-5", "claude-sonnet-4-5"]


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(scope="module")
def proxy(mock: MockServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyServer]:
    config: Path = tmp_path_factory.mktemp("listing") / "hydra.toml"
    config.write_text(CONFIG.format(base=mock.url + "/v1"))
    with ProxyServer(mock.url + "/v1", "--config", str(config)) as server:
        yield server


def call(
    proxy: ProxyServer, method: str, path: str, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    body = json.dumps({"model": "x", "messages": []}) if method == "POST" else None
    conn.request(method, path, body, {"content-type": "application/json", **(headers or {})})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, json.loads(data) if data else None


def test_openai_listing_names_routes_and_aliases(proxy: ProxyServer) -> None:
    status, body = call(proxy, "GET", "/v1/models")
    assert status == 200 and body["object"] == "list"
    rows = {row["id"]: row for row in body["data"]}
    assert set(CLAUDE_NAMES) <= set(rows) and "deepseek-reasoner" in rows
    for name in [*CLAUDE_NAMES, "deepseek-reasoner"]:
        assert rows[name]["owned_by"] == "ds"
        assert rows[name]["context_window"] == DEEPSEEK["context_window"]
        assert rows[name]["max_output_tokens"] == DEEPSEEK["max_output"]


def test_anthropic_discovery_lists_claude_names_with_the_model_that_answers(
    proxy: ProxyServer,
) -> None:
    status, body = call(proxy, "GET", "/v1/models", {"anthropic-version": "2023-06-01"})
    assert status == 200
    # what Claude Code's discovery keeps: ids that contain "claude"
    kept = [m for m in body["data"] if "claude" in m["id"]]
    assert [m["id"] for m in kept] == CLAUDE_NAMES
    for m in kept:
        assert m["type"] == "model" and m["display_name"] == "deepseek-chat via hydra"
        assert m["max_input_tokens"] == DEEPSEEK["context_window"]
    assert body["first_id"] == body["data"][0]["id"] and body["has_more"] is False


def test_codex_catalog(proxy: ProxyServer) -> None:
    status, body = call(proxy, "GET", "/v1/models?client_version=0.171.0")
    assert status == 200 and set(body) == {"models"}
    models = {m["slug"]: m for m in body["models"]}
    assert set(CLAUDE_NAMES) <= set(models)
    entry = models["deepseek-reasoner"]
    # what Codex 0.171 refuses the whole catalog without
    for key in ("display_name", "supported_reasoning_levels", "shell_type", "visibility",
                "supported_in_api", "priority", "experimental_supported_tools",
                "truncation_policy", "support_verbosity"):  # fmt: skip
        assert key in entry, key
    assert entry["base_instructions"].strip()  # Codex needs instructions for a model
    assert entry["context_window"] == DEEPSEEK["context_window"]
    assert entry["display_name"] == "deepseek-reasoner via hydra"
    assert entry["input_modalities"] == ["text"]  # the preset reads no images
    assert sorted({m["priority"] for m in body["models"]}) == list(range(len(models)))


@pytest.mark.parametrize("anthropic", [False, True], ids=["openai", "anthropic"])
def test_retrieve_one_model(proxy: ProxyServer, anthropic: bool) -> None:
    headers = {"anthropic-version": "2023-06-01"} if anthropic else {}
    status, body = call(proxy, "GET", "/v1/models/claude-sonnet-4-5", headers)
    assert status == 200
    assert body["id"] == "claude-sonnet-4-5"
    assert body["type" if anthropic else "object"] == "model"
    status, body = call(proxy, "GET", "/v1/models/gpt-4o", headers)
    assert status == 404
    error = body["error"]
    assert "claude-sonnet-4-5" in error["message"]
    if anthropic:
        assert error["type"] == "not_found_error"
    else:  # OpenAI's code for a model that does not exist
        assert error["code"] == "model_not_found"


def test_an_alias_routes_to_its_route(proxy: ProxyServer, mock: MockServer) -> None:
    mock.clear()
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
    body = {"model": "claude-haiku-4-5", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}  # fmt: skip
    conn.request("POST", "/v1/messages", json.dumps(body), {"content-type": "application/json"})
    response = conn.getresponse()
    assert response.status == 200, response.read()
    (sent,) = [r["body"] for r in mock.requests() if r["path"] == "/v1/chat/completions"]
    assert sent["model"] == "deepseek-chat"


V1_PATHS = sorted({(m, p) for m, p in ROUTES if p.startswith("/v1/")})


@pytest.mark.parametrize(("method", "path"), V1_PATHS, ids=[f"{m} {p}" for m, p in V1_PATHS])
def test_a_path_without_v1_says_to_add_it(proxy: ProxyServer, method: str, path: str) -> None:
    short = path.removeprefix("/v1")
    status, body = call(proxy, method, short)
    assert status == 404
    if method == "HEAD":
        return  # no body to say it in
    message = body["error"]["message"] if "error" in body else body["message"]
    assert f"/v1{short}" in message and "Add /v1 to the base URL" in message
