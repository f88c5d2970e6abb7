"""Micro benchmarks: what usage accounting costs per request, piece by piece.

On the request path, once per finished request, the server calls ``accounting.close``: the
upstream's counts read off the transducer, ``UsageService.make_record`` (a named tuple, a
cached price lookup, a cached key id) and ``UsageService.finish`` (two queue appends: the
metrics' and the ledger's). Off the request path, in threads of the same process:
``Metrics.flush`` (every second: the queued records summed per series, one write per
series into prometheus-client's memory-mapped values) and the ledger writer (one SQLite
``executemany`` per batch); both are measured per record, over a batch of 256. The
baseline in the same run is the native translation of one short recorded stream (a
request's own CPU is at least that).

    python -m pytest benches/test_usage.py --benchmark-only
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hydra_proxy.config import Provider, Settings
from hydra_proxy.config.routes import Attempt, RequestTraits, Route, RouteDecision, RouteOptions
from hydra_proxy.server.pipeline import accounting
from hydra_proxy.server.pipeline.exchange import Asked, Caller, Exchange
from hydra_proxy.server.transport.worker import Worker
from hydra_proxy.transducers import select
from hydra_proxy.usage.backends import open_ledger
from hydra_proxy.usage.metrics import Metrics, setup_multiprocess_dir
from hydra_proxy.usage.record import Tokens, UsageRecord
from hydra_proxy.usage.service import UsageService
from hydra_proxy.usage.sqlite_ledger import SqliteLedger

STREAM = Path(__file__).parents[1] / "tests" / "fixtures" / "chat" / "oaipy-gpt4o-text-usage.sse"
BATCH = 256

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
PROVIDER = Provider("openai", "chat", "https://api.openai.com/v1")
ATTEMPT = Attempt(PROVIDER, "gpt-4o-2024-08-06", RouteOptions())
DECISION = RouteDecision(Route("claude-*", "openai"), 0, (ATTEMPT,), "claude-sonnet-4-5")
SCOPE = {"type": "http", "method": "POST", "path": "/v1/messages", "headers": []}


def finished_exchange(worker: Worker, make: Any, body: bytes) -> Exchange:
    """A streamed model request as the server leaves it when the stream has ended."""
    exchange = Exchange(worker, SCOPE, _never, _never)
    exchange.account("anthropic")
    exchange.read_as(Asked(RequestTraits(DECISION.requested_model), stream=True))
    exchange.route.decided(DECISION)
    exchange.route.sending(ATTEMPT)
    exchange.caller = Caller(worker.signing_key, client_key=b"team-key")
    transducer = accounting.built_by(exchange, make)
    transducer.feed(body)
    transducer.finish()
    exchange.outcome.first_byte = exchange.started + 0.3
    exchange.outcome.started(200)
    return exchange


async def _never(*_: Any) -> Any:
    raise AssertionError("not sent")


@pytest.fixture
def multiproc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    setup_multiprocess_dir(tmp_path / "prom")
    yield
    os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
    from prometheus_client import values

    values.ValueClass = values.get_value_class()  # type: ignore[no-untyped-call]


def _translator() -> Any:
    """The transducer the server would use (native unless HYDRA_PROXY_IMPL says python)."""
    return select().AnthropicViaChatStream


def test_baseline_translate_one_stream(benchmark: Any) -> None:
    body = STREAM.read_bytes()
    cls = _translator()

    def translate() -> int:
        t = cls("msg_bench", "claude-sonnet-4-5", 100, signing_key=b"bench-key")
        return len(t.feed(body)) + len(t.finish())

    assert benchmark(translate) > 0


def test_request_path_account_close(
    benchmark: Any, multiproc: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Everything accounting does on the request path, from a finished stream."""
    monkeypatch.setenv("HYDRA_SIGNING_KEY_FILE", str(tmp_path / "signing-key"))
    worker = Worker.create(Settings())
    usage = UsageService.start(
        ledger_url=f"sqlite:{tmp_path / 'u.sqlite3'}",
        # The benchmark measures the request path alone: the threads stay asleep.
        ledger_options={"batch_size": 10**6, "max_queue": 10**7, "flush_interval": 3600},
    )
    assert usage.metrics is not None and usage.ledger is not None
    usage.metrics._stop.set()
    body = STREAM.read_bytes()
    cls = _translator()

    def finished() -> tuple[tuple[Exchange], dict[str, Any]]:
        make = lambda: cls("msg_bench", "claude-sonnet-4-5", 100)  # noqa: E731
        return (finished_exchange(worker, make, body),), {}

    closed = []

    def close(exchange: Exchange) -> dict[str, object]:
        closed.append(exchange)
        return accounting.close(exchange, usage)

    try:
        details = benchmark.pedantic(close, setup=finished, rounds=3000, iterations=1)
        assert details["out"] > 0 and "estimated" not in details  # the fixture's own usage
    finally:
        usage.close()
    assert usage.ledger.written == len(closed)  # every record reached the ledger


def test_make_record(benchmark: Any) -> None:
    usage = UsageService.start(ledger_url=None, metrics=False)
    tokens = Tokens(1200, 300, 4000)

    def make() -> UsageRecord:
        return usage.make_record(
            time=1_764_000_000.0,
            request_id="req_bench",
            protocol="anthropic",
            route="claude-*",
            provider="openai",
            requested_model="claude-sonnet-4-5",
            target_model="gpt-4o-2024-08-06",
            tokens=tokens,
            latency_ms=2100.0,
            ttfb_ms=310.0,
            status=200,
            key=b"team-key",
            stream=True,
        )

    assert benchmark(make).cost_usd is not None


def test_observe_enqueue(benchmark: Any, multiproc: None) -> None:
    metrics = Metrics()
    benchmark(metrics.observe, RECORD)


def test_metrics_flush_per_batch(benchmark: Any, multiproc: None) -> None:
    """One flush of BATCH records (divide by BATCH: the per-record cost), multiprocess mode."""
    metrics = Metrics()

    def fill() -> tuple[tuple[()], dict[str, Any]]:
        for _ in range(BATCH):
            metrics.observe(RECORD)
        return (), {}

    benchmark.pedantic(metrics.flush, setup=fill, rounds=200, iterations=1)
    benchmark.extra_info["records_per_round"] = BATCH


def test_ledger_record_enqueue(benchmark: Any, tmp_path: Path) -> None:
    ledger = open_ledger(f"sqlite:{tmp_path / 'u.sqlite3'}", max_queue=10_000_000)
    try:
        benchmark(ledger.record, RECORD)
    finally:
        ledger.close()


def test_ledger_write_per_batch(benchmark: Any, tmp_path: Path) -> None:
    """The writer thread's cost: one batch of BATCH records into SQLite (divide by BATCH)."""
    ledger = SqliteLedger(tmp_path / "u.sqlite3")
    ledger._open()
    batch = [RECORD] * BATCH
    benchmark(ledger._write, batch)
    benchmark.extra_info["records_per_round"] = BATCH
    ledger._close()
