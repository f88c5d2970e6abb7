"""Optional parts checked before listening: a setting that needs an extra that is not
installed (Redis for [cluster], a postgresql:// ledger, tracing) makes `config check` and
`serve` fail at once, in one line naming the extra, with no traceback and nothing
listening; a short admin key is refused the same way."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_cli_config import refused

from hydra_proxy.mock.server import free_port
from support.servers import PYTHON_DIR

KEY = {"OPENAI_API_KEY": "sk-openai-test-000000000001", "HYDRA_USAGE_LEDGER": "off"}

CASES = [
    ("hiredis", '[cluster]\nredis_url = "redis://127.0.0.1:1/0"\n', {}, "cluster"),
    ("psycopg", "", {"HYDRA_USAGE_LEDGER": "postgresql://127.0.0.1:1/usage"}, "postgres"),
    ("opentelemetry", "[usage]\ntracing = true\n", {}, "otel"),
]


def run(
    tmp_path: Path, missing: str, *args: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`hydra-proxy ARGS` where importing `missing` fails as on an install without it."""
    blocked = tmp_path / "blocked"
    blocked.mkdir(exist_ok=True)
    (blocked / f"{missing}.py").write_text(f'raise ImportError("No module named {missing}")\n')
    return subprocess.run(
        [sys.executable, "-m", "hydra_proxy", *args],
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "PYTHONPATH": f"{blocked}:{PYTHON_DIR}",
            **KEY,
            **env,
        },
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(("missing", "toml", "env", "extra"), CASES, ids=[c[3] for c in CASES])
@pytest.mark.parametrize("command", ["config", "serve"])
def test_a_missing_extra_stops_the_start_naming_it(
    tmp_path: Path, missing: str, toml: str, env: dict[str, str], extra: str, command: str
) -> None:
    config = tmp_path / "hydra.toml"
    config.write_text(toml)
    port = free_port()
    args = ("config", "check") if command == "config" else ("serve", "--port", str(port))
    result = run(tmp_path, missing, *args, "--config", str(config), env=env)
    stderr = refused(result, port)
    (line,) = [line for line in stderr.splitlines() if "hydra-proxy[" in line]
    assert f"pip install 'hydra-proxy[{extra}]'" in line
    assert "config OK" not in result.stdout


def test_installed_extras_pass_the_check(tmp_path: Path) -> None:
    config = tmp_path / "hydra.toml"
    config.write_text("[usage]\ntracing = true\n")
    result = run(tmp_path, "nothing_blocked", "config", "check", "--config", str(config), env={})
    assert result.returncode == 0 and "config OK" in result.stdout, result.stderr


@pytest.mark.parametrize("command", ["config", "serve"])
def test_a_short_admin_key_is_a_start_error(tmp_path: Path, command: str) -> None:
    port = free_port()
    args = ("config", "check") if command == "config" else ("serve", "--port", str(port))
    result = run(tmp_path, "nothing_blocked", *args, env={"HYDRA_ADMIN_KEY": "a" * 23})
    stderr = refused(result, port)
    assert "HYDRA_ADMIN_KEY is 23 characters: an admin key needs at least 24" in stderr
    longer = run(tmp_path, "nothing_blocked", "config", "check", env={"HYDRA_ADMIN_KEY": "a" * 24})
    assert longer.returncode == 0, longer.stderr
