"""Claude Code's real tool loop on a native Gemini upstream (provider kind `gemini`): the
Bash call Gemini asks for carries a thoughtSignature, Claude Code keeps it as a signed
thinking block, and the next Gemini request has it back on the functionCall part
(Gemini 3 rejects a function-call turn without it). Harness: claude_code.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_claude_code import (
    ARGUMENTS,
    FINAL,
    OUTPUT,
    PROMPT,
    REASONING,
    final_turn,
    tool_call_turn,
)

from hydra_proxy.mock import MockServer
from support.claude_code import ClaudeRun, explained, require_claude, run_claude
from support.servers import ProxyServer

pytestmark = pytest.mark.e2e

MODEL = "gemini-3-pro-preview"
STREAM_PATH = f"/models/{MODEL}:streamGenerateContent"
SIGNATURE = "CiMBjz1rX25KieIB4d4AwFn8/WbsHTRNHBXso88PtemwfsSfRAp6AY89"
KEY = "AIza-claude-code-gemini-SECRET"


@pytest.fixture(scope="module")
def claude() -> Path:
    return require_claude()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def check_claude_finished(run: ClaudeRun) -> None:
    """As test_claude_code's check, with Gemini's call ids (Gemini has none: the proxy
    names the call)."""
    assert not run.timed_out and run.returncode == 0, run.returncode
    result = run.result()
    assert result.get("subtype") == "success" and result.get("is_error") is False, result
    assert FINAL in result.get("result", "") and result.get("num_turns") == 2, result
    calls = run.blocks("assistant", "tool_use")
    assert [(c["name"], c["input"]) for c in calls] == [("Bash", ARGUMENTS)]
    results = run.blocks("user", "tool_result")
    assert [r["tool_use_id"] for r in results] == [calls[0]["id"]]
    assert OUTPUT in json.dumps(results[0]["content"]) and not results[0].get("is_error")


def scripted(mock: MockServer) -> list[dict[str, Any]]:
    return [r for r in mock.requests() if STREAM_PATH in r["path"] and r.get("reply") == "script"]


def test_tool_loop_on_gemini(claude: Path, mock: MockServer, impl: str, tmp_path: Path) -> None:
    mock.clear()
    config = tmp_path / "hydra.toml"
    config.write_text(
        f"""
[providers.gem]
preset = "gemini-native"
base_url = "{mock.url}/v1beta"

[[routes]]
match = "*"
provider = "gem"
model = "{MODEL}"
""",
        encoding="utf-8",
    )
    args = ("--config", str(config), "--provider", "gem")
    with ProxyServer(mock.url + "/v1", *args, impl=impl, env={"GEMINI_API_KEY": KEY}) as proxy:
        mock.script(
            [
                tool_call_turn(reasoning=REASONING, signature=SIGNATURE),
                final_turn(),
            ]
        )
        run = run_claude(claude, PROMPT, proxy.url)
        with explained(run, proxy, mock):
            check_claude_finished(run)
            thinking = run.blocks("assistant", "thinking")
            assert [t["thinking"] for t in thinking][:1] == [REASONING], thinking
            assert mock.pending() == 0, "not every scripted turn was requested"
            first, second = scripted(mock)
            assert first["headers"].get("x-goog-api-key") == "<redacted>"
            assert "Bash" in json.dumps(first["body"]["tools"])
            contents = second["body"]["contents"]
            model_turn = next(c for c in contents if any("functionCall" in p for p in c["parts"]))
            call = next(p for p in model_turn["parts"] if "functionCall" in p)
            assert call["functionCall"]["name"] == "Bash"
            assert call["functionCall"]["args"] == ARGUMENTS
            assert call["thoughtSignature"] == SIGNATURE
            response = next(
                p["functionResponse"]
                for c in contents
                for p in c["parts"]
                if "functionResponse" in p
            )
            assert response["name"] == "Bash" and OUTPUT in json.dumps(response)
