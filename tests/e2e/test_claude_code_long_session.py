"""A Claude Code session that never dies, on a DeepSeek-like Chat upstream (128k window,
16k output limit, refusing ``reasoning_effort`` with OpenAI's real 400), end to end on
each pinned Claude Code (`claude_code.VERSIONS`: the pinned one and the newest on npm):
a tool loop, two compactions (``/compact``) and a resumed turn (``--continue``), with no
error reaching the user.

What the proxy does for it: Claude Code asks ``max_tokens: 32000``, lowered to the model's
16,384; its thinking goes as ``reasoning_effort``, which the model refuses: the proxy sends
the request again without it before any byte reaches Claude Code and leaves it out from
then on; model discovery lists the route's ``claude-*`` aliases.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hydra_proxy.mock import MockServer
from support.claude_code import VERSIONS, explained, require_claude, run_claude
from support.servers import ProxyServer

pytestmark = pytest.mark.e2e

OUTPUT_LIMIT = 16384
TAG = f"hydra-long-{secrets.token_hex(4)}"
MARK = f"step-{secrets.randbelow(10**6)}"
SUMMARIES = [f"SUMMARY-ONE-{secrets.token_hex(3)}", f"SUMMARY-TWO-{secrets.token_hex(3)}"]
RESUMED = f"RESUMED-{secrets.token_hex(3)}"
CONFIG = """
[providers.ds]
preset = "openai"
base_url = "{base}"
api_key_env = "OPENAI_API_KEY"
context_window = 131072
max_output = {limit}

[[routes]]
match = "claude-*"
provider = "ds"
model = "deepseek-chat"
aliases = ["claude-sonnet-4-5", "claude-haiku-4-5"]
"""


def script() -> list[dict[str, Any]]:
    command = {"command": f"echo {MARK}", "description": "print the marker"}
    return [
        {
            "tool_calls": [{"id": "toolu_long_1", "name": "Bash", "arguments": command}],
            "match": {"contains": TAG, "has_tools": True},
        },
        {"text": f"Done: {MARK}.", "match": {"contains": f"{MARK}\\n", "has_tools": True}},
        # the first /compact: Claude Code's summary request, the whole history in it
        {"text": f"{SUMMARIES[0]}: ran echo {MARK}", "match": {"contains": [TAG, MARK]}},
        {"text": f"{SUMMARIES[1]}: ran echo {MARK}", "match": {"contains": SUMMARIES[0]}},
        {"text": "Resumed fine.", "match": {"contains": [SUMMARIES[1], RESUMED]}},
    ]


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    args = ("--refuse-param", "reasoning_effort", "--max-output", str(OUTPUT_LIMIT))
    with MockServer(*args) as server:
        yield server


@pytest.mark.parametrize("version", sorted(VERSIONS))
def test_two_compactions_and_a_resume_with_no_error(
    version: str, mock: MockServer, tmp_path: Path
) -> None:
    claude = require_claude(version)
    mock.clear()
    mock.script(script())
    config = tmp_path / "hydra.toml"
    config.write_text(CONFIG.format(base=mock.url + "/v1", limit=OUTPUT_LIMIT))
    env = {"CLAUDE_CODE_ENABLE_GATEWAY_MODEL_DISCOVERY": "1"}
    steps = [
        (f"{TAG} run `echo {MARK}` with Bash", []),
        ("/compact", ["--continue"]),
        ("/compact", ["--continue"]),
        (f"{RESUMED} what did we do?", ["--continue"]),
    ]
    with ProxyServer(mock.url + "/v1", "--config", str(config), "--log-level", "info") as proxy:
        for prompt, extra in steps:
            run = run_claude(
                claude, prompt, proxy.url, session_dir=tmp_path / "session", env=env,
                extra_args=["--model", "claude-sonnet-4-5", *extra],
            )  # fmt: skip
            with explained(run, proxy, mock):
                assert not run.timed_out and run.returncode == 0
                result = run.result()
                assert result.get("is_error") is False, result
                assert "API Error" not in json.dumps(result)
        log = proxy.log_text()
    with explained(run, proxy, mock):
        assert mock.pending() == 0, "not every scripted turn was requested"
        sent = [r for r in mock.requests() if r["path"] == "/v1/chat/completions"]
        # the refusal: once, answered again without the field before Claude Code saw a byte
        assert [r.get("reply") for r in sent].count("refused") == 1
        assert sent[0].get("reply") == "refused" and "reasoning_effort" in sent[0]["body"]
        assert all("reasoning_effort" not in r["body"] for r in sent[1:])
        assert log.count("refuses 'reasoning_effort'") == 1
        # the output limit: every request within it
        assert all(r["body"]["max_tokens"] <= OUTPUT_LIMIT for r in sent)
        # the tool ran; the summaries stand for the history; the resumed turn has the last one
        assert any(
            m.get("role") == "tool" and MARK in json.dumps(m)
            for r in sent
            for m in r["body"]["messages"]
        )
        last = json.dumps(sent[-1]["body"])
        assert SUMMARIES[1] in last and RESUMED in last
        # model discovery asked, and was given the route's claude-* names
        assert "GET /v1/models 200" in log
