"""Which keys a running proxy asks for, said and kept current: its first lines name the
mode and why; a proxy started without keys turns them on at the first named key, within
the keyring's refresh, and says so once; named keys in the default store hold with the
usage ledger off, and the log says why; a SIGHUP reload keeps the embedded mock when no
provider key is set, and a reload that changes where requests go says so."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from hydra_proxy.mock import MockServer
from hydra_proxy.mock.server import free_port
from support.servers import PYTHON_DIR, ProxyServer
from support.team_keys import call, create, messages, turn


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def wait_for(predicate: object, what: str, seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_the_first_named_key_turns_keys_on(mock: MockServer, tmp_path: Path) -> None:
    ledger = f"sqlite:{tmp_path / 'usage.sqlite3'}"
    env = {"HYDRA_USAGE_LEDGER": ledger, "HYDRA_KEYS_REFRESH": "0.2"}
    with ProxyServer(mock.url + "/v1", "--log-level", "info", env=env) as proxy:
        assert "keys: no keys: any client on 127.0.0.1 is served" in proxy.log_text()
        assert call(proxy.port, "POST", "/v1/messages", messages()).status == 200
        secret = create(ledger, "alice", rpm=5)
        wait_for(
            lambda: call(proxy.port, "POST", "/v1/messages", messages()).status == 401,
            "keyless requests still served after the first key",
        )
        mock.clear()
        mock.script([turn() for _ in range(6)])
        statuses = [call(proxy.port, "POST", "/v1/messages", messages(), secret).status
                    for _ in range(6)]  # fmt: skip
        assert statuses == [200] * 5 + [429]
        log = proxy.log_text()
        assert log.count("named keys found in") == 1  # one worker: said once
        assert str(tmp_path / "usage.sqlite3") in log


def test_named_keys_hold_with_the_ledger_off_and_the_log_says_why(
    mock: MockServer, tmp_path: Path
) -> None:
    # A key in the default store of the proxy's HOME, made before it starts.
    proxy = ProxyServer(mock.url + "/v1", "--log-level", "info", env={"HYDRA_USAGE_LEDGER": "off"})
    home = Path(proxy.home.name)
    create(f"sqlite:{home / '.hydra-proxy' / 'usage.sqlite3'}", "alice")
    with proxy:
        log = proxy.log_text()
        assert "keys: named keys: 1 in" in log
        assert "HYDRA_USAGE_LEDGER=off turns off usage records, not these keys" in log
        assert call(proxy.port, "POST", "/v1/messages", messages()).status == 401


def serve(tmp_path: Path, config: Path) -> tuple[subprocess.Popen[bytes], int, Path]:
    """`hydra-proxy serve` as a user runs it: no provider key, no base URL."""
    port = free_port()
    log = tmp_path / "serve.log"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(PYTHON_DIR),
           "HYDRA_CONFIG": str(config), "HYDRA_USAGE_LEDGER": "off"}  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "hydra_proxy", "serve", "--port", str(port)],
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    return process, port, log


def ask(port: int) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/v1/messages", orjson.dumps(messages("gpt-4o", stream=False)),
                 {"content-type": "application/json"})  # fmt: skip
    response = conn.getresponse()
    return response.status, response.read()


def test_a_reload_keeps_the_embedded_mock_and_says_where_requests_go(tmp_path: Path) -> None:
    config = tmp_path / "hydra.toml"
    config.write_text("")
    process, port, log = serve(tmp_path, config)
    try:
        wait_for(lambda: b"listening on" in log.read_bytes() and _up(port), "serve did not start")
        assert ask(port)[0] == 200  # the embedded mock answers
        os.kill(process.pid, signal.SIGHUP)
        wait_for(lambda: b"config reloaded from" in log.read_bytes(), "no reload")
        time.sleep(1.0)  # the respawned worker is serving
        for _ in range(5):
            assert ask(port)[0] == 200  # still the mock: no provider key is set
        assert b"changes where requests go" not in log.read_bytes()
        # A route to the real provider: requests go elsewhere now, and the log says where.
        config.write_text(
            '[providers.local]\nkind = "chat"\nbase_url = "http://127.0.0.1:9/v1"\n'
            'api_key_optional = true\n\n[[routes]]\nmatch = "*"\nprovider = "local"\n'
        )
        os.kill(process.pid, signal.SIGHUP)
        wait_for(lambda: b"changes where requests go" in log.read_bytes(), "not said")
        text = log.read_text()
        assert "local: none -> http://127.0.0.1:9/v1" in text
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(20)


def _up(port: int) -> bool:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
        conn.request("GET", "/health")
        return conn.getresponse().status == 200
    except OSError:
        return False
