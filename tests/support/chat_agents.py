"""Two agent CLIs that speak OpenAI Chat, the real ones, as test clients of the proxy's
``/v1/chat/completions``: opencode (npm ``opencode-ai``) and Qwen Code (npm
``@qwen-code/qwen-code``).

`tests/run` installs both, pinned, into `.e2e/` (gitignored). The tests need them: when one
is missing or another version, its tests fail, unless its ``HYDRA_SKIP_*`` variable says
explicitly to skip them.

Each runs headless, once, against a base URL that ends in ``/v1``, in a throwaway ``HOME``
and working directory, with an environment built from scratch (nothing of the caller's
``OPENAI_*`` leaks in), its telemetry and update checks off, shell commands allowed
without asking, and a timeout:

- opencode: ``opencode run --model hydra/MODEL PROMPT``, its config in
  ``OPENCODE_CONFIG_CONTENT``: a provider ``hydra`` on ``@ai-sdk/openai-compatible`` (which
  opencode bundles) at the base URL, the model with ``reasoningEffort`` set (so it asks
  for thinking), ``permission.bash = "allow"``, ``autoupdate`` and ``share`` off, and
  ``OPENCODE_DISABLE_*`` for the models.dev fetch, LSP downloads, default plugins and
  Claude Code's files.
- Qwen Code: ``qwen -p PROMPT --yolo`` with ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``,
  ``OPENAI_MODEL``, and a ``~/.qwen/settings.json`` that picks the OpenAI auth, turns
  usage statistics, telemetry and update checks off, and sets the reasoning effort
  (sent as OpenRouter's ``reasoning: {"effort": ...}``).
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.pinned_cli import CliRun, PinnedCli, headless_env, run_headless

DUMMY_API_KEY = "sk-hydra-chat-agent-e2e-dummy-key"
MODEL = "claude-sonnet-4-5"
TIMEOUT = 180.0


@dataclass(frozen=True, kw_only=True)
class Agent(PinnedCli):
    """One pinned CLI and how it runs headless."""

    shell_tool: str  # the name of its shell tool, as it offers it
    user_agent: str  # what its User-Agent starts with

    def command(self, prompt: str, base_url: str, home: Path) -> tuple[list[str], dict[str, str]]:
        """The argv and the environment of one headless run."""
        env = {**headless_env(home), "CI": "1"}
        if self.binary == "opencode":
            return [str(self.path), "run", "--model", f"hydra/{MODEL}", prompt], {
                **env,
                **_opencode_env(base_url, home),
            }
        settings = {
            "security": {"auth": {"selectedType": "openai"}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
            "model": {"generationConfig": {"reasoning": {"effort": "high"}}},
        }
        (home / ".qwen").mkdir()
        (home / ".qwen" / "settings.json").write_text(json.dumps(settings))
        env.update(
            OPENAI_BASE_URL=base_url,
            OPENAI_API_KEY=DUMMY_API_KEY,
            OPENAI_MODEL=MODEL,
            QWEN_CODE_SUPPRESS_YOLO_WARNING="1",
        )
        return [str(self.path), "-p", prompt, "--yolo"], env


def _opencode_env(base_url: str, home: Path) -> dict[str, str]:
    config = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "permission": {"bash": "allow", "edit": "allow", "webfetch": "deny"},
        "provider": {
            "hydra": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "hydra",
                "options": {"baseURL": base_url, "apiKey": DUMMY_API_KEY},
                "models": {
                    MODEL: {
                        "name": MODEL,
                        "reasoning": True,
                        "options": {"reasoningEffort": "high"},
                    }
                },
            }
        },
        "model": f"hydra/{MODEL}",
    }
    return {
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "OPENCODE_CONFIG_CONTENT": json.dumps(config),
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_CLAUDE_CODE": "1",
    }


OPENCODE = Agent(
    name="opencode",
    package="opencode-ai",
    version="1.18.33",
    binary="opencode",
    skip_env="HYDRA_SKIP_OPENCODE",
    shell_tool="bash",
    user_agent="opencode/",
)
QWEN_CODE = Agent(
    name="Qwen Code",
    package="@qwen-code/qwen-code",
    version="0.24.4",
    binary="qwen",
    skip_env="HYDRA_SKIP_QWEN_CODE",
    shell_tool="run_shell_command",
    user_agent="QwenCode/",
)
AGENTS = (OPENCODE, QWEN_CODE)


def run_agent(agent: Agent, prompt: str, base_url: str, timeout: float = TIMEOUT) -> CliRun:
    """One headless run of `agent` against `base_url` (ending in ``/v1``)."""
    with (
        tempfile.TemporaryDirectory(prefix="agent-home-") as home,
        tempfile.TemporaryDirectory(prefix="agent-work-") as work,
    ):
        argv, env = agent.command(prompt, base_url, Path(home))
        return run_headless(argv, env, work, timeout)


def breakpoints(body: dict[str, Any]) -> int:
    """The prompt-cache breakpoints of an Anthropic request (the top-level one counts)."""
    count = "cache_control" in body
    system = body.get("system")
    blocks = list(system) if isinstance(system, list) else []
    for message in body.get("messages", []):
        if isinstance(message.get("content"), list):
            blocks.extend(message["content"])
    return count + sum(isinstance(b, dict) and "cache_control" in b for b in blocks)
