"""UsageService under granian with two worker processes: metrics and ledger add up exactly."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
import pytest
from test_usage_metrics import samples, total

from hydra_proxy.usage.ledger import Ledger
from hydra_proxy.usage.postgres_ledger import PostgresLedger
from hydra_proxy.usage.record import UsageRecord
from hydra_proxy.usage.sqlite_ledger import SqliteLedger
from support.postgres_server import postgres_server, wait_ready, why_unavailable
from support.usage_data import make_records

APP = Path(__file__).parent.parent / "support" / "usage_granian_app.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(port: int, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path)
        reply = conn.getresponse()
        return reply.status, reply.read()
    finally:
        conn.close()


def _post(port: int, rec: UsageRecord) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)  # a new connection each
    try:
        conn.request("POST", "/finish", body=orjson.dumps(rec._asdict()))
        reply = conn.getresponse()
        assert reply.status == 200
        return int(reply.read())
    finally:
        conn.close()


def serve_and_drive(
    ledger_url: str, tmp: Path, records: list[UsageRecord]
) -> tuple[set[int], bytes]:
    """Start granian with 2 workers, post every record, scrape, stop cleanly."""
    port = _free_port()
    env = dict(os.environ)
    here = str(Path(__file__).parent.parent)
    python = str(Path(__file__).parents[2] / "python")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [python, here, env.get("PYTHONPATH")]))
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    proc = subprocess.Popen(
        [sys.executable, str(APP), str(port), "2", ledger_url, str(tmp / "prom")],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        # Both workers up before the records are sent (the first one ready would otherwise
        # take them all): new connections until two pids answered.
        ready: set[bytes] = set()
        while len(ready) < 2:
            try:
                status, pid = _get(port, "/pid")
                if status == 200:
                    ready.add(pid)
            except OSError:
                pass
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else b""
            assert time.monotonic() < deadline, f"granian did not start both workers: {ready}"
            time.sleep(0.02)
        with ThreadPoolExecutor(8) as pool:
            pids = set(pool.map(lambda r: _post(port, r), records))
        # A scrape shows its own worker's requests at once, the other's once that worker's
        # flush thread ran (every second): wait for it (bounded), then check exact totals.
        settle = time.monotonic() + 10
        while True:
            status, body = _get(port, "/metrics")
            assert status == 200
            counted = total(samples(body), "hydra_requests_total")
            if counted >= len(records) or time.monotonic() > settle:
                break
            time.sleep(0.1)
        assert not ledger_of(ledger_url).query(), "written before shutdown: the test proves nothing"
    finally:
        proc.send_signal(signal.SIGINT)  # a clean shutdown: lifespan shutdown in each worker
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out.decode(errors="replace")[-3000:]
    return pids, body


def ledger_of(url: str) -> Ledger:
    return PostgresLedger(url) if url.startswith("postgresql") else SqliteLedger(Path(url[7:]))


def check(ledger: Ledger, pids: set[int], body: bytes, records: list[UsageRecord]) -> None:
    assert len(pids) == 2, f"both workers should have served: {pids}"
    found = samples(body)
    assert total(found, "hydra_requests_total") == len(records)
    assert total(found, "hydra_tokens_total", kind="output") == sum(
        r.output_tokens for r in records
    )
    assert total(found, "hydra_tokens_total", kind="input") == sum(r.input_tokens for r in records)
    assert total(found, "hydra_cost_usd_total") == pytest.approx(
        sum(r.cost_usd or 0 for r in records)
    )
    stored = ledger.query()
    assert sorted(r.request_id for r in stored) == sorted(r.request_id for r in records)
    assert sum(r.output_tokens for r in stored) == sum(r.output_tokens for r in records)


@pytest.fixture
def records() -> list[UsageRecord]:
    return make_records(300, 51)


def test_two_granian_workers_sqlite(tmp_path: Path, records: list[UsageRecord]) -> None:
    path = tmp_path / "u.sqlite3"
    pids, body = serve_and_drive(f"sqlite:{path}", tmp_path, records)
    check(SqliteLedger(path), pids, body, records)


_missing = why_unavailable()


@pytest.fixture
def postgres_url() -> Iterator[str]:
    if _missing is not None:
        pytest.skip(_missing)
    pytest.importorskip("psycopg", reason="psycopg not installed (extra 'postgres')")
    with postgres_server() as url:
        wait_ready(url)
        yield url


def test_two_granian_workers_postgres(
    tmp_path: Path, records: list[UsageRecord], postgres_url: str
) -> None:
    pids, body = serve_and_drive(postgres_url, tmp_path, records)
    check(PostgresLedger(postgres_url), pids, body, records)
