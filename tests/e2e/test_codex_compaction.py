"""Codex's remote compaction (v2) through the proxy onto a DeepSeek-like Chat upstream
(128k window, 16k output limit, refusing ``reasoning_effort`` with OpenAI's real 400), end
to end: a session that compacts twice in one turn, then ``codex exec resume --last``, with
no error reaching the user.

Codex reads the model's window from the proxy's catalog (``model_catalog_url``) and
compacts at 90% of it: its request then ends with a ``compaction_trigger`` and it needs
exactly one ``compaction`` item back. The proxy asks the Chat model for a summary (a
request of its own, not streamed), and the item carries it signed; every later request,
the resumed session's too, carries the item, which the proxy turns back into the summary
the model reads. Codex's reasoning level is refused once by the model, sent again without
and left out from then on.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_codex_cli import explained

from hydra_proxy.mock import MockServer
from hydra_proxy.responses.compaction import COMPACTION_PREFIX, SUMMARY_REQUEST
from support.codex_cli import require_codex, run_codex
from support.servers import ProxyServer

pytestmark = pytest.mark.e2e

TAG = f"[hydra-compact-{secrets.token_hex(4)}]"
SUMMARIES = [f"SUMMARY-ONE-{secrets.token_hex(3)}", f"SUMMARY-TWO-{secrets.token_hex(3)}"]
FINAL = "FINAL: both commands ran."
RESUMED = f"RESUMED-{secrets.token_hex(3)}"
AFTER_RESUME = "FINAL: resumed with the summary."
WINDOW = 131072
OUTPUT_LIMIT = 16384
LIMIT = WINDOW * 9 // 10  # Codex compacts once the reported input passes 90% of the window
MODEL = "deepseek-chat"
CONFIG = """
[providers.ds]
preset = "openai"
base_url = "{base}"
api_key_env = "OPENAI_API_KEY"
context_window = {window}
max_output = {limit}

[[routes]]
match = "deepseek-chat"
provider = "ds"
"""
ASK = SUMMARY_REQUEST[:60]  # only the proxy's compaction requests contain it


def command(n: int) -> str:
    return f"echo step-{n}-$((6*{n})) > f{n}.txt; cat f{n}.txt"


def script() -> list[dict[str, Any]]:
    big = {"prompt_tokens": LIMIT + 2000, "completion_tokens": 12}  # below Codex's own 258k
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
    args = ("--refuse-param", "reasoning_effort", "--max-output", str(OUTPUT_LIMIT))
    with MockServer(*args) as server:
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
    hydra = tmp_path / "hydra.toml"
    hydra.write_text(CONFIG.format(base=mock.url + "/v1", window=WINDOW, limit=OUTPUT_LIMIT))
    config = ['web_search="disabled"']
    options: dict[str, Any] = {
        "extra_config": config, "session_dir": tmp_path, "remote_compaction": True,
        "catalog": True, "model": MODEL,
    }  # fmt: skip
    with ProxyServer(mock.url + "/v1", "--config", str(hydra), "--log-level", "info") as proxy:
        base = proxy.url + "/v1"
        first = run_codex(codex, f"{TAG} run two commands", base, **options)
        with explained(first, mock):
            assert first.returncode == 0 and first.failure() is None
            assert first.items("error") == []  # the catalog knew the model: no warning
            assert [i["aggregated_output"] for i in first.items("command_execution")] == [
                "step-1-6\n",
                "step-2-12\n",
            ]
            assert first.messages() == [FINAL]
        resumed = run_codex(codex, f"{RESUMED} go on", base, resume_last=True, **options)
        with explained(resumed, mock):
            assert resumed.returncode == 0 and resumed.failure() is None
            assert resumed.messages() == [AFTER_RESUME]
            assert mock.pending() == 0
        log = proxy.log_text()

    every = [r for r in mock.requests() if r["path"] == "/v1/chat/completions"]
    # Codex's level refused once, then left out; every request within the output limit
    assert [r.get("reply") for r in every].count("refused") == 1
    assert all("reasoning_effort" not in r["body"] for r in every if r.get("reply") != "refused")
    assert log.count("refuses 'reasoning_effort'") == 1
    assert all(r["body"]["max_tokens"] <= OUTPUT_LIMIT for r in every)
    assert "catalog=codex" in log
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
