"""Claude Code, the real CLI, as a test client of the proxy.

`tests/run` installs the pinned npm package `@anthropic-ai/claude-code` into `.e2e/`
(gitignored). The tests need it: when it is missing they fail, unless
``HYDRA_SKIP_CLAUDE_CODE=1`` says explicitly to skip them.

:func:`run_claude` runs it headless (``claude -p PROMPT --allowedTools Bash``) against a
base URL, offline and non-interactive: a throwaway ``HOME`` and working directory, a dummy
``ANTHROPIC_API_KEY``, no telemetry, auto-updater, error reporting or other nonessential
traffic, no MCP servers, no session files, and an environment built from scratch (nothing
of the caller's ``ANTHROPIC_*``/``CLAUDE_*`` leaks in). Output is ``stream-json``, so a test
can see what Claude Code itself received (thinking blocks, tool results) and its result.
:func:`explained` turns a failed assertion into a report with Claude Code's output, the
proxy log and what the mock upstream recorded.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from hydra_proxy.mock import MockServer
from support.servers import ProxyServer

VERSION = "2.1.328"
NEWEST = "2.1.332"  # the newest on npm, in a prefix of its own
PACKAGE = "@anthropic-ai/claude-code"
ROOT = Path(__file__).resolve().parents[2]
E2E_DIR = ROOT / ".e2e"
CLAUDE_BIN = E2E_DIR / "node_modules" / ".bin" / "claude"
# Each pinned version and the npm prefix `tests/run` installs it into.
VERSIONS = {VERSION: E2E_DIR, NEWEST: E2E_DIR / "claude-code-newest"}
SKIP_ENV = "HYDRA_SKIP_CLAUDE_CODE"
DUMMY_API_KEY = "sk-ant-hydra-e2e-dummy-key"
TIMEOUT = 120.0


def installed_version(prefix: Path = E2E_DIR) -> str | None:
    try:
        manifest = json.loads((prefix / "node_modules" / PACKAGE / "package.json").read_text())
    except (OSError, ValueError):
        return None
    version = manifest.get("version")
    return version if isinstance(version, str) else None


def require_claude(pinned: str = VERSION) -> Path:
    """A pinned CLI binary (`VERSIONS`). Missing or another version: the test fails, or is
    skipped when HYDRA_SKIP_CLAUDE_CODE=1."""
    prefix = VERSIONS[pinned]
    binary = prefix / "node_modules" / ".bin" / "claude"
    version = installed_version(prefix)
    if binary.exists() and os.access(binary, os.X_OK) and version == pinned:
        return binary
    found = f"version {version} is installed" if version else "it is not installed"
    reason = (
        f"the optional test dependency Claude Code CLI (npm {PACKAGE}@{pinned}) is needed "
        f"at {binary.relative_to(ROOT)}, but {found}; `bash tests/run` installs it "
        f"(npm install --prefix {prefix.relative_to(ROOT)} {PACKAGE}@{pinned})"
    )
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(reason)
    pytest.fail(f"{reason}; set {SKIP_ENV}=1 to skip these tests", pytrace=False)


def claude_env(base_url: str, home: str, api_key: str = DUMMY_API_KEY) -> dict[str, str]:
    """The environment Claude Code runs in: built from scratch, offline, non-interactive."""
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": home,
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": api_key,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }
    bash = shutil.which("bash")
    if bash:
        env["SHELL"] = bash  # the Bash tool runs commands in the user's shell
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    return env


@dataclass
class ClaudeRun:
    """One finished (or timed-out) `claude -p` run."""

    argv: list[str] = field(repr=False)
    returncode: int | None
    stdout: str = field(repr=False)
    stderr: str = field(repr=False)
    elapsed: float
    timed_out: bool
    events: list[dict[str, Any]] = field(default_factory=list, repr=False)
    """The stream-json events Claude Code printed, in order."""

    def result(self) -> dict[str, Any]:
        """The final ``{"type": "result", ...}`` event ({} when there is none)."""
        return next((e for e in reversed(self.events) if e.get("type") == "result"), {})

    def blocks(self, role: str, block_type: str) -> list[dict[str, Any]]:
        """Every content block of this type in the ``assistant``/``user`` message events."""
        out: list[dict[str, Any]] = []
        for event in self.events:
            message = event.get("message")
            if event.get("type") != role or not isinstance(message, dict):
                continue
            content = message.get("content")
            if isinstance(content, list):
                out += [b for b in content if isinstance(b, dict) and b.get("type") == block_type]
        return out

    def summary(self, width: int = 160) -> str:
        """One line per event: its type, and the content blocks or result it carries."""
        lines = []
        for event in self.events:
            kind = str(event.get("type"))
            if event.get("subtype"):
                kind += f"/{event['subtype']}"
            message = event.get("message")
            if isinstance(message, dict) and isinstance(message.get("content"), list):
                detail = " ".join(json.dumps(b, ensure_ascii=False) for b in message["content"])
            elif kind.startswith("result"):
                detail = json.dumps(
                    {k: event.get(k) for k in ("is_error", "num_turns", "result", "usage")}
                )
            else:
                continue  # init, thinking-token counters...: in the raw tail if needed
            lines.append(f"  {kind}: {detail}"[:width])
        return "\n".join(lines) or "  (no stream-json events)"

    def report(self, limit: int = 3000) -> str:
        status = "TIMED OUT" if self.timed_out else f"exit code {self.returncode}"
        return (
            f"$ {' '.join(self.argv)}\n-> {status} after {self.elapsed:.1f}s\n"
            f"--- Claude Code events ---\n{self.summary()}\n"
            f"--- Claude Code stdout (tail) ---\n{self.stdout[-limit:]}\n"
            f"--- Claude Code stderr (tail) ---\n{self.stderr[-limit:]}"
        )


def parse_events(stdout: str) -> list[dict[str, Any]]:
    events = []
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue  # not an event (Claude Code prints nothing else in stream-json mode)
        if isinstance(event, dict):
            events.append(event)
    return events


def run_claude(
    claude: Path,
    prompt: str,
    base_url: str,
    *,
    allowed_tools: Sequence[str] = ("Bash",),
    max_turns: int = 4,
    timeout: float = TIMEOUT,
    extra_args: Sequence[str] = (),
    cwd: str | os.PathLike[str] | None = None,
    api_key: str = DUMMY_API_KEY,
    session_dir: Path | None = None,
    env: dict[str, str] | None = None,
) -> ClaudeRun:
    """`claude -p PROMPT` against `base_url` in a throwaway HOME and working directory
    (`cwd`: a project directory of the caller's instead). With `session_dir` the HOME and
    the working directory are kept there and the session is recorded, so a later run with
    ``--continue`` in `extra_args` goes on with it; `env`: more variables."""
    argv = [
        str(claude),
        "-p",
        prompt,
        "--allowedTools",
        ",".join(allowed_tools),
        "--output-format",
        "stream-json",
        "--verbose",  # stream-json needs it in print mode
        "--max-turns",
        str(max_turns),
        "--strict-mcp-config",  # no MCP servers from any settings file
        *(["--no-session-persistence"] if session_dir is None else []),
        *extra_args,
    ]
    with contextlib.ExitStack() as stack:
        if session_dir is None:
            home = stack.enter_context(tempfile.TemporaryDirectory(prefix="claude-home-"))
            work = stack.enter_context(tempfile.TemporaryDirectory(prefix="claude-work-"))
        else:
            home, work = str(session_dir / "home"), str(session_dir / "work")
            for path in (home, work):
                Path(path).mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        proc = subprocess.Popen(
            argv,
            env={**claude_env(base_url, home, api_key), **(env or {})},
            cwd=work if cwd is None else cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group: a timeout kills its tools too
        )
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        elapsed = time.monotonic() - start
    stdout = out.decode("utf-8", "replace")
    return ClaudeRun(
        argv=argv,
        returncode=None if timed_out else proc.returncode,
        stdout=stdout,
        stderr=err.decode("utf-8", "replace"),
        elapsed=elapsed,
        timed_out=timed_out,
        events=parse_events(stdout),
    )


def describe_requests(mock: MockServer) -> str:
    """One line per request the mock upstream recorded, and the unconsumed turns."""
    try:
        recorded = mock.requests()
        pending = mock.pending()
    except Exception as exc:  # a report must not hide the real failure
        return f"(mock upstream unreachable: {exc})"
    lines = [f"{len(recorded)} request(s), {pending} scripted turn(s) left unconsumed"]
    for r in recorded:
        body = r.get("body") or {}
        messages = body.get("messages")
        messages = messages if isinstance(messages, list) else []
        roles = ",".join(str(m.get("role")) for m in messages if isinstance(m, dict))
        query = f"?{r['query']}" if r.get("query") else ""
        lines.append(
            f"  {r['method']} {r['path']}{query} model={body.get('model')!r} "
            f"reply={r.get('reply')} tools={len(body.get('tools') or [])} "
            f"stream={body.get('stream')} roles=[{roles}]"
        )
    return "\n".join(lines)


@contextlib.contextmanager
def explained(run: ClaudeRun, proxy: ProxyServer, mock: MockServer) -> Iterator[None]:
    """Re-raise a failed assertion with everything needed to see what went wrong."""
    try:
        yield
    except AssertionError as exc:
        raise AssertionError(
            f"{exc}\n\n{run.report()}\n"
            f"--- proxy log (tail) ---\n{proxy.log_tail()}\n"
            f"--- mock upstream requests ---\n{describe_requests(mock)}"
        ) from exc
