"""Codex CLI itself, end to end: the pinned CLI runs a real tool loop against the mock
upstream's Responses dialect (harness in codex_cli.py). No proxy yet: this proves the
harness and the mock; the proxy's ``/v1/responses`` goes between them later.

The scripted first turn asks for ``exec_command`` with the argument shape Codex 0.171
advertises (``{"cmd": ...}``, see fixtures/codex/request-exec-first-turn.json); Codex
runs the command in its working directory, and the second turn, which only a request
carrying the command's real output matches, gives the final text. A second test checks
that upstream failures (``response.failed``, ``response.incomplete``, HTTP errors) end a
run at once with Codex's report of them (the provider's retries are set to 0).
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hydra_proxy.mock import MockServer
from support.codex_cli import CodexRun, describe_requests, require_codex, run_codex

pytestmark = pytest.mark.e2e

FIXTURE = (
    Path(__file__).resolve().parent.parent / "fixtures" / "codex" / "request-exec-first-turn.json"
)
RESPONSES_PATH = "/v1/responses"
TAG = f"[hydra-codex-{secrets.token_hex(4)}]"  # in the prompt: only this conversation has it
PROMPT = f"{TAG} Run the marker command, then tell me what it printed."
CALL_ID = "call_hydra_codex_1"
NONCE = secrets.randbelow(10**6)
COMMAND = f"echo hydra-{NONCE}-$((6*7)) > out.txt; cat out.txt"
OUTPUT = f"hydra-{NONCE}-42"  # only the shell makes this out of COMMAND
FINAL = f"FINAL-ANSWER: the command printed {OUTPUT}."
REASONING = "I run the marker command with exec_command — ünïcödé and a tab\t."
SIGNATURE = "gAAAAB-hydra-codex-encrypted-reasoning=="


def tool_call_turn() -> dict[str, Any]:
    return {
        "reasoning": REASONING,
        "signature": SIGNATURE,
        "tool_calls": [{"id": CALL_ID, "name": "exec_command", "arguments": {"cmd": COMMAND}}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 40, "cached_tokens": 512},
        "chunk_size": 7,  # the arguments arrive in many delta events
        "match": {"has_tools": True, "contains": TAG},
    }


def final_turn() -> dict[str, Any]:
    return {
        "text": FINAL,
        "usage": {"prompt_tokens": 1000, "completion_tokens": 12, "cached_tokens": 896},
        "match": {"contains": [TAG, OUTPUT]},  # only after the command really ran
    }


@pytest.fixture(scope="module")
def codex() -> Path:
    return require_codex()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _clean(mock: MockServer) -> None:
    mock.clear()


@contextlib.contextmanager
def explained(run: CodexRun, mock: MockServer) -> Iterator[None]:
    """Re-raise a failed assertion with Codex's output and what the mock recorded."""
    try:
        yield
    except AssertionError as exc:
        try:
            requests = describe_requests(mock.requests(), mock.pending())
        except Exception as err:  # a report must not hide the real failure
            requests = f"(mock upstream unreachable: {err})"
        raise AssertionError(
            f"{exc}\n\n{run.report()}\n--- mock upstream requests ---\n{requests}"
        ) from exc


def by_type(items: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [i for i in items if isinstance(i, dict) and i.get("type") == kind]


def test_exec_command_tool_loop_on_the_mock(codex: Path, mock: MockServer) -> None:
    mock.script([tool_call_turn(), final_turn()])
    run = run_codex(codex, PROMPT, mock.url + "/v1")
    with explained(run, mock):
        assert not run.timed_out, "Codex did not finish in time"
        assert run.returncode == 0, f"Codex exited with {run.returncode}"
        assert mock.pending() == 0, "not every scripted turn was requested"
        scripted = [r for r in mock.requests() if r.get("reply") == "script"]
        assert [r["path"] for r in scripted] == [RESPONSES_PATH] * 2
        first, second = (r["body"] for r in scripted)

        # Codex's own request: the tool it advertises is the one the fixture recorded
        exec_tool = next(t for t in first["tools"] if t.get("name") == "exec_command")
        recorded = json.loads(FIXTURE.read_text())
        recorded_tool = next(t for t in recorded["tools"] if t.get("name") == "exec_command")
        assert exec_tool["parameters"]["required"] == recorded_tool["parameters"]["required"]
        assert exec_tool["parameters"]["required"] == ["cmd"]
        assert first["stream"] is True and first["store"] is False
        assert first["include"] == ["reasoning.encrypted_content"]
        assert by_type(first["input"], "function_call_output") == []
        assert scripted[0]["headers"]["authorization"] == "<redacted>"

        # the second request replays the reasoning and the call, and carries the real output
        items = second["input"]
        reasoning = by_type(items, "reasoning")
        assert [r.get("encrypted_content") for r in reasoning] == [SIGNATURE], reasoning
        calls = by_type(items, "function_call")
        assert [(c["call_id"], c["name"]) for c in calls] == [(CALL_ID, "exec_command")]
        assert json.loads(calls[0]["arguments"]) == {"cmd": COMMAND}
        outputs = by_type(items, "function_call_output")
        assert [o["call_id"] for o in outputs] == [CALL_ID]
        assert OUTPUT in json.dumps(outputs[0]["output"]), outputs

        # Codex ran the command itself and printed the scripted final text
        assert run.workdir_files.get("out.txt") == OUTPUT + "\n"
        executed = run.items("command_execution")
        assert len(executed) == 1 and OUTPUT in executed[0]["aggregated_output"]
        assert executed[0]["exit_code"] == 0
        assert run.messages() == [FINAL]
        assert FINAL in run.stdout
        assert [r["text"] for r in run.items("reasoning")] == [REASONING]
        assert run.usage()["input_tokens"] == 900 + 1000


@pytest.mark.parametrize(
    ("turn", "reported"),
    [
        (  # response.failed after some content
            {"text": "partial", "stream_error": {"type": "overloaded_error", "message": "busy-7"}},
            "busy-7",
        ),
        ({"text": "cut short", "finish_reason": "length"}, "max_output_tokens"),  # incomplete
        ({"error": {"status": 429, "type": "rate_limit_error", "retry_after": "1"}}, "429"),
        ({"error": {"status": 400, "message": "bad-request-7"}}, "bad-request-7"),
    ],
    ids=["response.failed", "response.incomplete", "http-429", "http-400"],
)
def test_codex_reports_upstream_failures_without_retrying(
    codex: Path, mock: MockServer, turn: dict[str, Any], reported: str
) -> None:
    """With the provider's retries at 0 a failure ends the run at once: one request, a
    non-zero exit, and Codex's own report of what the upstream said."""
    mock.script([{**turn, "match": {"contains": TAG}}] * 3)
    run = run_codex(codex, PROMPT, mock.url + "/v1", timeout=60)
    with explained(run, mock):
        assert not run.timed_out, "Codex did not give up in time"
        assert run.returncode == 1
        assert [r.get("reply") for r in mock.requests()] == ["script"]
        failure = run.failure()
        assert failure is not None and reported in failure, failure
