"""A Claude Code session that goes on: the recorded request (tests/fixtures/claude-code/,
see its SOURCES.md) grown turn by turn with Read tool calls whose results are this
repository's own sources, the cache breakpoint moving to the last turn each time, as
Claude Code places it. Every body is what the client would send at that point."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[2]
RECORDED = REPO / "tests" / "fixtures" / "claude-code" / "request-after-tool-result.json"


def sources() -> list[tuple[str, str]]:
    return [
        (str(path.relative_to(REPO)), path.read_text(encoding="utf-8"))
        for path in sorted((REPO / "python" / "hydra_proxy").glob("**/*.py"))
        if path.stat().st_size > 2_000
    ]


def tool_turn(index: int, path: str, text: str) -> list[dict[str, Any]]:
    """The assistant's Read call and the user turn with its result (numbered lines)."""
    call_id = f"toolu_01{index:022d}"
    where = f"/home/dev/hydra-proxy/{path}"
    lines = "\n".join(f"{i:>6}\t{line}" for i, line in enumerate(text.split("\n"), 1))
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"Let me read {path}."},
                {"type": "tool_use", "id": call_id, "name": "Read", "input": {"file_path": where}},
            ],
        },
        {
            "role": "user",
            "content": [{"tool_use_id": call_id, "type": "tool_result", "content": lines}],
        },
    ]


def session(turns: int, model: str = "gpt-4o-mini", start: int = 0) -> Iterator[bytes]:
    """The bodies of `turns` requests of one session, each one tool turn longer."""
    request: dict[str, Any] = copy.deepcopy(orjson.loads(RECORDED.read_bytes())["body"])
    request["model"] = model
    request["stream"] = True
    files = sources()
    for index in range(start, start + turns):
        for message in request["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else ():
                block.pop("cache_control", None)
        request["messages"] += tool_turn(index, *files[index % len(files)])
        request["messages"][-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        yield orjson.dumps(request)
