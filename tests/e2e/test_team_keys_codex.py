"""Codex itself on named keys (through the proxy's Responses endpoint, served from the mock's
Chat API): a key over its budget gets OpenAI's ``insufficient_quota``, on which Codex stops
at once instead of retrying; a key over its request rate gets a 429 with retry-after,
which Codex retries (its provider allows retries here) until it is served."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hydra_proxy.mock import MockServer
from support.codex_cli import CodexRun, require_codex, run_codex
from support.team_keys import create, proxy

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def codex() -> Path:
    return require_codex()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def access(log: str, status: int, key: str) -> list[str]:
    return [
        line
        for line in log.splitlines()
        if re.search(rf"POST /v1/responses {status} .*key={key}\b", line)
    ]


def explain(run: CodexRun, log: str) -> str:
    return f"{run.report()}\n--- proxy log ---\n{log[-3000:]}"


def test_over_budget_stops_at_once(codex: Path, mock: MockServer, tmp_path: Path) -> None:
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    broke = create(ledger, "broke", budget=0.0001)
    fine = create(ledger, "fine", budget=100)
    with proxy(mock, ledger, tmp_path) as server:
        base = server.url + "/v1"
        run = run_codex(codex, "Say hello.", base, model="cheap-x", api_key=broke, retries=4,
                        timeout=90)  # fmt: skip
        other = run_codex(codex, "Say hello.", base, model="cheap-x", api_key=fine, retries=4,
                          timeout=90)  # fmt: skip
        log = server.log_tail()
    report = explain(run, log)
    assert not run.timed_out, report
    assert run.returncode == 1, report
    assert run.elapsed < 15, report
    assert len(access(log, 429, "broke")) == 1, report  # insufficient_quota: no retry
    failure = run.failure() or ""
    print(f"codex over budget: {failure!r} after {run.elapsed:.1f} s")
    assert "quota" in failure.lower() or "budget" in failure.lower(), report
    assert other.returncode == 0 and other.messages(), explain(other, log)
    assert access(log, 200, "fine")


def test_over_rpm_waits_and_retries(codex: Path, mock: MockServer, tmp_path: Path) -> None:
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    slow = create(ledger, "slow", rpm=20)  # one request per 3 s window
    with proxy(mock, ledger, tmp_path, HYDRA_KEYS_RATE_WINDOW="3") as server:
        base = server.url + "/v1"
        runs = []
        for _ in range(2):
            started = time.monotonic()
            runs.append(run_codex(codex, "Say hello.", base, model="cheap-x", api_key=slow,
                                  retries=6, timeout=120))  # fmt: skip
            runs[-1].elapsed = time.monotonic() - started
        log = server.log_tail()
    for run in runs:
        assert run.returncode == 0 and run.messages(), explain(run, log)
    assert access(log, 429, "slow"), explain(runs[1], log)
    print(
        f"codex over rpm: {len(access(log, 429, 'slow'))} refusals, runs {[round(r.elapsed, 1) for r in runs]} s"
    )
    assert len(access(log, 200, "slow")) == 2, explain(runs[1], log)
