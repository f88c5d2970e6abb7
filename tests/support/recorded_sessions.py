"""Recorded agent sessions grown turn by turn: Claude Code's and Codex's real requests
(tests/fixtures/claude-code, tests/fixtures/codex), each next turn built the way the client
builds it.

Claude Code (request-after-tool-result.json, its second request): each turn resends the
whole conversation with a new billing-header block (``cc_version=2.1.328.XXX``, a new
suffix per request, as in the two recorded requests), and moves its one message
breakpoint: the last message's last block carries ``cache_control`` and a message that is
no longer last loses it (the recorded mid-conversation ``system`` message is a block list
with ``cache_control`` when last and a plain string after). Replies are the proxy's own
(thinking signed by the proxy, tool calls with an OpenAI-style id), as a translated
upstream gives them.

Codex (request-exec-first-turn.json): each turn appends the reply items (reasoning with
the proxy's carrier, a function call, its output, a message) and the next user message,
with a new ``turn_id`` and start time in ``client_metadata``, as Codex does.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson

from hydra_proxy.responses.reasoning import encode_carrier
from hydra_proxy.signature import sign_thinking

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SIGNING_KEY = b"prefix-stability-signing-key"


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads(path.read_bytes())
    return data


def _assistant_turn(k: int) -> list[dict[str, Any]]:
    """A reply of a translated upstream, as Claude Code replays it."""
    thought = f"I should look at the files, step {k}."
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": thought,
                 "signature": sign_thinking(thought, SIGNING_KEY)},
                {"type": "text", "text": f"Running step {k}."},
                {"type": "tool_use", "id": f"call_step{k}", "name": "Bash",
                 "input": {"command": f"ls -la /tmp/{k}", "description": "List files"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"tool_use_id": f"call_step{k}", "type": "tool_result",
                 "content": f"total {k}\nfile-{k}.txt", "is_error": False},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": f"Step {k} is done."}]},
        {"role": "user", "content": [{"type": "text", "text": f"Now do step {k + 1}."}]},
    ]  # fmt: skip


def _with_breakpoint(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as Claude Code sends them: the last message's last block with
    ``cache_control``, no other message with one."""
    out = copy.deepcopy(messages)
    for message in out:
        content = message["content"]
        if isinstance(content, list):
            for block in content:
                block.pop("cache_control", None)
    last = out[-1]
    if isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"]}]
    last["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return out


def claude_code_session(turns: int) -> list[tuple[dict[str, str], dict[str, Any]]]:
    """(headers, body) of `turns` successive Claude Code requests of one session."""
    recorded = _load(FIXTURES / "claude-code" / "request-after-tool-result.json")
    headers = {k.lower(): v for k, v in recorded["headers"].items()}
    base = recorded["body"]
    history: list[dict[str, Any]] = [base["messages"][0], base["messages"][1]]
    grown: list[list[dict[str, Any]]] = [list(history)]
    history += base["messages"][2:]
    grown.append(list(history))
    k = 1
    while len(grown) < turns:
        history += _assistant_turn(k)
        grown.append(list(history))
        k += 1
    session = []
    for n, messages in enumerate(grown[:turns]):
        body = copy.deepcopy(base)
        body["system"][0]["text"] = (
            f"x-anthropic-billing-header: cc_version=2.1.328.{(0x593 + 0x1F7 * n) % 0xFFF:03x}; "
            "cc_entrypoint=sdk-cli;"
        )
        body["messages"] = _with_breakpoint(messages)
        session.append((dict(headers), body))
    return session


def codex_session(turns: int) -> list[tuple[dict[str, str], dict[str, Any]]]:
    """(headers, body) of `turns` successive Codex requests of one session."""
    body = _load(FIXTURES / "codex" / "request-exec-first-turn.json")
    headers = _load(FIXTURES / "codex" / "request-exec-first-turn.headers.json")
    headers = {k.lower(): v for k, v in headers.items() if k != "path"}
    session = []
    items = list(body["input"])
    for n in range(turns):
        turn = copy.deepcopy(body)
        turn["input"] = copy.deepcopy(items)
        turn_id = f"01a2312c-c29c-7e80-bfac-{n:012d}"
        metadata = turn["client_metadata"]
        metadata["turn_id"] = turn_id
        started = orjson.loads(metadata["x-codex-turn-metadata"])
        started["turn_id"] = turn_id
        started["turn_started_at_unix_ms"] += 1000 * n
        metadata["x-codex-turn-metadata"] = orjson.dumps(started).decode()
        session.append((dict(headers), turn))
        thought = f"Listing the files of step {n}."
        carrier = encode_carrier(
            [{"type": "thinking", "thinking": thought,
              "signature": sign_thinking(thought, SIGNING_KEY)}], SIGNING_KEY
        )  # fmt: skip
        items += [
            {"type": "reasoning", "id": f"rs_turn{n}",
             "summary": [{"type": "summary_text", "text": thought}],
             "encrypted_content": carrier},
            {"type": "function_call", "name": "exec_command", "call_id": f"call_turn{n}",
             "arguments": orjson.dumps({"cmd": f"ls /tmp/{n}"}).decode()},
            {"type": "function_call_output", "call_id": f"call_turn{n}",
             "output": f"a.txt\nb{n}.txt"},
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": f"Listed step {n}."}]},
            {"type": "message", "role": "user",
             "content": [{"type": "input_text", "text": f"and step {n + 1}?"}]},
        ]  # fmt: skip
    return session


def opencode_request() -> tuple[dict[str, str], dict[str, Any]]:
    """(headers, body) of opencode's recorded second request (a bash tool loop on a
    ``claude-*`` model: system message, prompt, assistant with reasoning and a tool call,
    the tool message)."""
    recorded = _load(FIXTURES / "opencode" / "request-after-tool-result.json")
    return dict(recorded["headers"]), recorded["body"]


def opencode_marks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as opencode sends them to a ``claude-*`` model: ``cache_control`` on
    the system messages and on the last two messages (on its last tool call when an
    assistant message has tool calls), on no other."""
    out = copy.deepcopy(messages)
    for message in out:
        message.pop("cache_control", None)
        for call in message.get("tool_calls") or ():
            call.pop("cache_control", None)
    mark = {"type": "ephemeral"}
    last_two = {id(m) for m in out[-2:]}
    for message in out:
        if message["role"] == "system" or id(message) in last_two:
            if message.get("tool_calls"):
                message["tool_calls"][-1]["cache_control"] = dict(mark)
            else:
                message["cache_control"] = dict(mark)
    return out
