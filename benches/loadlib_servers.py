"""The processes of the load benchmark: the mock upstream, hydra-proxy and the peers.

Every server is started in a process group of its own with a throwaway HOME and working
directory, listens on 127.0.0.1 only, and is pointed at the same mock upstream. Peers run
from the environments the pinned scripts under benches/peers/ install.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCHES = Path(__file__).resolve().parent
REPO = BENCHES.parent
PEERS = BENCHES / "peers"
CCR_CLI = PEERS / "ccr/env/node_modules/@musistudio/claude-code-router/dist/cli.js"
LITELLM_BIN = PEERS / "litellm/env/bin/litellm"
LITELLM_PYTHON = PEERS / "litellm/env/bin/python"
# One key every server accepts: LiteLLM requires its master key, the others ignore it.
CLIENT_KEY = "sk-bench-master-key"
UPSTREAM_KEY = "sk-mock-upstream"
HOST = "127.0.0.1"


@dataclass(frozen=True)
class Mode:
    """A client protocol and the upstream protocol it is served from."""

    name: str
    path: str  # the client's endpoint on the proxy
    protocol: str  # "anthropic" or "chat": what the client speaks
    model: str  # the model name the proxies route on
    upstream_path: str  # the mock's endpoint behind it
    upstream_protocol: str
    description: str


MODES: dict[str, Mode] = {
    m.name: m
    for m in (
        Mode(
            "anthropic-in",
            "/v1/messages",
            "anthropic",
            "bench-openai",
            "/v1/chat/completions",
            "chat",
            "translated: Anthropic client /v1/messages -> proxy -> mock OpenAI Chat",
        ),
        Mode(
            "openai-in",
            "/v1/chat/completions",
            "chat",
            "bench-anthropic",
            "/v1/messages",
            "anthropic",
            "translated: OpenAI client /v1/chat/completions -> proxy -> mock Anthropic Messages",
        ),
        Mode(
            "passthrough",
            "/v1/chat/completions",
            "chat",
            "bench-openai",
            "/v1/chat/completions",
            "chat",
            "same protocol: OpenAI client -> proxy -> mock OpenAI Chat (the ceiling)",
        ),
    )
}


def request_body(protocol: str, model: str) -> dict[str, Any]:
    """A small streaming request, as a coding agent's turn would start."""
    return {
        "model": model,
        "max_tokens": 1024,
        "stream": True,
        "messages": [{"role": "user", "content": "Say hello to the benchmark."}],
    }


def request_headers(protocol: str) -> dict[str, str]:
    if protocol == "anthropic":
        return {
            "content-type": "application/json",
            "anthropic-version": "2023-06-01",
            "x-api-key": CLIENT_KEY,
            "authorization": f"Bearer {CLIENT_KEY}",
        }
    return {"content-type": "application/json", "authorization": f"Bearer {CLIENT_KEY}"}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        port: int = s.getsockname()[1]
        return port


def _clean_env(home: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HYDRA_", "OPENAI_", "ANTHROPIC_", "LITELLM_", "VIRTUAL_ENV"))
    }
    env["HOME"] = home
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        env.pop(name, None)
    return env


class ServerError(RuntimeError):
    """A server did not come up (the message carries its log tail)."""


class Process:
    """A server in its own process group, with a throwaway HOME."""

    name = "process"
    ready_path = "/health"
    startup_timeout = 60.0

    def __init__(self) -> None:
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.workdir: tempfile.TemporaryDirectory[str] | None = None
        self.log_path: Path | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def command(self, workdir: Path) -> tuple[list[str], dict[str, str]]:
        raise NotImplementedError

    def start(self) -> None:
        self.port = free_port()
        self.workdir = tempfile.TemporaryDirectory(prefix=f"load-{self.name}-")
        workdir = Path(self.workdir.name)
        argv, env = self.command(workdir)
        self.log_path = workdir / "server.log"
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                argv,
                env=env,
                cwd=workdir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerError(f"{self.name} exited early:\n{self.log_tail()}")
            if self._ready():
                return
            time.sleep(0.2)
        self.stop()
        raise ServerError(f"{self.name} did not start in {self.startup_timeout:g}s")

    def _ready(self) -> bool:
        try:
            conn = http.client.HTTPConnection(HOST, self.port, timeout=2)
            conn.request("GET", self.ready_path)
            status = conn.getresponse().status
            conn.close()
        except OSError:
            return False
        return status < 500

    def log_tail(self, limit: int = 3000) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return self.log_path.read_bytes()[-limit:].decode("utf-8", "replace")

    def stop(self) -> None:
        proc = self.process
        self.process = None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=15)
        if proc is not None:
            # Workers left behind by a dead parent are still in its group.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        if self.workdir is not None:
            self.workdir.cleanup()
            self.workdir = None


class Mock(Process):
    """hydra-proxy's embedded mock upstream (OpenAI Chat and Anthropic Messages)."""

    name = "mock"

    def __init__(self, *flags: str) -> None:
        super().__init__()
        self.flags = list(flags)

    def command(self, workdir: Path) -> tuple[list[str], dict[str, str]]:
        env = _clean_env(str(workdir))
        env["PYTHONPATH"] = str(REPO / "python")
        argv = [
            sys.executable, "-m", "hydra_proxy.mock", "--host", HOST, "--port", str(self.port),
            "--workers", "1", "--log-level", "warning", "--max-recorded", "0", *self.flags,
        ]  # fmt: skip
        return argv, env


class Server(Process):
    """A proxy under test, pointed at a mock."""

    modes: tuple[str, ...] = tuple(MODES)
    kind = "hydra-proxy"

    def __init__(self, mock_url: str) -> None:
        super().__init__()
        self.mock_url = mock_url


class Hydra(Server):
    def __init__(
        self,
        mock_url: str,
        impl: str,
        python_dir: Path | None = None,
        name: str | None = None,
        *,
        usage: bool = True,
        workers: int = 1,
    ) -> None:
        super().__init__(mock_url)
        self.impl = impl
        self.usage = usage  # False: no ledger, no metrics (the usage accounting's cost)
        self.workers = workers
        self.python_dir = python_dir or REPO / "python"
        self.name = name or f"hydra-{impl}"

    def command(self, workdir: Path) -> tuple[list[str], dict[str, str]]:
        config = workdir / "hydra.toml"
        # A checkout from before Chat's kind was named "chat" (--alt-python) reads only the
        # former spelling, which this one still accepts.
        chat = "chat" if self.python_dir == REPO / "python" else "openai"
        config.write_text(
            "[providers.mock_openai]\n"
            f'kind = "{chat}"\n'
            f'base_url = "{self.mock_url}/v1"\n'
            "api_key_optional = true\n"  # the mock takes any key, or none
            "[providers.mock_anthropic]\n"
            'kind = "anthropic"\n'
            f'base_url = "{self.mock_url}"\n'
            "api_key_optional = true\n"
            "[[routes]]\n"
            f'match = "{MODES["anthropic-in"].model}"\n'
            'provider = "mock_openai"\n'
            "[[routes]]\n"
            f'match = "{MODES["openai-in"].model}"\n'
            'provider = "mock_anthropic"\n'
            # The default ledger (SQLite in the throwaway HOME) and metrics, or neither.
            + ("" if self.usage else '[usage]\nledger = "off"\nmetrics = false\n')
        )
        env = _clean_env(str(workdir))
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(self.python_dir), os.environ.get("PYTHONPATH")])
        )
        env["HYDRA_SIGNING_KEY_FILE"] = str(workdir / "signing-key")
        argv = [
            sys.executable, "-m", "hydra_proxy", "serve", "--port", str(self.port),
            "--config", str(config), "--no-mock", "--impl", self.impl, "--workers", str(self.workers),
            "--log-level", "warning",
        ]  # fmt: skip
        return argv, env


class ClaudeCodeRouter(Server):
    name = "claude-code-router"
    kind = "peer"
    modes = ("anthropic-in",)  # it only serves Anthropic clients
    ready_path = "/"

    def command(self, workdir: Path) -> tuple[list[str], dict[str, str]]:
        # Its throwaway HOME: it writes ~/.claude-code-router and ~/.claude.json.
        config_dir = workdir / ".claude-code-router"
        config_dir.mkdir()
        config = {
            "LOG": False,
            "HOST": HOST,
            "PORT": self.port,
            "NON_INTERACTIVE_MODE": True,
            "API_TIMEOUT_MS": 600000,
            "Providers": [
                {
                    "name": "mock",
                    "api_base_url": f"{self.mock_url}/v1/chat/completions",
                    "api_key": UPSTREAM_KEY,
                    "models": [MODES["anthropic-in"].model],
                }
            ],
            "Router": {"default": f"mock,{MODES['anthropic-in'].model}"},
        }
        (config_dir / "config.json").write_text(json.dumps(config, indent=2))
        env = _clean_env(str(workdir))
        env["SERVICE_PORT"] = str(self.port)
        return ["node", str(CCR_CLI), "start"], env


class LiteLLM(Server):
    name = "litellm"
    kind = "peer"
    ready_path = "/health/liveliness"
    startup_timeout = 180.0

    def command(self, workdir: Path) -> tuple[list[str], dict[str, str]]:
        # YAML is a superset of JSON: the config is written as JSON.
        config = {
            "model_list": [
                {
                    "model_name": MODES["anthropic-in"].model,
                    "litellm_params": {
                        "model": f"openai/{MODES['anthropic-in'].model}",
                        "api_base": f"{self.mock_url}/v1",
                        "api_key": UPSTREAM_KEY,
                    },
                },
                {
                    "model_name": MODES["openai-in"].model,
                    "litellm_params": {
                        "model": f"anthropic/{MODES['openai-in'].model}",
                        "api_base": self.mock_url,
                        "api_key": UPSTREAM_KEY,
                    },
                },
            ],
            # /v1/messages on an OpenAI model takes the Chat Completions path (as ours),
            # not /v1/responses.
            "litellm_settings": {"use_chat_completions_url_for_anthropic_messages": True},
            "general_settings": {"master_key": CLIENT_KEY},
        }
        (workdir / "litellm.yaml").write_text(json.dumps(config, indent=2))
        # Uvicorn's access log off, as hydra-proxy runs without one.
        log_config = {
            "version": 1,
            "disable_existing_loggers": False,
            "loggers": {
                "uvicorn.access": {"level": "WARNING"},
                "uvicorn.error": {"level": "WARNING"},
            },
        }
        (workdir / "log.json").write_text(json.dumps(log_config))
        env = _clean_env(str(workdir))
        env.update(
            LITELLM_LOCAL_MODEL_COST_MAP="True",
            LITELLM_OFFLINE_MODE="true",
            LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS="True",
            LITELLM_TELEMETRY_DISABLED="true",
            LITELLM_USE_CHAT_COMPLETIONS_URL_FOR_ANTHROPIC_MESSAGES="True",
            LITELLM_LOG="ERROR",
        )
        argv = [
            str(LITELLM_BIN), "--config", str(workdir / "litellm.yaml"), "--host", HOST,
            "--port", str(self.port), "--num_workers", "1",
            "--log_config", str(workdir / "log.json"),
        ]  # fmt: skip
        return argv, env


def _run(argv: list[str], timeout: float = 60.0) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unavailable ({exc})"
    return (out.stdout or out.stderr).strip()


def litellm_version() -> str | None:
    if not LITELLM_PYTHON.exists():
        return None
    text = _run(
        [str(LITELLM_PYTHON), "-c", "import importlib.metadata as m; print(m.version('litellm'))"]
    )
    return text or None


def ccr_version() -> str | None:
    package = CCR_CLI.parent.parent / "package.json"
    if not package.exists():
        return None
    version: str = json.loads(package.read_text())["version"]
    return version


def node_version() -> str:
    return _run(["node", "--version"])


def install_peer(name: str, timeout: float = 1800.0) -> dict[str, Any]:
    """Run benches/peers/<name>/install.sh (idempotent); report, never raise."""
    script = PEERS / name / "install.sh"
    log = PEERS / name / "install.log"
    start = time.monotonic()
    try:
        with open(log, "wb") as out:
            proc = subprocess.run(
                ["bash", str(script)],
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=timeout,
                check=False,
            )
        ok = proc.returncode == 0
        detail = f"exit code {proc.returncode}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        ok = False
        detail = f"{type(exc).__name__}: {exc}"
    tail = log.read_bytes()[-1500:].decode("utf-8", "replace") if log.exists() else ""
    return {
        "installed": ok,
        "detail": detail,
        "seconds": round(time.monotonic() - start, 1),
        "log_tail": tail if not ok else tail[-300:],
    }
