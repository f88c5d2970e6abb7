"""opencode and Qwen Code themselves, end to end, on Claude through the proxy: each pinned
CLI (harness in chat_agents.py) runs a thinking tool loop through ``/v1/chat/completions``
to the mock's Anthropic Messages dialect.

The first scripted turn thinks (signed), says a line and calls the agent's own shell tool
with a command whose output only a shell makes; the agent runs it and sends the output
back; the second turn, which only a request carrying that output matches, thinks again and
answers. Checked: the command ran and its output reached the upstream; the answer is
printed; the second request restores the first turn's thinking with its signature (the
continuation suffix went through the agent and back) and keeps thinking on; both requests
carry prompt-cache breakpoints; the proxy logged no tool turn without thinking.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from hydra_proxy.mock import MockServer
from support.chat_agents import AGENTS, Agent, breakpoints, run_agent
from support.servers import ProxyServer

pytestmark = pytest.mark.e2e

NONCE = secrets.randbelow(10**6)
COMMAND = f"echo hydra-{NONCE}-$((6*7))"
OUTPUT = f"hydra-{NONCE}-42"  # only the shell makes this out of COMMAND
REASONING = "I run the marker command with the shell — ünïcödé."
SIGNATURE = "EqQBCkYIBxgCKkBhydra-e2e-signature=="
FINAL = f"FINAL-ANSWER: the command printed {OUTPUT}."


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(scope="module")
def proxy(mock: MockServer) -> Iterator[ProxyServer]:
    env = {"ANTHROPIC_API_KEY": "sk-ant-hydra-e2e-dummy"}
    with ProxyServer(mock.url, "--provider", "anthropic", env=env) as server:
        yield server


def script(agent: Agent, tag: str) -> list[dict[str, Any]]:
    arguments: dict[str, Any] = {"command": COMMAND, "description": "Print the marker"}
    if agent.shell_tool == "run_shell_command":
        arguments["is_background"] = False
    return [
        {
            "reasoning": REASONING,
            "signature": SIGNATURE,
            "text": "Running the marker command.",
            "tool_calls": [{"id": "toolu_hydra_e2e_1", "name": agent.shell_tool,
                            "arguments": arguments}],
            "match": {"has_tools": True, "contains": tag},
        },
        {
            "reasoning": "The shell printed the marker.",
            "signature": SIGNATURE + "2",
            "text": FINAL,
            "match": {"has_tools": True, "contains": [tag, OUTPUT]},
        },
    ]  # fmt: skip


def first_block(body: dict[str, Any], role: str) -> dict[str, Any]:
    message = next(m for m in body["messages"] if m["role"] == role)
    content = message["content"]
    return content[0] if isinstance(content, list) else {"type": "text", "text": content}


@pytest.mark.parametrize("agent", AGENTS, ids=lambda a: a.binary)
def test_thinking_tool_loop_on_claude(agent: Agent, mock: MockServer, proxy: ProxyServer) -> None:
    cli = agent.require()
    assert cli.exists()
    tag = f"[hydra-{agent.binary}-{secrets.token_hex(4)}]"
    mock.clear()
    mock.script(script(agent, tag))
    run = run_agent(agent, f"{tag} Run the marker command with the shell and say what it printed.",
                    proxy.url + "/v1")  # fmt: skip
    explain = f"{run.report()}\n--- proxy log ---\n{proxy.log_tail()}"
    assert run.returncode == 0 and not run.timed_out, explain
    assert FINAL in run.stdout, explain
    assert mock.pending() == 0, f"not every scripted turn was asked for\n{explain}"

    sent = [
        r for r in mock.requests() if r["path"] == "/v1/messages" and tag in json.dumps(r["body"])
    ]
    tool_loop = [r for r in sent if r["body"].get("tools")]
    assert len(tool_loop) == 2, explain
    first, second = (r["body"] for r in tool_loop)
    assert all(r["headers"].get("x-api-key") == "<redacted>" for r in tool_loop)
    # The command ran; its output went back as the tool's result.
    results = [b for m in second["messages"] if isinstance(m["content"], list)
               for b in m["content"] if b["type"] == "tool_result"]  # fmt: skip
    assert results and OUTPUT in json.dumps(results[-1]), explain
    # Thinking asked for, and kept on the tool turn: the first turn's signed thinking is back.
    assert first["thinking"]["type"] == "enabled" and second["thinking"]["type"] == "enabled"
    assistant = [m for m in second["messages"] if m["role"] == "assistant"][-1]
    assert assistant["content"][0] == {"type": "thinking", "thinking": REASONING,
                                       "signature": SIGNATURE}, explain  # fmt: skip
    assert assistant["content"][-1]["type"] == "tool_use"
    assert "hydra-continuation" not in json.dumps(second), "the suffix is never forwarded"
    # Prompt caching asked of Claude on every turn.
    assert breakpoints(first) >= 1 and breakpoints(second) >= 1, explain
    assert "thinking turned off" not in proxy.log_text(), explain
