"""A named key's rpm across the workers of one `serve`: the key's window is counted in the
host store its workers share, so two workers let exactly the key's 30 requests of the
minute through, not 30 each."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hydra_proxy.mock import MockServer
from support.servers import ProxyServer
from support.team_keys import ADMIN_KEY, call, config, create, messages, turn


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def test_a_key_rpm_of_30_admits_exactly_30_across_two_workers(
    mock: MockServer, tmp_path: Path
) -> None:
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    secret = create(ledger, "alice", rpm=30)
    env = {
        "HYDRA_USAGE_LEDGER": ledger,
        "HYDRA_CONFIG": str(config(mock, tmp_path)),
        "HYDRA_ADMIN_KEY": ADMIN_KEY,
        "HYDRA_RETRIES": "0",
    }
    mock.clear()
    mock.script([turn(ttfb_ms=300) for _ in range(90)])
    # 90 requests, 30 at a time: both workers take some, and each alone would pass 30.
    with (
        ProxyServer(mock.url + "/v1", "--workers", "2", env=env) as server,
        ThreadPoolExecutor(30) as pool,
    ):
        replies = list(
            pool.map(
                lambda _: call(server.port, "POST", "/v1/messages", messages(), secret),
                range(90),
            )
        )
    statuses = sorted(reply.status for reply in replies)
    assert statuses == [200] * 30 + [429] * 60, statuses
    assert all(
        "limit of 30 requests per minute" in reply.message
        for reply in replies
        if reply.status == 429
    )
