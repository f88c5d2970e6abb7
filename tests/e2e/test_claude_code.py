"""Claude Code itself, end to end: the pinned CLI runs a real tool loop through the proxy
against the mock OpenAI upstream (harness in claude_code.py).

The mock's scripted turns carry ``match`` conditions, so any request Claude Code sends
besides the scripted conversation (a title or warmup call on a haiku model, a request
without tools) gets the mock's canned reply and consumes nothing; the turns are answered
only by the requests they are meant for. Each scenario runs on both transducer
implementations.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hydra_proxy.mock import MockServer
from support.claude_code import ClaudeRun, explained, require_claude, run_claude
from support.servers import ProxyServer

pytestmark = pytest.mark.e2e

TAG = "[hydra-e2e]"  # in the prompt: only requests of this conversation carry it
PROMPT = f"{TAG} Use the Bash tool to print the marker, then tell me what it printed."
CALL_ID = "call_hydra_e2e_1"
COMMAND = "echo hydra-e2e-$((6*7))"
OUTPUT = "hydra-e2e-42"  # only the shell makes this out of COMMAND
ARGUMENTS = {"command": COMMAND, "description": "Print the end-to-end test marker"}
FINAL = "FINAL-ANSWER-42: the command printed hydra-e2e-42."
REASONING = (
    'The user wants the marker. I will run it with "Bash"\n'
    "and read its output — ünïcödé, emoji 🐍, a backslash \\ and a tab\t."
)
CHAT_PATH = "/v1/chat/completions"


def tool_call_turn(**extra: Any) -> dict[str, Any]:
    return {
        "text": "Running the marker command.",
        "tool_calls": [{"id": CALL_ID, "name": "Bash", "arguments": ARGUMENTS}],
        "usage": {"prompt_tokens": 1200, "completion_tokens": 30, "cached_tokens": 1000},
        "chunk_size": 5,  # the arguments arrive in many input_json_delta fragments
        "match": {"has_tools": True, "contains": TAG},
        **extra,
    }


def final_turn(**extra: Any) -> dict[str, Any]:
    return {
        "text": FINAL,
        "usage": {"prompt_tokens": 1300, "completion_tokens": 12, "cached_tokens": 1000},
        "match": {"contains": [TAG, OUTPUT]},  # only after the tool really ran
        **extra,
    }


@pytest.fixture(scope="module")
def claude() -> Path:
    return require_claude()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


def scripted_requests(mock: MockServer) -> list[dict[str, Any]]:
    """The upstream requests that the scripted turns answered, in order."""
    return [r for r in mock.requests() if r["path"] == CHAT_PATH and r.get("reply") == "script"]


def check_claude_finished(run: ClaudeRun) -> None:
    assert not run.timed_out, "Claude Code did not finish in time"
    assert run.returncode == 0, f"Claude Code exited with {run.returncode}"
    result = run.result()
    assert result.get("subtype") == "success" and result.get("is_error") is False, result
    assert FINAL in result.get("result", ""), result
    assert FINAL in run.stdout, "Claude Code did not print the final text"
    assert result.get("num_turns") == 2, result
    assert result.get("permission_denials") == [], result
    # Claude Code ran the tool itself and saw its real output
    calls = run.blocks("assistant", "tool_use")
    assert [(c["id"], c["name"], c["input"]) for c in calls] == [(CALL_ID, "Bash", ARGUMENTS)]
    results = run.blocks("user", "tool_result")
    assert [r["tool_use_id"] for r in results] == [CALL_ID]
    assert OUTPUT in json.dumps(results[0]["content"]) and not results[0].get("is_error")


def check_system_and_tools(request: dict[str, Any]) -> None:
    body = request["body"]
    roles = [m["role"] for m in body["messages"]]
    assert roles[0] == "system" and "system" not in roles[1:], roles
    system = body["messages"][0]["content"]
    assert isinstance(system, str) and "x-anthropic-billing-header" not in system
    assert TAG in json.dumps(body["messages"][1:], ensure_ascii=False)
    tools = body["tools"]
    assert all(
        t["type"] == "function" and set(t["function"]) >= {"name", "parameters"} for t in tools
    ), tools
    bash = next((t["function"] for t in tools if t["function"]["name"] == "Bash"), None)
    assert bash is not None, [t["function"]["name"] for t in tools]
    assert "command" in bash["parameters"]["properties"]
    assert "cache_control" not in json.dumps(tools)
    headers = request["headers"]
    assert headers.get("authorization") == "<redacted>"  # the upstream key was sent
    assert not any(h.startswith("anthropic-") for h in headers), headers


def check_tool_result_request(request: dict[str, Any]) -> dict[str, Any]:
    """The assistant message that called the tool, after checking the tool message."""
    messages = request["body"]["messages"]
    roles = [m["role"] for m in messages]
    assert roles[0] == "system" and "system" not in roles[1:], roles
    tool_messages = [m for m in messages if m["role"] == "tool"]
    assert len(tool_messages) == 1, messages[1:]
    tool = tool_messages[0]
    assert tool["tool_call_id"] == CALL_ID
    assert OUTPUT in json.dumps(tool["content"]), tool
    assistant = messages[messages.index(tool) - 1]
    assert assistant["role"] == "assistant", messages[1:]
    calls = assistant["tool_calls"]
    assert [(c["id"], c["type"], c["function"]["name"]) for c in calls] == [
        (CALL_ID, "function", "Bash")
    ]
    assert json.loads(calls[0]["function"]["arguments"]) == ARGUMENTS
    return assistant  # type: ignore[no-any-return]


def test_tool_loop(claude: Path, mock: MockServer, impl: str) -> None:
    """Scenario A: a Bash tool call, really run by Claude Code, then the final answer."""
    with ProxyServer(mock.url + "/v1", impl=impl) as proxy:
        mock.script([tool_call_turn(), final_turn()])
        run = run_claude(claude, PROMPT, proxy.url)
        with explained(run, proxy, mock):
            check_claude_finished(run)
            assert mock.pending() == 0, "not every scripted turn was requested"
            first, second = scripted_requests(mock)
            check_system_and_tools(first)
            assert first["body"]["stream"] is True
            assert not any(m["role"] == "tool" for m in first["body"]["messages"])
            check_system_and_tools(second)
            assistant = check_tool_result_request(second)
            assert "Running the marker command." in json.dumps(assistant.get("content"))
            # usage made it through: input = prompt - cached, summed over both turns
            usage = run.result()["usage"]
            assert usage["input_tokens"] == 200 + 300, usage
            assert usage["cache_read_input_tokens"] == 2 * 1000, usage


def test_reasoning_replay_across_a_tool_turn(
    claude: Path, mock: MockServer, impl: str, tmp_path: Path
) -> None:
    """Scenario B: a DeepSeek-style upstream streams reasoning_content before the tool
    call; the proxy signs the thinking block, Claude Code replays it, and the next upstream
    request carries the reasoning back on the assistant tool-call message."""
    config = tmp_path / "hydra.toml"
    config.write_text(
        f"""
[providers.deepseek]
kind = "chat"
base_url = "{mock.url}/v1"
api_key_env = "DEEPSEEK_API_KEY"
replay_reasoning = true
reasoning = true

[[routes]]
match = "*"
provider = "deepseek"
model = "deepseek-reasoner"
""",
        encoding="utf-8",
    )
    env = {"DEEPSEEK_API_KEY": "sk-deepseek-dummy-key"}
    args = ("--config", str(config), "--provider", "deepseek")
    with ProxyServer(mock.url + "/v1", *args, impl=impl, env=env) as proxy:
        mock.script(
            [
                tool_call_turn(reasoning=REASONING),
                final_turn(reasoning="The command printed the marker."),
            ]
        )
        run = run_claude(claude, PROMPT, proxy.url)
        with explained(run, proxy, mock):
            check_claude_finished(run)
            # Claude Code got the reasoning as a signed thinking block
            thinking = run.blocks("assistant", "thinking")
            assert [t["thinking"] for t in thinking][:1] == [REASONING], thinking
            assert thinking[0]["signature"], "the proxy did not sign the thinking block"
            assert mock.pending() == 0, "not every scripted turn was requested"
            first, second = scripted_requests(mock)
            assert first["body"]["model"] == second["body"]["model"] == "deepseek-reasoner"
            assert "reasoning_content" not in json.dumps(first["body"]["messages"])
            check_system_and_tools(first)
            assistant = check_tool_result_request(second)
            assert assistant.get("reasoning_content") == REASONING, assistant
