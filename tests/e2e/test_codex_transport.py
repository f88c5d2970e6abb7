"""Codex's built-in provider through the proxy (``openai_base_url``, what a user who only
changes the URL runs): it first asks for the Responses WebSocket transport
(``GET /v1/responses`` with ``Upgrade: websocket``). The proxy answers 426 Upgrade Required,
once, and logs it; Codex goes over HTTP at once instead of retrying the upgrade (five
reconnects, seconds each, against a bare refusal)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_codex_cli import explained

from hydra_proxy.mock import MockServer
from support.codex_cli import require_codex, run_codex
from support.servers import ProxyServer

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def codex() -> Path:
    return require_codex()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def test_the_websocket_upgrade_is_refused_once_with_426(codex: Path, mock: MockServer) -> None:
    mock.clear()
    mock.script([{"text": "hello through HTTP"}])
    with ProxyServer(mock.url + "/v1", "--log-level", "info") as proxy:
        run = run_codex(
            codex, "say hello", proxy.url + "/v1", builtin_provider=True,
            extra_config=['web_search="disabled"'],
        )  # fmt: skip
        log = proxy.log_text()
    with explained(run, mock):
        assert run.returncode == 0 and run.messages() == ["hello through HTTP"]
        # no reconnect attempts and no fallback warning: the 426 is understood at once
        errors = [e for e in run.events if e.get("type") == "error"]
        assert errors == []
        upgrades = [line for line in log.splitlines() if "GET /v1/responses" in line]
        assert len(upgrades) == 1 and " 426 " in upgrades[0] and "websocket=refused" in upgrades[0]
        assert log.count("POST /v1/responses 200") == 1
