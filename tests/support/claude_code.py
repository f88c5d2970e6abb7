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
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hydra_proxy.mock import MockServer
from support.pinned_cli import E2E_DIR, CliRun, PinnedCli, headless_env, json_lines, run_headless
from support.servers import ProxyServer

VERSION = "2.1.328"
NEWEST = "2.1.332"  # the newest on npm, in a prefix of its own
PACKAGE = "@anthropic-ai/claude-code"
# Each pinned version and the npm prefix `tests/run` installs it into.
VERSIONS = {VERSION: E2E_DIR, NEWEST: E2E_DIR / "claude-code-newest"}
SKIP_ENV = "HYDRA_SKIP_CLAUDE_CODE"
DUMMY_API_KEY = "sk-ant-hydra-e2e-dummy-key"
TIMEOUT = 120.0


def require_claude(pinned: str = VERSION) -> Path:
    """A pinned CLI binary (`VERSIONS`). Missing or another version: the test fails, or is
    skipped when HYDRA_SKIP_CLAUDE_CODE=1."""
    cli = PinnedCli("Claude Code CLI", PACKAGE, pinned, "claude", SKIP_ENV, VERSIONS[pinned])
    return cli.require()


def claude_env(base_url: str, home: str, api_key: str = DUMMY_API_KEY) -> dict[str, str]:
    """The environment Claude Code runs in: built from scratch, offline, non-interactive
    (its Bash tool runs commands in the user's shell)."""
    return {
        **headless_env(home, shell=True),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": api_key,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }


@dataclass
class ClaudeRun(CliRun):
    """One finished (or timed-out) `claude -p` run."""

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

    def report(self, limit: int = 3000, label: str = "Claude Code", detail: str = "") -> str:
        events = f"--- {label} events ---\n{self.summary()}\n{detail}"
        return super().report(limit, label, events)


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
        run = run_headless(
            argv,
            {**claude_env(base_url, home, api_key), **(env or {})},
            work if cwd is None else cwd,
            timeout,
        )
    return ClaudeRun(**vars(run), events=json_lines(run.stdout))


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
