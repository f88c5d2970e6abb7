"""Micro benchmarks: what usage accounting costs per request, against translating one.

Per finished request the server calls ``UsageService.finish(rec)``: ``Metrics.observe`` (a
few counter increments; in multiprocess mode each is a write into a memory-mapped file)
and ``Ledger.record`` (a deque append; the SQLite writes happen in the writer thread, whose
CPU is measured here too, per record, in ``test_ledger_write_per_record``). The baseline in
the same run is the pure-Python translation of one short recorded stream (a request's own
CPU is at least that). Run:
    python -m pytest benches/test_usage.py --benchmark-only
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from hydra_proxy.transducers import MessagesViaChatStream
from hydra_proxy.usage.ledger import open_ledger
from hydra_proxy.usage.metrics import Metrics, setup_multiprocess_dir
from hydra_proxy.usage.record import UsageRecord
from hydra_proxy.usage.service import UsageService
from hydra_proxy.usage.sqlite_ledger import SqliteLedger

STREAM = Path(__file__).parents[1] / "tests" / "fixtures" / "openai" / "oaipy-gpt4o-text-usage.sse"

RECORD = UsageRecord(
    time=1_764_000_000.0,
    request_id="req_bench",
    protocol="anthropic",
    route="claude-*",
    provider="openai",
    requested_model="claude-sonnet-4-5",
    target_model="gpt-4o-2024-08-06",
    input_tokens=1200,
    output_tokens=300,
    cache_read_tokens=4000,
    cost_usd=0.0075,
    latency_ms=2100.0,
    ttfb_ms=310.0,
    status=200,
    key_id="a1b2c3d4",
    stream=True,
)


@pytest.fixture
def multiproc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    setup_multiprocess_dir(tmp_path / "prom")
    yield
    os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
    from prometheus_client import values

    values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]


def test_baseline_translate_one_stream(benchmark: object) -> None:
    body = STREAM.read_bytes()

    def translate() -> int:
        t = MessagesViaChatStream("msg_bench", "claude-sonnet-4-5", 100, signing_key=b"bench-key")
        return len(t.feed(body)) + len(t.finish())

    assert benchmark(translate) > 0  # type: ignore[operator]


def test_observe_single_process(benchmark: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    metrics = Metrics()
    benchmark(metrics.observe, RECORD)  # type: ignore[operator]


def test_observe_multiprocess(benchmark: object, multiproc: None) -> None:
    metrics = Metrics()
    benchmark(metrics.observe, RECORD)  # type: ignore[operator]


def test_finish_metrics_and_ledger(benchmark: object, multiproc: None, tmp_path: Path) -> None:
    usage = UsageService.start(ledger_url=f"sqlite:{tmp_path / 'u.sqlite3'}")
    try:
        benchmark(usage.finish, RECORD)  # type: ignore[operator]
    finally:
        usage.close()
    assert usage.ledger is not None and usage.ledger.dropped == 0


def test_ledger_write_per_record(benchmark: object, tmp_path: Path) -> None:
    """The writer thread's cost per record: one batch of 256 into SQLite, per record."""
    ledger = SqliteLedger(tmp_path / "u.sqlite3")
    ledger._open()
    batch = [RECORD] * 256
    benchmark(ledger._write, batch)  # type: ignore[operator]
    ledger._close()


def test_ledger_record_enqueue(benchmark: object, tmp_path: Path) -> None:
    ledger = open_ledger(f"sqlite:{tmp_path / 'u.sqlite3'}", max_queue=10_000_000)
    try:
        benchmark(ledger.record, RECORD)  # type: ignore[operator]
    finally:
        ledger.close()
