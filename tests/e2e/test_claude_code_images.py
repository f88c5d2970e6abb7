"""Claude Code itself with an image pasted into a session on a text-only upstream: the
pinned CLI (harness in claude_code.py) reads four user messages from stdin (stream-json, as
its SDK sends a pasted image: an image block with the text), one at a time, each answered
before the next. The upstream is the ``deepseek`` preset (``vision = false``) on the mock;
each scripted answer matches only a request that carries the placeholder and no image, so
a turn that sent the image (which a text-only API refuses with a 400 on every later turn)
gets the canned reply instead and the run fails."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_text_only_images import png

from hydra_proxy.canonical.text_only import IMAGE_PLACEHOLDER
from hydra_proxy.mock import MockServer
from support.claude_code import claude_env, require_claude
from support.implementations import IMPLEMENTATIONS, NATIVE_MISSING, _native
from support.servers import ProxyServer

pytestmark = pytest.mark.e2e

TAG = "[hydra-e2e-image]"
TURNS = 4  # the pasted image, then three more
TIMEOUT = 120.0


@pytest.fixture(scope="module")
def claude() -> Path:
    return require_claude()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer() as server:
        yield server


def user_messages() -> list[dict[str, Any]]:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": png(16, 16)}}  # fmt: skip
    first = [image, {"type": "text", "text": f"{TAG} question 0: what is in this picture?"}]
    messages = [{"type": "user", "message": {"role": "user", "content": first}}]
    for n in range(1, TURNS):
        text = f"{TAG} question {n}: and then?"
        messages.append({"type": "user", "message": {"role": "user", "content": text}})
    return messages


def answer(n: int) -> dict[str, Any]:
    return {
        "text": f"ANSWER-{n}: the picture was left out, going on.",
        "match": {"contains": [TAG, f"question {n}:", IMAGE_PLACEHOLDER]},
    }


def converse(claude: Path, base_url: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each message in turn, the next once Claude Code reported the result of the last."""
    argv = [str(claude), "-p", "--input-format", "stream-json", "--output-format",
            "stream-json", "--verbose", "--max-turns", "2", "--strict-mcp-config",
            "--no-session-persistence"]  # fmt: skip
    results: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory(prefix="claude-home-") as home,
        tempfile.TemporaryDirectory(prefix="claude-work-") as work,
    ):
        proc = subprocess.Popen(
            argv,
            env=claude_env(base_url, home),
            cwd=work,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        deadline = time.monotonic() + TIMEOUT
        try:
            for message in messages:
                proc.stdin.write((json.dumps(message) + "\n").encode())
                proc.stdin.flush()
                while time.monotonic() < deadline:
                    line = proc.stdout.readline()
                    if not line:
                        break
                    try:
                        event = json.loads(line)
                    except ValueError:
                        continue
                    if isinstance(event, dict) and event.get("type") == "result":
                        results.append(event)
                        break
            proc.stdin.close()
            proc.wait(timeout=max(deadline - time.monotonic(), 1.0))
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()
    return results


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_a_pasted_image_on_a_text_only_upstream_and_three_more_turns(
    claude: Path, mock: MockServer, impl: str, tmp_path: Path
) -> None:
    if impl == "native" and _native is None:
        pytest.skip(NATIVE_MISSING)
    mock.clear()
    config = tmp_path / "hydra.toml"
    config.write_text(
        f"""
[server]
provider = "deepseek"

[providers.deepseek]
base_url = "{mock.url}/v1"
""",
        encoding="utf-8",
    )
    env = {"DEEPSEEK_API_KEY": "sk-deepseek-dummy-key"}
    args = ("--config", str(config), "--log-level", "info")
    with ProxyServer(mock.url + "/v1", *args, impl=impl, env=env) as proxy:
        mock.script([answer(n) for n in range(TURNS)])
        results = converse(claude, proxy.url, user_messages())
        proxy.log.seek(0)
        log = proxy.log.read().decode("utf-8", "replace")
    shown = [(r.get("subtype"), r.get("is_error"), str(r.get("result"))[:80]) for r in results]
    report = f"results: {shown}\nproxy log:\n{log[-3000:]}"
    assert len(results) == TURNS, report
    for n, result in enumerate(results):
        assert result.get("subtype") == "success" and result.get("is_error") is False, report
        assert f"ANSWER-{n}:" in result.get("result", ""), report
    assert mock.pending() == 0, report
    scripted = [r for r in mock.requests() if r.get("reply") == "script"]
    assert len(scripted) == TURNS
    for request in scripted:
        body = json.dumps(request["body"])
        assert "image_url" not in body and "data:image/png" not in body
    assert log.count("image(s) left out for provider 'deepseek'") == 1, report


def test_a_pasted_image_takes_the_images_route(
    claude: Path, mock: MockServer, tmp_path: Path
) -> None:
    """With an `images = true` route to a provider that reads images, the session's turns
    carrying the image go there, the image as it was pasted."""
    mock.clear()
    config = tmp_path / "hydra.toml"
    config.write_text(
        f"""
[server]
provider = "deepseek"

[providers.deepseek]
base_url = "{mock.url}/v1"

[providers.eyes]
kind = "chat"
base_url = "{mock.url}/v1"
api_key_env = "DEEPSEEK_API_KEY"

[[routes]]
name = "images"
match = "*"
images = true
provider = "eyes"
model = "vision-model"
""",
        encoding="utf-8",
    )
    env = {"DEEPSEEK_API_KEY": "sk-deepseek-dummy-key"}
    with ProxyServer(mock.url + "/v1", "--config", str(config), env=env) as proxy:
        mock.script([
            {"text": f"SEEN-{n}", "match": {"contains": [TAG, f"question {n}:", "data:image/png"]}}
            for n in range(2)
        ])  # fmt: skip
        results = converse(claude, proxy.url, user_messages()[:2])
    assert [str(r.get("result", ""))[:6] for r in results] == ["SEEN-0", "SEEN-1"], results
    scripted = [r["body"] for r in mock.requests() if r.get("reply") == "script"]
    assert [b["model"] for b in scripted] == ["vision-model", "vision-model"]
    assert all(IMAGE_PLACEHOLDER not in json.dumps(b) for b in scripted)
