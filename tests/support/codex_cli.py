"""Codex CLI, the real one, as a test client of a Responses API (the proxy's
``/v1/responses``, or the mock upstream's directly).

`tests/run` installs the pinned npm package `@openai/codex` into `.e2e/` (gitignored; its
Linux binary comes in the optional dependency `@openai/codex-linux-x64`). The tests need
it: when it is missing they fail, unless ``HYDRA_SKIP_CODEX=1`` says explicitly to skip
them.

:func:`run_codex` runs ``codex exec`` headless against a base URL: a throwaway ``HOME`` and
``CODEX_HOME`` (no user config, auth or session files), an environment built from scratch
(nothing of the caller's ``OPENAI_*``/``CODEX_*`` leaks in), a custom model provider
(``wire_api = "responses"``, its key in an env var, retries set low so a failure ends the
run in seconds), ``--skip-git-repo-check``, ``--ephemeral``, the ``workspace-write``
sandbox with ``approval_policy = "never"`` (shell commands run in the working directory
without asking), ``--json`` events on stdout and a timeout.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.pinned_cli import CliRun, PinnedCli, headless_env, json_lines, run_headless

VERSION = "0.171.0"
PACKAGE = "@openai/codex"
SKIP_ENV = "HYDRA_SKIP_CODEX"
CODEX = PinnedCli("Codex CLI", PACKAGE, VERSION, "codex", SKIP_ENV)
CODEX_BIN = CODEX.path
PROVIDER = "hydra"
KEY_ENV = "HYDRA_CODEX_API_KEY"
DUMMY_API_KEY = "sk-hydra-codex-e2e-dummy-key"
MODEL = "gpt-5.1-codex"
TIMEOUT = 120.0


def require_codex() -> Path:
    """The pinned CLI. Missing or another version: the test fails, or is skipped when
    HYDRA_SKIP_CODEX=1."""
    return CODEX.require()


def provider_config(
    base_url: str,
    *,
    retries: int = 0,
    idle_timeout_ms: int = 30_000,
    remote_compaction: bool = False,
    catalog: bool = False,
) -> str:
    """The ``model_providers.<PROVIDER>`` table (TOML inline) pointing Codex at
    ``base_url`` (which ends in ``/v1``); `remote_compaction`: Codex asks the provider to
    compact (compaction v2, as its built-in provider does); `catalog`: Codex reads its
    model catalog at ``base_url/models``."""
    capabilities = ',capabilities={remote_compaction="v2"}' if remote_compaction else ""
    if catalog:
        capabilities += f',model_catalog_url="{base_url}/models"'
    return (
        f'{{name="{PROVIDER}",base_url="{base_url}",wire_api="responses",'
        f'env_key="{KEY_ENV}",request_max_retries={retries},stream_max_retries={retries},'
        f"stream_idle_timeout_ms={idle_timeout_ms}{capabilities}}}"
    )


def codex_env(home: str, api_key: str, builtin_provider: bool = False) -> dict[str, str]:
    """The environment Codex runs in: built from scratch, non-interactive (the built-in
    provider reads its key from OPENAI_API_KEY)."""
    # exec_command runs commands in the user's shell
    env = {**headless_env(home, shell=True), "CODEX_HOME": str(Path(home) / ".codex")}
    env[KEY_ENV] = api_key
    if builtin_provider:
        env["OPENAI_API_KEY"] = api_key
    return env


@dataclass
class CodexRun(CliRun):
    """One finished (or timed-out) ``codex exec`` run."""

    workdir_files: dict[str, str] = field(default_factory=dict, repr=False)
    """The files the run left in its working directory (name -> text)."""
    events: list[dict[str, Any]] = field(default_factory=list, repr=False)
    """The ``--json`` events Codex printed, in order."""

    def items(self, item_type: str) -> list[dict[str, Any]]:
        """Every completed item of this type (``agent_message``, ``command_execution``,
        ``reasoning``, ``error``...)."""
        return [
            e["item"]
            for e in self.events
            if e.get("type") == "item.completed"
            and isinstance(e.get("item"), dict)
            and e["item"].get("type") == item_type
        ]

    def messages(self) -> list[str]:
        """The agent's final texts, in order."""
        return [str(i.get("text", "")) for i in self.items("agent_message")]

    def failure(self) -> str | None:
        """The ``turn.failed`` error message (None when no turn failed)."""
        failed = [e for e in self.events if e.get("type") == "turn.failed"]
        error = failed[-1].get("error") if failed else None
        return str(error.get("message")) if isinstance(error, dict) else None

    def usage(self) -> dict[str, Any]:
        """The ``turn.completed`` usage ({} when the turn did not complete)."""
        done = [e for e in self.events if e.get("type") == "turn.completed"]
        usage = done[-1].get("usage") if done else None
        return usage if isinstance(usage, dict) else {}

    def report(self, limit: int = 3000, label: str = "Codex", detail: str = "") -> str:
        return super().report(limit, label, detail)


def _read_files(work: Path) -> dict[str, str]:
    out = {}
    for path in sorted(work.iterdir()):
        if path.is_file() and path.stat().st_size <= 1 << 20:
            out[path.name] = path.read_text(encoding="utf-8", errors="replace")
    return out


def run_codex(
    codex: Path,
    prompt: str,
    base_url: str,
    *,
    model: str = MODEL,
    api_key: str = DUMMY_API_KEY,
    retries: int = 0,
    sandbox: str = "workspace-write",
    timeout: float = TIMEOUT,
    extra_config: Sequence[str] = (),
    extra_args: Sequence[str] = (),
    session_dir: Path | None = None,
    resume_last: bool = False,
    remote_compaction: bool = False,
    builtin_provider: bool = False,
    catalog: bool = False,
) -> CodexRun:
    """``codex exec PROMPT`` against ``base_url`` (e.g. ``http://127.0.0.1:PORT/v1``) in a
    throwaway HOME/CODEX_HOME and working directory. ``extra_config`` are more ``-c
    key=value`` overrides (TOML values). With ``session_dir`` the HOME and the working
    directory are kept there and the session is recorded, so a later run with
    ``resume_last`` (``codex exec resume --last PROMPT``) continues it. With
    ``builtin_provider`` Codex uses its own ``openai`` provider pointed at ``base_url``
    (``openai_base_url``), as a user who only changes the URL does."""
    provider = (
        [f'openai_base_url="{base_url}"']
        if builtin_provider
        else [
            f"model_provider={PROVIDER}",
            f"model_providers.{PROVIDER}="
            + provider_config(
                base_url, retries=retries, remote_compaction=remote_compaction, catalog=catalog
            ),
        ]
    )
    config = [
        *provider,
        f'model="{model}"',
        'approval_policy="never"',
        *extra_config,
    ]
    argv = [str(codex), "exec", "--skip-git-repo-check", "--json"]
    argv += [] if session_dir is not None else ["--ephemeral"]
    argv += ["--color", "never", "--sandbox", sandbox]
    argv += ["resume", "--last"] if resume_last else []
    for item in config:
        argv += ["-c", item]
    argv += [*extra_args, prompt]
    with contextlib.ExitStack() as stack:
        if session_dir is None:
            home = stack.enter_context(tempfile.TemporaryDirectory(prefix="codex-home-"))
            work = stack.enter_context(tempfile.TemporaryDirectory(prefix="codex-work-"))
        else:
            home, work = str(session_dir / "home"), str(session_dir / "work")
            Path(work).mkdir(parents=True, exist_ok=True)
        (Path(home) / ".codex").mkdir(parents=True, exist_ok=True)
        run = run_headless(argv, codex_env(home, api_key, builtin_provider), work, timeout)
        files = _read_files(Path(work))
    return CodexRun(**vars(run), workdir_files=files, events=json_lines(run.stdout))


def describe_requests(recorded: list[dict[str, Any]], pending: int) -> str:
    """One line per request a mock upstream recorded (any dialect), and the unconsumed
    turns."""
    lines = [f"{len(recorded)} request(s), {pending} scripted turn(s) left unconsumed"]
    for r in recorded:
        body = r.get("body") or {}
        # a Responses body lists typed input items, a Chat/Anthropic one role-tagged messages
        items = body.get("input", body.get("messages"))
        items = items if isinstance(items, list) else []
        kinds = ",".join(str(i.get("type", i.get("role"))) for i in items if isinstance(i, dict))
        lines.append(
            f"  {r['method']} {r['path']} model={body.get('model')!r} reply={r.get('reply')} "
            f"tools={len(body.get('tools') or [])} stream={body.get('stream')} items=[{kinds}]"
        )
    return "\n".join(lines)
