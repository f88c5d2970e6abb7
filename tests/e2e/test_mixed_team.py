"""A mixed team through ONE proxy process: the real Claude Code CLI as lead on
Claude (passed through to an Anthropic mock), a subagent it spawns with its Agent tool
routed by the subagent trait to an OpenAI mock, where it reads and edits a real file and
reports back; and an OpenAI client on Claude through the same process.

The lead's turns are scripted on the Anthropic mock, the subagent's on the OpenAI mock;
each turn's ``match`` makes sure only the request it is meant for consumes it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from hydra_proxy.mock import MockServer
from hydra_proxy.mock.server import free_port
from support.claude_code import explained, require_claude, run_claude
from support.servers import ProxyServer

pytestmark = pytest.mark.e2e

TAG = "[hydra-team]"
SUBTAG = "[hydra-team-sub]"
PROMPT = f"{TAG} Ask the editor agent to fix notes.txt, then tell me what it reported."
OLD_LINE = "status: old-line-17"
NEW_LINE = "status: new-line-42"
REPORT = "SUBAGENT-REPORT-93: notes.txt said old-line-17, it now says new-line-42."
FINAL = "LEAD-FINAL-93: the editor fixed notes.txt."
AGENT_DEFINITION = """---
name: editor
description: Edits text files as asked.
model: claude-sonnet-4-5
tools: Read, Edit
---
You edit the files you are asked to edit, then report what you changed.
"""


@pytest.fixture(scope="module")
def claude() -> Path:
    return require_claude()


@pytest.fixture(scope="module")
def claude_mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


@pytest.fixture(scope="module")
def team_mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def lead_turns() -> list[dict[str, Any]]:
    agent_call = {
        "id": "toolu_team_agent_1",
        "name": "Agent",
        "arguments": {
            "description": "Fix notes.txt",
            "prompt": f"{SUBTAG} In notes.txt replace the status line with '{NEW_LINE}'.",
            "subagent_type": "editor",
            "run_in_background": False,
        },
    }
    return [
        {"tool_calls": [agent_call], "match": {"has_tools": True, "contains": [TAG]}},
        {"text": FINAL, "match": {"contains": [TAG, "SUBAGENT-REPORT-93"]}},
    ]


def subagent_turns(notes: Path) -> list[dict[str, Any]]:
    read = {"id": "call_team_read_1", "name": "Read", "arguments": {"file_path": str(notes)}}
    edit = {
        "id": "call_team_edit_1",
        "name": "Edit",
        "arguments": {"file_path": str(notes), "old_string": OLD_LINE, "new_string": NEW_LINE},
    }
    return [
        {"tool_calls": [read], "match": {"has_tools": True, "contains": [SUBTAG]}},
        # only once the file was really read
        {"tool_calls": [edit], "match": {"contains": [SUBTAG, "old-line-17", "call_team_read_1"]}},
        {"text": REPORT, "match": {"contains": [SUBTAG, "call_team_edit_1", "updated"]}},
    ]


def config(claude_url: str, team_url: str) -> str:
    return f"""
[providers.claude]
kind = "anthropic"
base_url = "{claude_url}"
api_key_env = "TEAM_ANTHROPIC_KEY"

[providers.team]
kind = "chat"
base_url = "{team_url}/v1"
api_key_env = "TEAM_OPENAI_KEY"

[[routes]]
name = "subagents"
match = "*"
subagent = true
provider = "team"
model = "gpt-team-editor"

[[routes]]
name = "lead"
match = "claude-*"
provider = "claude"
"""


def test_mixed_team_through_one_proxy(
    claude: Path, claude_mock: MockServer, team_mock: MockServer, impl: str, tmp_path: Path
) -> None:
    project = tmp_path / "project"
    (project / ".claude" / "agents").mkdir(parents=True)
    (project / ".claude" / "agents" / "editor.md").write_text(AGENT_DEFINITION, encoding="utf-8")
    notes = project / "notes.txt"
    notes.write_text(f"# notes\n{OLD_LINE}\n", encoding="utf-8")
    (tmp_path / "hydra.toml").write_text(config(claude_mock.url, team_mock.url), encoding="utf-8")
    env = {"TEAM_ANTHROPIC_KEY": "sk-ant-team-dummy", "TEAM_OPENAI_KEY": "sk-team-dummy"}
    args = ("--config", str(tmp_path / "hydra.toml"), "--log-level", "info")
    claude_mock.clear()
    team_mock.clear()
    with ProxyServer(team_mock.url + "/v1", *args, impl=impl, env=env) as proxy:
        claude_mock.script(lead_turns())
        team_mock.script(subagent_turns(notes))
        run = run_claude(
            claude, PROMPT, proxy.url, allowed_tools=("Agent", "Read", "Edit"), cwd=project
        )
        with explained(run, proxy, team_mock):
            assert not run.timed_out and run.returncode == 0, run.result()
            result = run.result()
            assert result.get("is_error") is False and FINAL in result.get("result", ""), result
            # the subagent really edited the file with Claude Code's Edit tool
            assert notes.read_text(encoding="utf-8") == f"# notes\n{NEW_LINE}\n"
            assert claude_mock.pending() == 0 and team_mock.pending() == 0
            # the lead: passed through to the Anthropic mock as Claude Code sent it
            lead = [r for r in claude_mock.requests() if r.get("reply") == "script"]
            assert len(lead) == 2
            for request in lead:
                body, headers = request["body"], request["headers"]
                assert request["path"] == "/v1/messages"
                assert body["model"].startswith("claude-") and "claude-sonnet" not in body["model"]
                assert "claude-code-20250219" in headers["anthropic-beta"]
                assert isinstance(body["system"], list)
                assert "x-anthropic-billing-header" in body["system"][0]["text"]
                assert "cc_is_subagent" not in body["system"][0]["text"]
                assert "metadata" in body and "thinking" in body
                # nothing re-encoded: the compact JSON Claude Code sent, length for length
                compact = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
                assert int(headers["content-length"]) == len(compact.encode())
            assert "Agent" in {t["name"] for t in lead[0]["body"]["tools"]}
            # the subagent: routed by its trait to the OpenAI mock, as Chat Completions
            sub = [r for r in team_mock.requests() if r.get("reply") == "script"]
            assert len(sub) == 3
            assert {r["body"]["model"] for r in sub} == {"gpt-team-editor"}
            assert all(r["path"] == "/v1/chat/completions" for r in sub)
            assert {t["function"]["name"] for t in sub[0]["body"]["tools"]} == {"Read", "Edit"}
            tool_results = [
                m for m in sub[2]["body"]["messages"] if m["role"] == "tool"
            ]  # the Read and the Edit results, in order
            assert [m["tool_call_id"] for m in tool_results] == [
                "call_team_read_1",
                "call_team_edit_1",
            ]
            assert "old-line-17" in json.dumps(tool_results[0]["content"])
            # the lead got the subagent's report as the Agent tool's result
            results = run.blocks("user", "tool_result")
            assert any(REPORT in json.dumps(r["content"]) for r in results), results
            access = proxy.log_tail()
            assert "route=subagents" in access and "route=lead" in access
        # an OpenAI client on Claude, through the same process
        claude_mock.script([{"text": "Claude answers Chat.", "match": {"contains": ["chat-7"]}}])
        client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
        chunks = client.chat.completions.create(
            model="claude-sonnet-4-5",
            messages=[{"role": "user", "content": "hello chat-7"}],
            stream=True,
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == "Claude answers Chat."
        last = claude_mock.requests()[-1]
        assert last["path"] == "/v1/messages" and last["body"]["model"] == "claude-sonnet-4-5"


def test_claude_code_does_not_retry_an_unreachable_local_upstream(
    claude: Path, tmp_path: Path
) -> None:
    """Ollama not started: Claude Code hears what is wrong once and stops (without
    ``x-should-retry: false`` it retried a 502 for about three minutes)."""
    port = free_port()
    (tmp_path / "hydra.toml").write_text(
        f'[providers.ollama]\nbase_url = "http://127.0.0.1:{port}/v1"\n\n'
        '[[routes]]\nmatch = "*"\nprovider = "ollama"\nmodel = "llama3"\n',
        encoding="utf-8",
    )
    args = ("--config", str(tmp_path / "hydra.toml"), "--log-level", "info")
    with ProxyServer("http://127.0.0.1:9/v1", *args) as proxy:
        run = run_claude(claude, "say hi", proxy.url)
        assert not run.timed_out and run.returncode == 1, run.report()
        result = run.result()
        assert result.get("is_error") is True, result
        assert f"cannot reach provider 'ollama' at http://127.0.0.1:{port}/v1" in result["result"]
        posts = [x for x in proxy.log_tail().splitlines() if "POST /v1/messages" in x]
        assert len(posts) == 1 and "attempts=ollama:unreachable" in posts[0], posts
