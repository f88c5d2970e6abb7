"""Claude Code itself: the share of its input a prompt cache by prefix serves, through the
proxy to an OpenAI-style upstream against Claude Code talking to an Anthropic-style one
directly. The pinned CLI (harness in claude_code.py) holds a four-turn session (stream-json
input, one user message at a time); the mock caches by prefix (``--prefix-cache``: the
prompt rendered tools, system, conversation; cached = the prefix shared with the key's last
request), so the shares compare what the two paths keep stable from turn to turn."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_claude_code_images import converse

from hydra_proxy.mock import MockServer
from support.claude_code import require_claude
from support.servers import ProxyServer

pytestmark = pytest.mark.e2e

TAG = "[hydra-e2e-cache]"
TURNS = 4


@pytest.fixture(scope="module")
def claude() -> Path:
    return require_claude()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockServer]:
    with MockServer("--prefix-cache") as server:
        yield server


def messages() -> list[dict[str, Any]]:
    return [
        {"type": "user", "message": {"role": "user", "content": f"{TAG} question {n}"}}
        for n in range(TURNS)
    ]


def cached_share(results: list[dict[str, Any]]) -> float:
    """Cached over all input, from the usage Claude Code itself was told, every turn."""
    cached = prompt = 0
    for result in results:
        usage = result["usage"]
        cached += usage["cache_read_input_tokens"]
        prompt += (
            usage["input_tokens"]
            + usage["cache_read_input_tokens"]
            + usage["cache_creation_input_tokens"]
        )
    return cached / prompt


def test_claude_code_caches_as_much_through_the_proxy_as_direct(
    claude: Path, mock: MockServer
) -> None:
    mock.clear()
    direct = converse(claude, mock.url, messages())
    assert len(direct) == TURNS and all(r.get("is_error") is False for r in direct), direct
    assert all(r["path"] == "/v1/messages" for r in mock.requests())

    mock.clear()
    with ProxyServer(mock.url + "/v1", "--provider", "openai") as proxy:
        through = converse(claude, proxy.url, messages())
    assert len(through) == TURNS and all(r.get("is_error") is False for r in through), through
    upstream = [r["body"] for r in mock.requests() if r["path"] == "/v1/chat/completions"]
    assert len(upstream) == TURNS
    keys = {body.get("prompt_cache_key") for body in upstream}
    assert len(keys) == 1 and None not in keys  # the session, as the cache key
    assert TAG in json.dumps(upstream[-1]["messages"])

    direct_share, proxy_share = cached_share(direct), cached_share(through)
    print(f"Claude Code cached input share: direct {direct_share:.4f}, proxy {proxy_share:.4f}")
    assert direct_share > 0.5
    assert proxy_share >= direct_share - 0.01
