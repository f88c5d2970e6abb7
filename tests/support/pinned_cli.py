"""What every real-CLI harness shares (Claude Code, Codex, opencode, Qwen Code, Gemini CLI):
the pinned npm package `tests/run` installs into `.e2e/` (gitignored), the test's failure
(or, with the CLI's ``HYDRA_SKIP_*`` variable set to 1, its skip) when another version or
none is there, the environment built from scratch, and one headless run in its own
process group, killed whole at the timeout."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import pytest

ROOT = Path(__file__).resolve().parents[2]
E2E_DIR = ROOT / ".e2e"


@dataclass(frozen=True)
class PinnedCli:
    """One npm package at the version the tests are written against."""

    name: str  # as a reader knows it ("Claude Code CLI")
    package: str
    version: str
    binary: str  # its name in node_modules/.bin
    skip_env: str
    prefix: Path = E2E_DIR  # the npm prefix `tests/run` installs it into

    @property
    def path(self) -> Path:
        return self.prefix / "node_modules" / ".bin" / self.binary

    def installed_version(self) -> str | None:
        manifest = self.prefix / "node_modules" / self.package / "package.json"
        try:
            version = json.loads(manifest.read_text()).get("version")
        except (OSError, ValueError, AttributeError):
            return None
        return version if isinstance(version, str) else None

    def require(self) -> Path:
        """The pinned binary. Missing or another version: the test fails, or is skipped when
        its HYDRA_SKIP_* variable is 1."""
        version = self.installed_version()
        if os.access(self.path, os.X_OK) and version == self.version:
            return self.path
        self.missing(f"version {version} is installed" if version else "it is not installed")

    def missing(self, found: str, where: str | None = None) -> NoReturn:
        """Fail (or skip) the test: the CLI is needed at `where` but `found` is what is."""
        at = where or str(self.path.relative_to(ROOT))
        prefix = self.prefix.relative_to(ROOT)
        reason = (
            f"the optional test dependency {self.name} (npm {self.package}@{self.version}) "
            f"is needed at {at}, but {found}; `bash tests/run` installs it "
            f"(npm install --prefix {prefix} {self.package}@{self.version})"
        )
        if os.environ.get(self.skip_env) == "1":
            pytest.skip(reason)
        pytest.fail(f"{reason}; set {self.skip_env}=1 to skip these tests", pytrace=False)


def headless_env(home: str | Path, *, shell: bool = False) -> dict[str, str]:
    """An environment built from scratch (nothing of the caller's keys or base URLs leaks
    in): PATH, a throwaway HOME, no colours or terminal; `shell`: SHELL set to bash, for
    a CLI whose shell tool runs commands in the user's shell."""
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
    }
    bash = shutil.which("bash") if shell else None
    if bash:
        env["SHELL"] = bash
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    return env


@dataclass
class CliRun:
    """One finished (or timed-out) headless run."""

    argv: list[str] = field(repr=False)
    returncode: int | None  # None: timed out
    stdout: str = field(repr=False)
    stderr: str = field(repr=False)
    elapsed: float
    timed_out: bool

    def report(self, limit: int = 3000, label: str = "", detail: str = "") -> str:
        """The command, how it ended, `detail` and the tails of its output."""
        status = "TIMED OUT" if self.timed_out else f"exit code {self.returncode}"
        label = f"{label} " if label else ""
        return (
            f"$ {' '.join(self.argv)}\n-> {status} after {self.elapsed:.1f}s\n{detail}"
            f"--- {label}stdout (tail) ---\n{self.stdout[-limit:]}\n"
            f"--- {label}stderr (tail) ---\n{self.stderr[-limit:]}"
        )


def run_headless(
    argv: Sequence[str], env: Mapping[str, str], cwd: str | os.PathLike[str], timeout: float
) -> CliRun:
    """Run `argv` to its end, stdin closed, in its own process group so that a timeout
    kills the tools it started too."""
    start = time.monotonic()
    proc = subprocess.Popen(
        list(argv),
        env=dict(env),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
    return CliRun(
        argv=list(argv),
        returncode=None if timed_out else proc.returncode,
        stdout=out.decode("utf-8", "replace"),
        stderr=err.decode("utf-8", "replace"),
        elapsed=time.monotonic() - start,
        timed_out=timed_out,
    )


def json_lines(stdout: str) -> list[dict[str, Any]]:
    """The JSON objects a CLI printed one a line (other lines skipped)."""
    events = []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events
