"""The proxy as a real process, for end-to-end tests (the mock upstream is hydra_proxy.mock)."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType

from hydra_proxy.mock.server import free_port

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"


class ProxyServer:
    """`hydra-proxy serve` in a subprocess, pointed at `upstream` (an OpenAI-style base URL)."""

    def __init__(
        self,
        upstream: str,
        *args: str,
        impl: str = "auto",
        env: dict[str, str] | None = None,
        startup_timeout: float = 30.0,
    ) -> None:
        self.upstream = upstream
        self.args = list(args)
        self.impl = impl
        self.extra_env = env or {}
        self.startup_timeout = startup_timeout
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.home = tempfile.TemporaryDirectory(prefix="hydra-home-")
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the server

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ProxyServer:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("HYDRA_", "OPENAI_", "ANTHROPIC_"))
        }
        env.update(
            HOME=self.home.name,
            OPENAI_API_KEY="sk-upstream-SECRET-key",
            HYDRA_SIGNING_KEY_FILE=str(Path(self.home.name) / "signing-key"),
            PYTHONPATH=os.pathsep.join(
                filter(None, [str(PYTHON_DIR), os.environ.get("PYTHONPATH")])
            ),
        )
        env.update(self.extra_env)
        cmd = [
            sys.executable, "-m", "hydra_proxy", "serve",
            "--port", str(self.port), "--base-url", self.upstream, "--impl", self.impl,
            "--no-mock", "--log-level", "warning", *self.args,
        ]  # fmt: skip
        self.process = subprocess.Popen(
            cmd, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"proxy exited early:\n{self.log_tail()}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
                conn.request("GET", "/health")
                if conn.getresponse().status == 200:
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"proxy did not start:\n{self.log_tail()}")

    def log_tail(self) -> str:
        return self.log_text()[-4000:]

    def log_text(self) -> str:
        self.log.seek(0)
        return self.log.read().decode("utf-8", "replace")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.home.cleanup()
