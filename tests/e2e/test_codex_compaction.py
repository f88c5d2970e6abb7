"""Codex's remote compaction (v2) through the proxy onto a Chat upstream, end to end: a
session that compacts twice in one turn, then ``codex exec resume --last``, with no error.

Codex compacts when the usage the upstream reports passes ``model_auto_compact_token_limit``:
its request then ends with a ``compaction_trigger`` and it needs exactly one ``compaction``
item back. The proxy asks the Chat model for a summary (a request of its own, not
streamed), and the item carries it signed; every later request, the resumed session's
too, carries the item, which the proxy turns back into the summary the model reads.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_codex_cli import explained

from codex_cli import require_codex, run_codex
from hydra_proxy.mock import MockServer
from hydra_proxy.responses.compaction import COMPACTION_PREFIX, SUMMARY_REQUEST
from servers import ProxyServer

pytestmark = pytest.mark.e2e

TAG = f"[hydra-compact-{secrets.token_hex(4)}]"
SUMMARIES = [f"SUMMARY-ONE-{secrets.token_hex(3)}", f"SUMMARY-TWO-{secrets.token_hex(3)}"]
FINAL = "FINAL: both commands ran."
RESUMED = f"RESUMED-{secrets.token_hex(3)}"
AFTER_RESUME = "FINAL: resumed with the summary."
LIMIT = 20_000  # Codex compacts once the reported input passes it
ASK = SUMMARY_REQUEST[:60]  # only the proxy's compaction requests contain it


def command(n: int) -> str:
    return f"echo step-{n}-$((6*{n})) > f{n}.txt; cat f{n}.txt"


def script() -> list[dict[str, Any]]:
    big = {"prompt_tokens": LIMIT + 5000, "completion_tokens": 12}
    small = {"prompt_tokens": 3000, "completion_tokens": 12}

    def call(n: int) -> dict[str, Any]:
        return {"id": f"call_step_{n}", "name": "exec_command", "arguments": {"cmd": command(n)}}

    return [
        {"tool_calls": [call(1)], "usage": big, "match": {"contains": TAG}},
        {"text": SUMMARIES[0] + " step-1-6", "usage": big, "match": {"contains": ASK}},
        {"tool_calls": [call(2)], "usage": big, "match": {"contains": SUMMARIES[0]}},
        {"text": SUMMARIES[1] + " step-2-12", "usage": big, "match": {"contains": ASK}},
        {"text": FINAL, "usage": small, "match": {"contains": SUMMARIES[1]}},
        {"text": AFTER_RESUME, "usage": small, "match": {"contains": [SUMMARIES[1], RESUMED]}},
    ]


@pytest.fixture(scope="module")
def codex() -> Path:
    return require_codex()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def chat_requests(mock: MockServer) -> list[dict[str, Any]]:
    return [
        r["body"]
        for r in mock.requests()
        if r["path"] == "/v1/chat/completions" and r.get("reply") == "script"
    ]


def text_of(body: dict[str, Any]) -> str:
    return json.dumps(body["messages"], ensure_ascii=False)


def test_two_compactions_and_a_resume_on_a_chat_upstream(
    codex: Path, mock: MockServer, tmp_path: Path
) -> None:
    mock.clear()
    mock.script(script())
    config = ['web_search="disabled"', f"model_auto_compact_token_limit={LIMIT}"]
    with ProxyServer(mock.url + "/v1", "--log-level", "info") as proxy:
        base = proxy.url + "/v1"
        first = run_codex(
            codex, f"{TAG} run two commands", base, extra_config=config,
            session_dir=tmp_path, remote_compaction=True,
        )  # fmt: skip
        with explained(first, mock):
            assert first.returncode == 0 and first.failure() is None
            assert [i["aggregated_output"] for i in first.items("command_execution")] == [
                "step-1-6\n",
                "step-2-12\n",
            ]
            assert first.messages() == [FINAL]
        resumed = run_codex(
            codex, f"{RESUMED} go on", base, extra_config=config,
            session_dir=tmp_path, remote_compaction=True, resume_last=True,
        )  # fmt: skip
        with explained(resumed, mock):
            assert resumed.returncode == 0 and resumed.failure() is None
            assert resumed.messages() == [AFTER_RESUME]
            assert mock.pending() == 0
        log = proxy.log_text()

    requests = chat_requests(mock)
    assert len(requests) == 6
    compactions = [requests[1], requests[3]]
    for body in compactions:  # the proxy's own request: whole, tools declared but unused
        assert "stream" not in body and body["tool_choice"] == "none"
        assert body["messages"][-1]["role"] == "user"
        assert SUMMARY_REQUEST in json.dumps(body["messages"][-1])
    # after each compaction the summary stands where the history was, and only it
    after_first, after_second, resumed_body = requests[2], requests[4], requests[5]
    assert SUMMARIES[0] in text_of(after_first) and "call_step_1" not in text_of(after_first)
    assert SUMMARIES[1] in text_of(after_second) and SUMMARIES[0] not in text_of(after_second)
    assert SUMMARIES[1] in text_of(resumed_body) and RESUMED in text_of(resumed_body)
    # Codex recorded the proxy's carrier in its session, and replayed it on resume
    recorded = "".join(p.read_text() for p in (tmp_path / "home").rglob("*.jsonl"))
    assert recorded.count(COMPACTION_PREFIX) >= 2
    assert log.count("compaction=1") == 2, log
