"""Budgets of named keys, end to end on the proxy process and the embedded mock, on SQLite
and on a real PostgreSQL server: exact to the cent over a scripted run at known prices
(a stream cut mid-way, a fallback, a client that leaves, a non-streamed reply), the
ledger's rows agreeing with what the budget counted, concurrent requests racing for the
last cent, and a spend that survives a restart (seeded from the ledger)."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import pytest

from hydra_proxy.mock import MockServer
from hydra_proxy.tokens import estimate_input_tokens
from support.postgres_server import postgres_server, wait_ready, why_unavailable
from support.team_keys import (
    call,
    chat,
    cost,
    create,
    ledger_rows,
    messages,
    proxy,
    responses,
    turn,
)

_pg_missing = why_unavailable()
try:
    import psycopg  # noqa: F401
except ImportError:  # pragma: no cover - the extra is installed by tests/run
    _pg_missing = _pg_missing or "psycopg not installed (extra 'postgres')"


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


@pytest.fixture(scope="module")
def pg_server() -> Iterator[str]:
    if _pg_missing:
        pytest.skip(_pg_missing)
    with postgres_server() as url:
        wait_ready(url)
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:{tmp_path / 'usage.sqlite3'}"
        return
    import psycopg

    server: str = request.getfixturevalue("pg_server")
    name = f"k{abs(hash(tmp_path))}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield server.rsplit("/", 1)[0] + "/" + name
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


SPENT = re.compile(r"\$(\d+\.\d\d) spent")


def spent_in(message: str) -> float:
    """The spend a refusal names."""
    found = SPENT.search(message)
    assert found is not None, message
    return float(found.group(1))


def reservation(model: str, body: dict[str, Any]) -> float:
    """What the proxy reserves for an Anthropic request: its input estimate plus its
    max_tokens, at the model's price."""
    return cost(model, estimate_input_tokens(body), int(body["max_tokens"]))


def test_budget_exact_to_the_cent(mock: MockServer, ledger: str, tmp_path: Path) -> None:
    budget = 2.50
    secret = create(ledger, "alice", budget=budget, team="core")
    body = messages()
    with proxy(mock, ledger, tmp_path) as server:
        port = server.port
        expected = 0.0
        # 1. A whole stream: its reported usage.
        mock.script([turn(5, 10)])
        assert call(port, "POST", "/v1/messages", body, secret).status == 200
        expected += cost("priced-a", 5, 10)
        # 2. Not streamed.
        mock.script([turn(7, 3)])
        assert call(port, "POST", "/v1/messages", messages(stream=False), secret).status == 200
        expected += cost("priced-a", 7, 3)
        # 3. A fallback: priced-a answers 503, priced-b (twice the price) serves it.
        mock.script([{"error": {"status": 503}}, turn(5, 10)])
        fell = call(port, "POST", "/v1/messages", body, secret)
        assert fell.status == 200
        expected += cost("priced-b", 5, 10)
        # 4. A stream cut after its first events: the proxy's estimate, in the ledger too.
        mock.script([turn(5, 10, cut=3)])
        cut = call(port, "POST", "/v1/messages", body, secret)
        assert cut.status == 200 and b"event: error" in cut.body
        # 5. A client that leaves mid-stream.
        mock.script([turn(5, 10, delay_ms=200)])
        with socket.create_connection(("127.0.0.1", port)) as sock:
            raw = orjson.dumps(body)
            sock.sendall(
                b"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                b"anthropic-version: 2023-06-01\r\nx-api-key: " + secret.encode()
                + b"\r\ncontent-length: " + str(len(raw)).encode() + b"\r\n\r\n" + raw
            )  # fmt: skip
            assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        rows = ledger_rows(ledger, "alice", 5)
        by_id = {r.request_id: r for r in rows}
        assert len(rows) == 5 and all(r.team == "core" for r in rows)
        assert by_id[fell.headers["x-request-id"]].target_model == "priced-b"
        assert by_id[cut.headers["x-request-id"]].estimated
        assert sorted(r.error_type or "" for r in rows)[-1] == "client_gone"
        estimated = [r for r in rows if r.estimated]
        assert len(estimated) == 2 and all(r.cost_usd for r in estimated)
        exact = sum(r.cost_usd or 0 for r in rows if not r.estimated)
        assert round(exact, 6) == round(expected, 6)
        spent = sum(r.cost_usd or 0 for r in rows)
        # Until the budget is reached: each admitted request leaves room for its
        # reservation, and the first refused one names what was spent, to the cent.
        need = max(reservation("priced-a", body), reservation("priced-b", body))
        admitted = 0
        while True:
            mock.script([turn(5, 10)])
            reply = call(port, "POST", "/v1/messages", body, secret)
            if reply.status != 200:
                break
            assert spent + need <= budget + 1e-9
            spent += cost("priced-a", 5, 10)
            admitted += 1
        mock.clear()
        assert reply.status == 402 and reply.headers["x-should-retry"] == "false"
        error = reply.json()["error"]
        assert error["type"] == "billing_error" and "key 'alice'" in error["message"]
        assert "in flight" not in error["message"]  # every reservation was settled
        counted = spent_in(error["message"])
        assert counted == round(spent, 2)
        assert spent + need > budget  # refused only when the next one might not fit
        rows = ledger_rows(ledger, "alice", 6 + admitted)
        assert round(sum(r.cost_usd or 0 for r in rows), 2) == counted
        # The Chat client gets OpenAI's exhausted quota, which it does not retry.
        quota = call(port, "POST", "/v1/chat/completions", chat(), secret)
        assert quota.status == 429 and quota.headers["x-should-retry"] == "false"
        assert quota.json()["error"]["code"] == "insufficient_quota"
        assert quota.json()["error"]["type"] == "insufficient_quota"
        assert "retry-after" not in quota.headers
        codex = call(port, "POST", "/v1/responses", responses(), secret)
        assert codex.status == 429 and codex.json()["error"]["code"] == "insufficient_quota"
    # A restart: the period's spend comes back from the ledger.
    with proxy(mock, ledger, tmp_path) as server:
        again = call(server.port, "POST", "/v1/messages", body, secret)
        assert again.status == 402
        assert spent_in(again.message) == counted


def test_concurrent_requests_race_for_the_last_cent(
    mock: MockServer, ledger: str, tmp_path: Path
) -> None:
    body = messages()
    need = reservation("priced-b", body)  # the dearest attempt of the chain
    fits = 3
    budget = round(fits * need + need / 2, 4)  # room for 3 reservations, not 4
    secret = create(ledger, "bob", budget=budget)
    with proxy(mock, ledger, tmp_path) as server:
        mock.script([turn(5, 10, ttfb_ms=800) for _ in range(12)])
        with ThreadPoolExecutor(12) as pool:
            replies = list(
                pool.map(
                    lambda _: call(server.port, "POST", "/v1/messages", body, secret), range(12)
                )
            )
        statuses = sorted(r.status for r in replies)
        assert statuses == [200] * fits + [402] * (12 - fits)
        rows = [r for r in ledger_rows(ledger, "bob", 12) if r.status == 200]
        spent = sum(r.cost_usd or 0 for r in rows)
        assert len(rows) == fits and round(spent, 6) == round(fits * cost("priced-a", 5, 10), 6)
        assert spent <= budget
        # What settled frees room: the next request fits again.
        mock.script([turn(5, 10)])
        assert call(server.port, "POST", "/v1/messages", body, secret).status == 200


def test_team_budget_holds_for_all_its_keys(mock: MockServer, ledger: str, tmp_path: Path) -> None:
    from hydra_proxy.team import manage
    from hydra_proxy.team.store import open_key_store

    body = messages()
    need = reservation("priced-b", body)
    # Room for a reservation after one request settled, not after two.
    budget = round(cost("priced-a", 5, 10) * 1.5 + need, 4)
    store = open_key_store(ledger)
    manage.set_team(store, "core", budget=budget)
    store.close()
    one = create(ledger, "carol", team="core")
    two = create(ledger, "dave", team="core")
    with proxy(mock, ledger, tmp_path) as server:
        mock.script([turn(5, 10), turn(5, 10)])
        assert call(server.port, "POST", "/v1/messages", body, one).status == 200
        assert call(server.port, "POST", "/v1/messages", body, two).status == 200
        refused = call(server.port, "POST", "/v1/messages", body, one)
        assert refused.status == 402 and "team 'core'" in refused.message
        assert spent_in(refused.message) == round(2 * cost("priced-a", 5, 10), 2)
        rows = ledger_rows(ledger, "dave", 1)
        assert rows[0].team == "core" and rows[0].key_name == "dave"
