"""Gemini CLI itself, end to end: the pinned CLI (npm @google/gemini-cli, installed by
tests/run into .e2e/) runs a real `run_shell_command` tool loop in `--yolo -p` mode
through the proxy's Gemini API, on a Chat upstream and on an Anthropic upstream with
thinking (the mock upstream, scripted). The command really runs (its output is made by
the shell, not written in the command), its output reaches the upstream, the answer is
printed, and on Anthropic Claude's signed thinking comes back intact on the second turn,
carried by the CLI in the functionCall part's thoughtSignature.

The CLI is found at $HYDRA_GEMINI_CLI, else .e2e/node_modules/.bin/gemini. It runs with a
throwaway HOME (API-key auth, no Google account) and a throwaway workspace.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hydra_proxy.mock import MockServer
from support.pinned_cli import PinnedCli
from support.servers import ProxyServer

pytestmark = pytest.mark.e2e

GEMINI_CLI = PinnedCli(
    "Gemini CLI", "@google/gemini-cli", "0.61.0", "gemini", "HYDRA_SKIP_GEMINI_CLI"
)
BINARY_ENV = "HYDRA_GEMINI_CLI"  # another binary of the pinned version, at this path
MODEL = "gemini-2.5-pro"  # a named model: no model-router request first

TAG = "[hydra-e2e]"  # in the prompt: only requests of this conversation carry it
PROMPT = f"{TAG} Run the marker command with run_shell_command and tell me what it printed."
CALL_ID = "call_hydra_gemini_1"
COMMAND = "echo hydra-e2e-marker | tr a-z A-Z"
OUTPUT = "HYDRA-E2E-MARKER"  # only the shell makes this out of COMMAND
ARGUMENTS = {"command": COMMAND, "description": "Print the end-to-end test marker"}
FINAL = "FINAL-ANSWER-42: the command printed HYDRA-E2E-MARKER."
REASONING = "The user wants the marker. I will run it with run_shell_command — ünïcödé 🐍."
SIGNATURE = "EqQBCkYIBxgCKkDhydraE2eSignedThinking0123456789+/=="


def require_gemini() -> Path:
    binary = os.environ.get(BINARY_ENV)
    if not binary:
        return GEMINI_CLI.require()
    try:
        found = subprocess.run(
            [binary, "--version"], capture_output=True, text=True, timeout=60
        ).stdout.strip()
    except OSError:
        found = ""
    if found == GEMINI_CLI.version:
        return Path(binary)
    GEMINI_CLI.missing(f"version {found} is there" if found else "it is not there", binary)


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


def run_gemini(binary: Path, proxy: ProxyServer, timeout: float = 240) -> Run:
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as work:
        (Path(home) / ".gemini").mkdir()
        settings = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
        (Path(home) / ".gemini" / "settings.json").write_text(json.dumps(settings))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI", "GOOGLE"))}
        env |= {
            "HOME": home,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "GEMINI_API_KEY": "client-gemini-key",
            "GOOGLE_GEMINI_BASE_URL": proxy.url,
            "NO_COLOR": "1",
        }
        done = subprocess.run(
            [str(binary), "--yolo", "-m", MODEL, "-p", PROMPT],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    return Run(done.returncode, done.stdout, done.stderr)


@pytest.fixture(scope="module")
def gemini() -> Path:
    return require_gemini()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


def turns(**first: Any) -> list[dict[str, Any]]:
    return [
        {
            "text": "Running the marker command.",
            "tool_calls": [{"id": CALL_ID, "name": "run_shell_command", "arguments": ARGUMENTS}],
            "chunk_size": 7,
            "match": {"has_tools": True, "contains": TAG},
            **first,
        },
        {"text": FINAL, "match": {"contains": [TAG, OUTPUT]}},  # only after the tool ran
    ]


def scripted(mock: MockServer, path: str) -> list[dict[str, Any]]:
    return [r for r in mock.requests() if r["path"] == path and r.get("reply") == "script"]


def check_loop(run: Run, requests: list[dict[str, Any]]) -> None:
    assert run.returncode == 0, run.stderr[-3000:]
    assert FINAL in run.stdout, (run.stdout[-2000:], run.stderr[-2000:])
    assert len(requests) == 2, [r["path"] for r in requests]
    first = json.dumps(requests[0]["body"], ensure_ascii=False)
    assert "run_shell_command" in first and OUTPUT not in first
    # the shell's output (not the command's text) reached the upstream
    assert OUTPUT in json.dumps(requests[1]["body"], ensure_ascii=False)


def test_tool_loop_on_a_chat_upstream(gemini: Path, mock: MockServer, impl: str) -> None:
    with ProxyServer(mock.url + "/v1", impl=impl) as proxy:
        mock.script(turns())
        run = run_gemini(gemini, proxy)
        requests = scripted(mock, "/v1/chat/completions")
        check_loop(run, requests)
        messages = requests[1]["body"]["messages"]
        calls = [m for m in messages if m["role"] == "assistant" and m.get("tool_calls")]
        assert calls[-1]["tool_calls"][0]["id"] == CALL_ID
        answer = next(m for m in messages if m["role"] == "tool")
        assert answer["tool_call_id"] == CALL_ID and OUTPUT in answer["content"]
        assert "client-gemini-key" not in proxy.log_tail()


def test_tool_loop_on_anthropic_with_signed_thinking(
    gemini: Path, mock: MockServer, impl: str
) -> None:
    env = {"ANTHROPIC_API_KEY": "sk-ant-upstream-SECRET"}
    with ProxyServer(mock.url, "--provider", "anthropic", impl=impl, env=env) as proxy:
        mock.script(turns(reasoning=REASONING, signature=SIGNATURE))
        run = run_gemini(gemini, proxy)
        requests = scripted(mock, "/v1/messages")
        check_loop(run, requests)
        first, second = (r["body"] for r in requests)
        assert first["thinking"]["type"] == "enabled"  # Gemini CLI's thinkingConfig
        assert second["thinking"]["type"] == "enabled"  # the loop's thinking was restored
        assistant = next(m for m in second["messages"] if m["role"] == "assistant")
        thinking, *rest = assistant["content"]
        assert thinking == {"type": "thinking", "thinking": REASONING, "signature": SIGNATURE}
        call = next(b for b in rest if b["type"] == "tool_use")
        assert call["id"] == CALL_ID and call["input"] == ARGUMENTS
        result = next(
            m for m in second["messages"] if m["role"] == "user" and m is not second["messages"][0]
        )
        assert (
            result["content"][0]["type"] == "tool_result"
            and result["content"][0]["tool_use_id"] == CALL_ID
        )
