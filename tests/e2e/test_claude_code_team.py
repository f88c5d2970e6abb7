"""A Claude Code lead with a teammate routed to another provider, counted apart, end to end
on each pinned Claude Code (`claude_code.VERSIONS`).

The lead runs on one Chat provider; the agent it spawns with its Agent tool sends
``x-claude-code-agent-id`` (the lead's requests do not), which the ``teammate`` route
trait sends to a second provider. Each keeps its own prompt-cache key within the session,
the access log names the agent, and ``hydra-proxy usage --by agent`` shows the lead and
the teammate on their own rows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hydra_proxy.mock import MockServer
from support.claude_code import VERSIONS, explained, require_claude, run_claude
from support.servers import PYTHON_DIR, ProxyServer

pytestmark = pytest.mark.e2e

TAG = "[hydra-team-lead]"
SUBTAG = "[hydra-team-mate]"
REPORT = "MATE-REPORT-51: the release notes are ready."
FINAL = "LEAD-FINAL-51: the teammate reported back."
AGENT_DEFINITION = """---
name: writer
description: Writes short notes as asked.
tools: Read
---
You write the note you are asked for, then report.
"""


@pytest.fixture(scope="module")
def lead_mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(scope="module")
def mate_mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def config(lead_url: str, mate_url: str, ledger: Path) -> str:
    return f"""
[usage]
ledger = "sqlite:{ledger}"

[providers.lead]
preset = "openai"
base_url = "{lead_url}/v1"
api_key_env = "OPENAI_API_KEY"

[providers.mate]
preset = "openai"
base_url = "{mate_url}/v1"
api_key_env = "OPENAI_API_KEY"

[[routes]]
name = "teammates"
match = "*"
teammate = true
provider = "mate"
model = "mate-model"

[[routes]]
name = "lead"
match = "claude-*"
provider = "lead"
model = "lead-model"
"""


def usage(ledger: Path, by: str) -> dict[str, dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(PYTHON_DIR)}
    out = subprocess.run(
        [sys.executable, "-m", "hydra_proxy", "usage", "--ledger", f"sqlite:{ledger}",
         "--by", by, "--json"],
        capture_output=True, check=True, env=env, timeout=60,
    )  # fmt: skip
    rows = json.loads(out.stdout)
    rows = rows["rows"] if isinstance(rows, dict) else rows
    return {row["key"]: row for row in rows}


@pytest.mark.parametrize("version", sorted(VERSIONS))
def test_a_teammate_on_another_provider_counted_apart(
    version: str, lead_mock: MockServer, mate_mock: MockServer, tmp_path: Path
) -> None:
    claude = require_claude(version)
    project = tmp_path / "project"
    (project / ".claude" / "agents").mkdir(parents=True)
    (project / ".claude" / "agents" / "writer.md").write_text(AGENT_DEFINITION)
    ledger = tmp_path / "usage.sqlite3"
    (tmp_path / "hydra.toml").write_text(config(lead_mock.url, mate_mock.url, ledger))
    agent_call = {
        "id": "toolu_team_writer_1",
        "name": "Agent",
        "arguments": {
            "description": "Write the notes",
            "prompt": f"{SUBTAG} Write the release notes, then report.",
            "subagent_type": "writer",
            "run_in_background": False,
        },
    }
    lead_mock.clear()
    mate_mock.clear()
    lead_mock.script([
        {"tool_calls": [agent_call], "match": {"has_tools": True, "contains": [TAG]}},
        {"text": FINAL, "match": {"contains": [TAG, "MATE-REPORT-51"]}},
    ])  # fmt: skip
    mate_mock.script([{"text": REPORT, "match": {"contains": [SUBTAG]}}])
    args = ("--config", str(tmp_path / "hydra.toml"), "--log-level", "info")
    with ProxyServer(lead_mock.url + "/v1", *args) as proxy:
        run = run_claude(
            claude, f"{TAG} Ask the writer agent for release notes.", proxy.url,
            allowed_tools=("Agent", "Read"), cwd=project,
        )  # fmt: skip
        with explained(run, proxy, mate_mock):
            assert not run.timed_out and run.returncode == 0
            result = run.result()
            assert result.get("is_error") is False and FINAL in result.get("result", "")
            assert lead_mock.pending() == 0 and mate_mock.pending() == 0
        log = proxy.log_text()
    lead = [r for r in lead_mock.requests() if r.get("reply") == "script"]
    mate = [r for r in mate_mock.requests() if r.get("reply") == "script"]
    assert {r["body"]["model"] for r in lead} == {"lead-model"}
    assert {r["body"]["model"] for r in mate} == {"mate-model"}
    agent = mate[0]["headers"].get("x-claude-code-agent-id")
    assert agent is None  # the proxy does not send Claude Code's headers on to Chat
    # one session, two agents: each its own prompt-cache key
    lead_key, mate_key = lead[0]["body"]["prompt_cache_key"], mate[0]["body"]["prompt_cache_key"]
    assert lead_key != mate_key
    agents = {line.split("agent=")[1].split()[0] for line in log.splitlines() if "agent=" in line}
    assert len(agents) == 1, log
    (agent_id,) = agents
    by_agent = usage(ledger, "agent")
    assert set(by_agent) >= {"lead", agent_id}
    assert by_agent[agent_id]["requests"] >= 1 and by_agent["lead"]["requests"] >= 2
    by_provider = usage(ledger, "provider")
    assert {"lead", "mate"} <= set(by_provider)
