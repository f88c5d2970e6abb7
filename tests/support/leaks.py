"""Counting what a proxy process holds, before and after a case: its open file descriptors
(/proc/<pid>/fd), its asyncio tasks (the test-only probe of leak_probe_app.py), its
upstream connections (counted at the upstream, tests/support/faulty_upstream.py) and its memory
(RSS over repetitions of a case).

    with ProbedProxy(config, impl=impl) as proxy, FaultyUpstream() as upstream:
        leaks = LeakCounter(proxy, upstream)
        before = leaks.settle()
        ...run the case...
        leaks.assert_back_to(before)

Kept-alive upstream connections are the pool working, not a leak: `settle` first has the
upstream close its idle ones (as its own keep-alive timeout would), so the pool's
connections are gone from both counts alike; what stays open after that was leaked.
"""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import orjson

from hydra_proxy.mock.server import free_port

TESTS = Path(__file__).resolve().parents[1]
PYTHON_DIR = TESTS.parent / "python"
PROBE_PATH = "/__test/leaks"


class Upstream(Protocol):
    def open_connections(self) -> int: ...
    def busy_connections(self) -> int: ...
    def close_idle(self) -> int: ...


class ProbedProxy:
    """The proxy app under granian (tests/support/leak_probe_app.py) in a subprocess, one worker."""

    def __init__(
        self, config: Path, *, impl: str = "auto", env: dict[str, str] | None = None
    ) -> None:
        self.config = config
        self.impl = impl
        self.extra_env = env or {}
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.home = tempfile.TemporaryDirectory(prefix="hydra-home-")
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the server
        self.worker_pid = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ProbedProxy:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("HYDRA_", "OPENAI_", "ANTHROPIC_", "GEMINI_"))
        }
        env.update(
            HOME=self.home.name,
            HYDRA_SIGNING_KEY_FILE=str(Path(self.home.name) / "signing-key"),
            PYTHONPATH=os.pathsep.join(
                filter(None, [str(PYTHON_DIR), str(TESTS), os.environ.get("PYTHONPATH")])
            ),
        )
        env.update(self.extra_env)
        cmd = [sys.executable, str(Path(__file__).with_name("leak_probe_app.py")), str(self.port)]
        cmd += [str(self.config), self.impl]
        self.process = subprocess.Popen(
            cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"proxy exited early:\n{self.log_tail()}")
            try:
                self.worker_pid = self.probe()["pid"]
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"proxy did not start:\n{self.log_tail()}")

    def probe(self, query: str = "") -> dict[str, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            conn.request("GET", PROBE_PATH + (f"?{query}" if query else ""))
            response = conn.getresponse()
            data: dict[str, Any] = orjson.loads(response.read())
            return data
        finally:
            conn.close()

    def collect(self) -> dict[str, int]:
        """A full collection in the worker: what it found unreachable, by type."""
        garbage: dict[str, int] = self.probe("collect")["garbage"]
        return garbage

    def log_tail(self) -> str:
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")[-6000:]

    def terminate(self, timeout: float = 15) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            return self.process.wait()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.terminate()
        self.home.cleanup()


@dataclass(frozen=True)
class Snapshot:
    fds: int
    tasks: int
    upstream_open: int
    upstream_busy: int
    rss_kib: int

    def leaks_against(self, before: Snapshot) -> list[str]:
        """What this snapshot holds beyond `before` (empty: nothing leaked)."""
        found = []
        if self.fds > before.fds:
            found.append(f"file descriptors {before.fds} -> {self.fds}")
        if self.tasks > before.tasks:
            found.append(f"asyncio tasks {before.tasks} -> {self.tasks}")
        if self.upstream_open:
            found.append(f"{self.upstream_open} upstream connections open")
        if self.upstream_busy:
            found.append(f"{self.upstream_busy} upstream connections mid-request")
        return found


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")  # pragma: no cover - Linux always reports it


class LeakCounter:
    def __init__(self, proxy: ProbedProxy, upstream: Upstream | None = None) -> None:
        self.proxy = proxy
        self.upstream = upstream

    def snapshot(self) -> Snapshot:
        up_open = up_busy = 0
        if self.upstream is not None:
            self.upstream.close_idle()
            up_open = self.upstream.open_connections()
            up_busy = self.upstream.busy_connections()
        tasks = self.proxy.probe()["tasks"]
        pid = self.proxy.worker_pid
        return Snapshot(fd_count(pid), tasks, up_open, up_busy, rss_kib(pid))

    def settle(self, timeout: float = 5.0) -> Snapshot:
        """A baseline: the counts once they stop falling (the pool's kept-alive
        connections closed, finished requests' sockets gone)."""
        deadline = time.monotonic() + timeout
        last = self.snapshot()
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = self.snapshot()
            if (now.fds, now.tasks, now.upstream_open) == (last.fds, last.tasks, 0):
                return now
            last = now
        return last

    def assert_back_to(self, before: Snapshot, timeout: float = 5.0) -> Snapshot:
        """Wait (bounded) until nothing is held beyond `before`; fail naming what is."""
        deadline = time.monotonic() + timeout
        while True:
            now = self.snapshot()
            leaks = now.leaks_against(before)
            if not leaks:
                return now
            if time.monotonic() > deadline:
                raise AssertionError(
                    "leaked: " + "; ".join(leaks) + f"\nproxy log:\n{self.proxy.log_tail()}"
                )
            time.sleep(0.05)

    def assert_upstream_released(self, timeout: float) -> None:
        """Wait (bounded) until the upstream holds no connection of the proxy's: a request
        the proxy dropped is closed there, not read to its end."""
        assert self.upstream is not None
        deadline = time.monotonic() + timeout
        while True:
            self.upstream.close_idle()
            held = self.upstream.open_connections()
            if not held:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{held} upstream connections still open after {timeout} s")
            time.sleep(0.02)

    def rss_growth_kib(self, case: Callable[[], object], repetitions: int, warmup: int = 3) -> int:
        """RSS growth of the worker over `repetitions` runs of `case`, after `warmup` runs
        (allocator pools and caches filled); each run must leave nothing else behind."""
        for _ in range(warmup):
            case()
        before = self.settle()
        for _ in range(repetitions):
            case()
        after = self.assert_back_to(before)
        return after.rss_kib - before.rss_kib
