"""The CLI on bad configurations: a clear message, exit code 2, no traceback, nothing
listening; `config check`; a port already in use."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hydra_proxy.config import check_port_free
from hydra_proxy.mock import MockServer
from hydra_proxy.mock.server import free_port
from support.servers import PYTHON_DIR, ProxyServer

SECRET = "sk-deepseek-SECRET-000000001"
SECRET_2 = "sk-deepseek-SECRET-000000002"


def hydra(
    *args: str, home: Path, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hydra_proxy", *args],
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(home),
            "PYTHONPATH": str(PYTHON_DIR),
            **(env or {}),
        },
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def refused(result: subprocess.CompletedProcess[str], port: int | None = None) -> str:
    """stderr of a run that must have failed cleanly, having listened on nothing."""
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    assert "listening on" not in result.stderr, result.stderr
    if port is not None:
        assert not listening(port)
    return result.stderr


TEAM = """
[providers.deepseek]
api_key_env = ["DEEPSEEK_KEY_1", "DEEPSEEK_KEY_2"]

[[routes]]
name = "background"
match = "*haiku*"
provider = "deepseek"
model = "deepseek-chat"
fallback = ["ollama"]

[[routes]]
match = "claude-*"
provider = "anthropic"
"""


def test_config_check_prints_routes_and_masked_keys(tmp_path: Path) -> None:
    config = tmp_path / "hydra.toml"
    config.write_text(TEAM, encoding="utf-8")
    env = {
        "DEEPSEEK_KEY_1": SECRET,
        "DEEPSEEK_KEY_2": SECRET_2,
        "ANTHROPIC_API_KEY": "sk-ant-test-0000000000001",
        "OPENAI_API_KEY": "sk-proj-test-00000000009",
        "HYDRA_PROXY_PORT": str(port := free_port()),
    }
    result = hydra("config", "check", "--config", str(config), home=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "1. [background] model *haiku* => deepseek:deepseek-chat -> ollama:deepseek-chat" in out
    assert "2. model claude-* => anthropic:(requested name)" in out
    assert "default: model * => openai:(requested name)\n" in out
    assert (
        "anthropic: anthropic https://api.anthropic.com; key: ANTHROPIC_API_KEY set (sk-…0001)"
        in out
    )
    assert "key: set (2 keys: DEEPSEEK_KEY_1 sk-…0001, DEEPSEEK_KEY_2 sk-…0002)" in out
    assert "ollama: chat http://127.0.0.1:11434/v1; key: no key needed" in out
    assert f"port {port} on 127.0.0.1: free\n" in out
    assert out.rstrip().endswith("config OK")
    assert SECRET not in out + result.stderr and SECRET_2 not in out + result.stderr


def test_the_default_provider_without_a_key_is_a_warning_a_chosen_one_an_error(
    tmp_path: Path,
) -> None:
    config = tmp_path / "hydra.toml"
    config.write_text(TEAM, encoding="utf-8")
    env = {"DEEPSEEK_KEY_2": SECRET_2, "ANTHROPIC_API_KEY": "sk-ant-test-0000000000001"}
    result = hydra("config", "check", "--config", str(config), home=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    assert "key: DEEPSEEK_KEY_2 set (sk-…0002)" in result.stdout
    assert (
        "warning: requests no route claims go to the default provider 'openai', but "
        "OPENAI_API_KEY is not set" in result.stdout
    )
    args = ("config", "check", "--config", str(config), "--provider", "groq")
    stderr = refused(hydra(*args, home=tmp_path, env=env))
    assert "provider 'groq' (used by requests no route claims) has no key: GROQ_API_KEY" in stderr


def test_config_check_fails_with_file_and_line(tmp_path: Path) -> None:
    config = tmp_path / "hydra.toml"
    config.write_text(TEAM.replace('[[routes]]\nmatch = "claude', '[[route]]\nmatch = "claude'))
    result = hydra("config", "check", "--config", str(config), home=tmp_path)
    stderr = refused(result)
    assert f"{config}:12: unknown table [[route]]\n  -> did you mean [[routes]]?" in stderr
    # Keys are checked once the file is valid.
    config.write_text(TEAM, encoding="utf-8")
    stderr = refused(hydra("config", "check", "--config", str(config), home=tmp_path))
    assert (
        f"{config}:2: provider 'deepseek' (used by route 'background') has no key: "
        "DEEPSEEK_KEY_1 or DEEPSEEK_KEY_2 is not set"
    ) in stderr
    assert "provider 'anthropic' (used by [[routes]] #2) has no key: ANTHROPIC_API_KEY" in stderr


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ((), {"HYDRA_PROXY_PORT": "abc"}, "HYDRA_PROXY_PORT=abc: port must be a whole number"),
        (("--port", "99999"), {}, "--port 99999: port must be a whole number from 1 to 65535"),
        (
            (),
            {"HYDRA_PROXY_IMPL": "rust"},
            "HYDRA_PROXY_IMPL=rust: not a valid implementation\n"
            "  -> use one of auto, native, python",
        ),
        (("--provider", "deepsek"), {}, "--provider: unknown provider 'deepsek'"),
    ],
)
def test_serve_refuses_bad_values(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str], message: str
) -> None:
    port = free_port()
    if "--port" not in args and "HYDRA_PROXY_PORT" not in env:
        args = (*args, "--port", str(port))
    stderr = refused(hydra("serve", *args, home=tmp_path, env=env), port)
    assert "hydra-proxy: configuration error, not starting:" in stderr
    assert message in stderr


def test_serve_refuses_a_config_with_errors_and_missing_keys(tmp_path: Path) -> None:
    port = free_port()
    config = tmp_path / "hydra.toml"
    config.write_text('[server]\nprot = 1\n\n[provider.x]\nkind = "chat"\n', encoding="utf-8")
    stderr = refused(
        hydra("serve", "--config", str(config), "--port", str(port), home=tmp_path), port
    )
    assert "2 configuration errors, not starting" in stderr
    assert f"{config}:2: unknown keys in [server]: 'prot'\n  -> did you mean 'port'?" in stderr
    assert f"{config}:4: unknown table [provider.x]\n  -> did you mean [providers.x]?" in stderr
    # A route to a provider without its key: today's silent unauthenticated requests.
    config.write_text(TEAM, encoding="utf-8")
    env = {"ANTHROPIC_API_KEY": "sk-ant-test-0000000000001"}
    stderr = refused(
        hydra("serve", "--config", str(config), "--port", str(port), home=tmp_path, env=env), port
    )
    assert "provider 'deepseek' (used by route 'background') has no key" in stderr


def test_check_port_free(tmp_path: Path) -> None:
    port = free_port()
    assert check_port_free("127.0.0.1", port) is None
    with socket.socket() as holder:
        # As a server that allows port sharing binds: a second listener must still be refused.
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if hasattr(socket, "SO_REUSEPORT"):
            holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        holder.bind(("127.0.0.1", port))
        holder.listen(1)
        assert check_port_free("127.0.0.1", port) == (
            f"port {port} on 127.0.0.1 is already in use (another hydra-proxy?): stop it or "
            "choose another port with --port or HYDRA_PROXY_PORT"
        )
    assert check_port_free("127.0.0.1", port) is None
    assert check_port_free("no-such-host.invalid", port) is not None


def test_a_second_serve_on_the_same_port_is_refused(tmp_path: Path) -> None:
    with MockServer() as mock, ProxyServer(mock.url + "/v1") as proxy:
        result = hydra(
            "serve", "--port", str(proxy.port), home=tmp_path, env={"OPENAI_API_KEY": "sk-x" * 4}
        )
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert f"port {proxy.port} on 127.0.0.1 is already in use (another hydra-proxy?)" in (
            result.stderr
        )
        # config check only notes it (a running proxy is no configuration error).
        env = {"OPENAI_API_KEY": "sk-x" * 4, "HYDRA_PROXY_PORT": str(proxy.port)}
        result = hydra("config", "check", home=tmp_path, env=env)
        assert result.returncode == 0, result.stderr
        assert f"note: port {proxy.port} on 127.0.0.1 is already in use" in result.stdout
