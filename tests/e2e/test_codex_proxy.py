"""Codex CLI through the proxy, end to end: `codex exec` speaks Responses to the proxy's
`POST /v1/responses`, which translates onto a Chat upstream (Codex on DeepSeek, Qwen,
Ollama) and onto an Anthropic upstream with thinking (Codex on Claude). The mock upstream
asks for `exec_command`, Codex really runs it, and the next upstream request carries the
command's output; on Anthropic, the signed thinking comes back intact on the second turn
(through the reasoning item's `encrypted_content` carrier). Harness: codex_cli.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_codex_cli import (
    CALL_ID,
    COMMAND,
    FINAL,
    OUTPUT,
    PROMPT,
    REASONING,
    explained,
    final_turn,
    tool_call_turn,
)

from hydra_proxy.mock import MockServer
from support.codex_cli import require_codex, run_codex
from support.servers import ProxyServer

pytestmark = pytest.mark.e2e

SIGNATURE = "EqQBCkYIBRgCKkDhydra-codex-anthropic-signature=="


@pytest.fixture(scope="module")
def codex() -> Path:
    return require_codex()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def scripted(mock: MockServer, path: str) -> list[dict[str, Any]]:
    return [r for r in mock.requests() if r["path"] == path and r.get("reply") == "script"]


def check_codex_ran_the_command(run: Any) -> None:
    assert not run.timed_out, "Codex did not finish in time"
    assert run.returncode == 0, f"Codex exited with {run.returncode}"
    assert run.workdir_files.get("out.txt") == OUTPUT + "\n"
    executed = run.items("command_execution")
    assert len(executed) == 1 and OUTPUT in executed[0]["aggregated_output"]
    assert run.messages() == [FINAL]


def test_codex_on_a_chat_upstream(codex: Path, mock: MockServer, impl: str) -> None:
    mock.clear()
    turn = {k: v for k, v in tool_call_turn().items() if k != "signature"}
    with ProxyServer(mock.url + "/v1", impl=impl) as proxy:
        mock.script([turn, final_turn()])
        # A Chat upstream cannot search: Codex's web search is turned off, as the proxy's
        # refusal of it says (test_codex_web_search.py).
        run = run_codex(codex, PROMPT, proxy.url + "/v1", extra_config=['web_search="disabled"'])
        with explained(run, mock):
            check_codex_ran_the_command(run)
            assert mock.pending() == 0, "not every scripted turn was requested"
            first, second = (r["body"] for r in scripted(mock, "/v1/chat/completions"))
            assert first["stream"] is True
            names = [t["function"]["name"] for t in first["tools"]]
            assert "exec_command" in names and "web_search" not in json.dumps(names)
            messages = second["messages"]
            assistant = next(m for m in messages if m.get("tool_calls"))
            call = assistant["tool_calls"][0]
            assert (call["id"], call["function"]["name"]) == (CALL_ID, "exec_command")
            assert json.loads(call["function"]["arguments"]) == {"cmd": COMMAND}
            tool = next(m for m in messages if m["role"] == "tool")
            assert tool["tool_call_id"] == CALL_ID and OUTPUT in json.dumps(tool["content"])
            # the upstream's reasoning went to Codex as a reasoning item, shown as such
            assert [r["text"] for r in run.items("reasoning")] == [REASONING]


def test_codex_on_an_anthropic_upstream_with_thinking(
    codex: Path, mock: MockServer, impl: str
) -> None:
    mock.clear()
    args = ("--provider", "anthropic")
    env = {"ANTHROPIC_API_KEY": "sk-ant-upstream-SECRET"}
    with ProxyServer(mock.url, *args, impl=impl, env=env) as proxy:
        mock.script([{**tool_call_turn(), "signature": SIGNATURE}, final_turn()])
        run = run_codex(codex, PROMPT, proxy.url + "/v1")
        with explained(run, mock):
            check_codex_ran_the_command(run)
            assert mock.pending() == 0, "not every scripted turn was requested"
            first, second = (r["body"] for r in scripted(mock, "/v1/messages"))
            assert "exec_command" in [t["name"] for t in first["tools"]]
            messages = second["messages"]
            assistant = next(
                m
                for m in messages
                if m["role"] == "assistant"
                and any(b.get("type") == "tool_use" for b in m["content"])
            )
            thinking = [b for b in assistant["content"] if b["type"] == "thinking"]
            assert thinking == [
                {"type": "thinking", "thinking": REASONING, "signature": SIGNATURE}
            ], assistant["content"]
            assert assistant["content"][0]["type"] == "thinking"
            use = next(b for b in assistant["content"] if b["type"] == "tool_use")
            assert (use["id"], use["name"], use["input"]) == (
                CALL_ID,
                "exec_command",
                {"cmd": COMMAND},
            )
            result = next(
                b
                for m in messages
                if m["role"] == "user" and isinstance(m["content"], list)
                for b in m["content"]
                if b.get("type") == "tool_result"
            )
            assert result["tool_use_id"] == CALL_ID and OUTPUT in json.dumps(result["content"])
