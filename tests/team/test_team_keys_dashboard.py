"""The usage data scoped by key, through the proxy process: a member's named key (as the
Basic password, how scripts read it) sees only its own requests, the admin key everyone's;
a member cannot read /metrics, which names every key; `hydra-proxy usage --by key|team`
adds the ledger's rows up by name. The console in a browser: test_console_browser.py."""

from __future__ import annotations

import base64
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from hydra_proxy.mock import MockServer
from support.servers import PYTHON_DIR
from support.team_keys import ADMIN_KEY, call, cost, create, ledger_rows, messages, proxy, turn


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def basic(key: str) -> dict[str, str]:
    return {"authorization": "Basic " + base64.b64encode(f"me:{key}".encode()).decode()}


@pytest.fixture
def team_run(
    mock: MockServer, tmp_path: Path
) -> Iterator[tuple[str, str, dict[str, list[str]], int]]:
    """A proxy where alice made 2 requests and bob 1; yields (ledger, alice's secret, the
    request ids by key, the port)."""
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    alice = create(ledger, "alice", team="core")
    bob = create(ledger, "bob", team="ops")
    with proxy(mock, ledger, tmp_path) as server:
        ids: dict[str, list[str]] = {"alice": [], "bob": []}
        mock.script([turn(5, 10), turn(7, 3), turn(5, 10)])
        for name, secret in (("alice", alice), ("bob", bob), ("alice", alice)):
            reply = call(server.port, "POST", "/v1/messages", messages(), secret)
            assert reply.status == 200
            ids[name].append(reply.headers["x-request-id"])
        ledger_rows(ledger, "alice", 2)
        ledger_rows(ledger, "bob", 1)
        yield ledger, alice, ids, server.port


def test_data_scoped_by_key(team_run: tuple[str, str, dict[str, list[str]], int]) -> None:
    _, alice, ids, port = team_run
    mine = call(port, "GET", "/dashboard/data.json", headers=basic(alice))
    assert mine.status == 200
    doc = mine.json()
    assert doc["scope"] == "alice" and doc["records"] == 2
    assert {r["request_id"] for r in doc["latest"]} == set(ids["alice"])
    assert doc["total"]["cost_usd"] == pytest.approx(2 * cost("priced-a", 5, 10))
    everyone = call(port, "GET", "/dashboard/data.json", headers=basic(ADMIN_KEY)).json()
    assert everyone["scope"] is None and everyone["records"] == 3
    assert {r["key_name"] for r in everyone["latest"]} == {"alice", "bob"}
    assert call(port, "GET", "/dashboard/data.json", headers=basic("hk-nope")).status == 401
    assert call(port, "GET", "/dashboard/data.json").status == 401
    # /metrics names every key: the admin's only.
    assert call(port, "GET", "/metrics", key=alice).status == 403
    metrics = call(port, "GET", "/metrics", key=ADMIN_KEY)
    assert metrics.status == 200
    text = metrics.body.decode()
    assert 'hydra_key_requests_total{key="alice",status="200",team="core"} 2.0' in text
    assert 'hydra_key_requests_total{key="bob",status="200",team="ops"} 1.0' in text


def test_usage_by_key_and_team(team_run: tuple[str, str, dict[str, list[str]], int]) -> None:
    ledger = team_run[0]
    for by, expected in (("key", {"alice": 2, "bob": 1}), ("team", {"core": 2, "ops": 1})):
        done = subprocess.run(
            [sys.executable, "-m", "hydra_proxy", "usage", "--ledger", ledger, "--by", by,
             "--json"],
            capture_output=True, text=True, env={"PYTHONPATH": str(PYTHON_DIR)}, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        rows = orjson.loads(done.stdout)["rows"]
        assert {r["key"]: r["requests"] for r in rows} == expected
