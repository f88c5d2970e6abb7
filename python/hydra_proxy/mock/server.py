"""Running the mock: :func:`serve` (granian, blocking) and :class:`MockServer` (a
subprocess for tests, started as ``python -m hydra_proxy.mock``)."""

from __future__ import annotations

import contextlib
import functools
import http.client
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import orjson

from .app import ASGIApp, create_app
from .options import DEFAULT_HOST, DEFAULT_PORT, MockOptions

_PYTHON_DIR = Path(__file__).resolve().parents[2]  # .../python (holds hydra_proxy/)


def _load_app(options: MockOptions) -> ASGIApp:
    return create_app(options)


def serve(
    options: MockOptions,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    workers: int = 1,
    *,
    log_level: str = "info",
) -> None:
    """Serve the mock with granian until interrupted (SIGINT/SIGTERM). Blocks.

    Each worker process has its own recordings and script queue.
    """
    from granian.constants import Interfaces
    from granian.log import LogLevels
    from granian.server import Server

    server = Server(
        "hydra_proxy.mock.app:create_app",
        address=host,
        port=port,
        interface=Interfaces.ASGINL,  # no lifespan round trip; the app needs no startup
        workers=workers,
        backlog=4096,
        backpressure=16384,  # concurrent requests per worker: paced benchmarks hold many
        log_enabled=True,
        log_level=LogLevels(log_level),
        log_access=False,
    )
    # A module-level function in a partial stays picklable for non-fork start methods.
    server.serve(target_loader=functools.partial(_load_app, options), wrap_loader=False)


def free_port(host: str = DEFAULT_HOST) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


class MockServerError(RuntimeError):
    """The mock subprocess did not come up (the message carries its log tail)."""


class MockServer:
    """The mock in a subprocess, for tests::

        with MockServer(fixtures="/work/shared/fixtures") as mock:
            client = openai.OpenAI(base_url=mock.url + "/v1", api_key="k")
            mock.script([{"text": "hi"}])
            ...
            assert mock.requests()[0]["headers"]["authorization"] == "<redacted>"

    ``args`` are extra ``hydra-proxy mock`` flags; the keyword arguments are shortcuts.
    """

    def __init__(
        self,
        *args: str,
        host: str = DEFAULT_HOST,
        port: int | None = None,
        fixtures: str | os.PathLike[str] | None = None,
        replay: str | os.PathLike[str] | None = None,
        workers: int = 1,
        startup_timeout: float = 30.0,
        env: dict[str, str] | None = None,
    ):
        self.host = host
        self.port = port
        self.workers = workers
        self.startup_timeout = startup_timeout
        self.extra_args = list(args)
        if fixtures is not None:
            self.extra_args += ["--fixtures", os.fspath(fixtures)]
        if replay is not None:
            self.extra_args += ["--replay", os.fspath(replay)]
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    # -- lifecycle ---------------------------------------------------------------------

    @property
    def url(self) -> str:
        if self.port is None:
            raise MockServerError("the mock server is not running")
        return f"http://{self.host}:{self.port}"

    def start(self) -> MockServer:
        explicit_port = self.port is not None
        last_error: MockServerError | None = None
        for _ in range(1 if explicit_port else 3):
            port = self.port if explicit_port and self.port is not None else free_port(self.host)
            try:
                self._spawn(port)
                return self
            except MockServerError as exc:  # e.g. the free port was taken meanwhile
                last_error = exc
                self.stop()
        assert last_error is not None
        raise last_error

    def _spawn(self, port: int) -> None:
        env = dict(os.environ if self.env is None else self.env)
        pythonpath = env.get("PYTHONPATH")
        env["PYTHONPATH"] = (
            f"{_PYTHON_DIR}{os.pathsep}{pythonpath}" if pythonpath else str(_PYTHON_DIR)
        )
        cmd = [
            sys.executable,
            "-m",
            "hydra_proxy.mock",
            "--host",
            self.host,
            "--port",
            str(port),
            "--workers",
            str(self.workers),
            "--log-level",
            "warning",
            *self.extra_args,
        ]
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (lives until stop())
        self.process = subprocess.Popen(
            cmd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stop() can reach the workers
        )
        self.port = port
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise MockServerError(
                    f"mock exited with code {self.process.returncode}:\n{self.log_tail()}"
                )
            try:
                status, _ = self._request("GET", "/health", timeout=1.0)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise MockServerError(
            f"mock did not answer /health within {self.startup_timeout}s:\n{self.log_tail()}"
        )

    def log_tail(self, limit: int = 4000) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read()[-limit:].decode("utf-8", "replace")

    def stop(self) -> None:
        proc = self.process
        self.process = None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> MockServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- control API -------------------------------------------------------------------

    def _request(
        self, method: str, path: str, body: Any = None, timeout: float = 10.0
    ) -> tuple[int, Any]:
        if self.port is None:
            raise MockServerError("the mock server is not running")
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            payload = None if body is None else orjson.dumps(body)
            headers = {"content-type": "application/json"} if payload is not None else {}
            conn.request(method, path, body=payload, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, (orjson.loads(data) if data else None)
        finally:
            conn.close()

    def _control(self, method: str, path: str, body: Any = None) -> Any:
        status, data = self._request(method, path, body)
        if status != 200:
            raise MockServerError(f"{method} {path} -> {status}: {data}")
        return data

    def requests(self) -> list[dict[str, Any]]:
        """Every recorded request: ``{method, path, query, headers, body}`` (model requests
        also ``reply``: ``"header"``, ``"script"`` or ``"default"``), oldest first."""
        data: list[dict[str, Any]] = self._control("GET", "/_mock/requests")
        return data

    def script(self, turns: Sequence[dict[str, Any]]) -> int:
        """Queue scripted turns (FIFO, one per model request that the oldest turn's
        ``match`` accepts); returns the queue length."""
        data = self._control("POST", "/_mock/script", list(turns))
        pending: int = data["pending"]
        return pending

    def pending(self) -> int:
        """How many scripted turns are still queued."""
        data = self._control("GET", "/_mock/script")
        pending: int = data["pending"]
        return pending

    def clear(self) -> None:
        """Forget the recorded requests and drop any queued turns."""
        self._control("DELETE", "/_mock/requests")
        self._control("DELETE", "/_mock/script")
