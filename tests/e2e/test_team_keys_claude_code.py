"""Claude Code itself on named keys: a key over its budget stops at once with the proxy's
message (a 402 billing_error, which it does not retry),
and a key over its request rate waits out the 429's retry-after and finishes; another key
beside each is not affected."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hydra_proxy.mock import MockServer
from support.claude_code import explained, require_claude, run_claude
from support.team_keys import create, proxy

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def claude() -> Path:
    return require_claude()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def access(log: str, status: int, key: str) -> list[str]:
    return [
        line
        for line in log.splitlines()
        if re.search(rf"POST /v1/messages {status} .*key={key}\b", line)
    ]


def test_over_budget_stops_at_once(claude: Path, mock: MockServer, tmp_path: Path) -> None:
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    broke = create(ledger, "broke", budget=0.01)  # a Claude Code request may cost ~$0.10
    fine = create(ledger, "fine", budget=100)
    with proxy(mock, ledger, tmp_path) as server:
        with ThreadPoolExecutor(2) as pool:
            stopped = pool.submit(
                run_claude, claude, "Say hello.", server.url, max_turns=1, api_key=broke,
                extra_args=["--model", "cheap-x"], timeout=90,
            )  # fmt: skip
            time.sleep(0.5)
            served = pool.submit(
                run_claude, claude, "Say hello.", server.url, max_turns=1, api_key=fine,
                extra_args=["--model", "cheap-x"], timeout=90,
            )  # fmt: skip
            run, other = stopped.result(), served.result()
        log = server.log_tail()
        with explained(run, server, mock):
            assert not run.timed_out
            # Claude Code retries what it may retry for minutes (backoff from 0.5 s, 10
            # tries): it stopped at once instead, with no more requests than a run that
            # succeeds makes.
            assert run.elapsed < 10, "Claude Code retried the exhausted budget"
            result = run.result()
            assert result.get("is_error") is True, result
            text = str(result.get("result"))
            assert "key 'broke' is over its budget of $0.01 per month" in text, text
            assert "resets at" in text
            refused = access(log, 402, "broke")
            assert len(refused) == 1, refused  # one request, not retried
        with explained(other, server, mock):
            assert other.returncode == 0 and other.result().get("is_error") is False
            assert access(log, 200, "fine") and not access(log, 402, "fine")


def test_over_rpm_waits_and_retries(claude: Path, mock: MockServer, tmp_path: Path) -> None:
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    # One request per 6 s: 10 a minute, counted over a 6 s window. A run makes one
    # request; the second run right after the first is over the rate.
    slow = create(ledger, "slow", rpm=10)
    other = create(ledger, "other", rpm=10)
    with proxy(mock, ledger, tmp_path, HYDRA_KEYS_RATE_WINDOW="6") as server:
        runs = [
            run_claude(
                claude, "Say hello.", server.url, max_turns=1, api_key=key,
                extra_args=["--model", "cheap-x"], timeout=120,
            )
            for key in (slow, other, slow)  # "other" between them: its own window
        ]  # fmt: skip
        log = server.log_tail()
        for run in runs:
            with explained(run, server, mock):
                assert run.returncode == 0, "Claude Code gave up on a rate limit"
                assert run.result().get("is_error") is False, run.result()
        with explained(runs[2], server, mock):
            assert access(log, 429, "slow"), "no request was rate limited"
            assert len(access(log, 200, "slow")) == 2
            assert runs[2].elapsed >= 1, "Claude Code did not wait for the retry-after"
            assert access(log, 200, "other") and not access(log, 429, "other")
