"""Usage read from passed-through bytes (server/pipeline/accounting.py `Passthrough`):
every recorded Responses, Chat and Anthropic stream, split at random, gives the counts the
recording's own usage event reports; a body cut before its usage event gives none."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from hydra_proxy.server.pipeline.accounting import Passthrough, reply_usage
from hydra_proxy.usage.record import Tokens
from hydra_proxy.usage.upstream_usage import (
    tokens_from_anthropic,
    tokens_from_chat,
    tokens_from_gemini,
    tokens_from_responses,
)
from support.implementations import ANTHROPIC_STREAMS, CHAT_STREAMS, recorded_chat_stream

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
RESPONSES_STREAMS = sorted(p.name for p in (FIXTURES / "responses").glob("*.sse"))


def data_events(body: bytes) -> list[Any]:
    out = []
    for line in body.split(b"\n"):
        line = line.strip()
        if line.startswith(b"data:") and line[5:].strip() != b"[DONE]":
            out.append(orjson.loads(line[5:]))
    return out


def passed(body: bytes, seed: int) -> Passthrough:
    rng = random.Random(seed)
    kept = Passthrough()
    at = 0
    while at < len(body):
        step = rng.randint(1, 700)
        kept.add(body[at : at + step])
        at += step
    kept.ended = True
    return kept


@pytest.mark.parametrize("name", RESPONSES_STREAMS)
def test_responses_streams(name: str) -> None:
    body = (FIXTURES / "responses" / name).read_bytes()
    final = [
        e["response"]["usage"]
        for e in data_events(body)
        if e.get("type") in ("response.completed", "response.incomplete")
        and isinstance(e["response"].get("usage"), dict)
    ]
    expected = tokens_from_responses(final[-1]) if final else None
    for seed in range(5):
        assert passed(body, seed).usage("responses") == expected, seed


def test_a_long_responses_event_is_read_from_its_end() -> None:
    """response.completed repeats the whole output: far longer than the kept tail."""
    body = (
        FIXTURES / "responses" / "pydantic-gpt5-stream-reasoning-function-call.sse"
    ).read_bytes()
    events = body.split(b"\n\n")
    (i,) = [k for k, e in enumerate(events) if b"response.completed" in e]
    long_text = b"x" * 20_000
    events[i] = events[i].replace(
        b'"output":[', b'"output":[{"type":"message","text":"%s"},' % long_text, 1
    )
    grown = b"\n\n".join(events)
    assert len(events[i]) > 20_000
    (completed,) = [e for e in data_events(grown) if e.get("type") == "response.completed"]
    assert passed(grown, 1).usage("responses") == tokens_from_responses(
        completed["response"]["usage"]
    )


def test_a_cut_responses_stream_reports_none() -> None:
    body = (
        FIXTURES / "responses" / "pydantic-gpt5-stream-reasoning-function-call.sse"
    ).read_bytes()
    cut = body[: body.index(b"response.completed")]
    assert b'"usage":{' not in cut  # only response.created's "usage":null before it
    assert passed(cut, 2).usage("responses") is None


@pytest.mark.parametrize("name", [n for n in CHAT_STREAMS if "usage" in n or "deepseek" in n])
def test_chat_streams(name: str) -> None:
    body = recorded_chat_stream(name)
    usages = [e["usage"] for e in data_events(body) if isinstance(e.get("usage"), dict)]
    expected = tokens_from_chat(usages[-1]) if usages else None
    for seed in range(3):
        assert passed(body, seed).usage("chat") == expected, seed


def test_deepseek_reasoning_is_read() -> None:
    tokens = passed(recorded_chat_stream("vercel-deepseek-reasoning-content.jsonl"), 0).usage(
        "chat"
    )
    assert tokens is not None and tokens.reasoning == 205


def anthropic_usage(body: bytes) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for event in data_events(body):
        if event.get("type") == "message_start":
            merged.update(event["message"].get("usage") or {})
        elif isinstance(event.get("usage"), dict):
            merged.update(event["usage"])
    return merged


ANTHROPIC_WITH_USAGE = [n for n, body in ANTHROPIC_STREAMS.items() if anthropic_usage(body)]


@pytest.mark.parametrize("name", ANTHROPIC_WITH_USAGE)
def test_anthropic_streams(name: str) -> None:
    body = ANTHROPIC_STREAMS[name]
    expected = tokens_from_anthropic(anthropic_usage(body))
    for seed in range(3):
        assert passed(body, seed).usage("anthropic") == expected, seed


def test_json_replies() -> None:
    gemini = orjson.loads((FIXTURES / "gemini" / "vercel-google-reasoning.json").read_bytes())
    assert reply_usage("gemini", gemini) == gemini["usageMetadata"]
    assert tokens_from_gemini(gemini["usageMetadata"]) == Tokens(
        input=9, output=29 + 282, reasoning=282
    )
    recorded = orjson.loads(
        (
            FIXTURES / "responses" / "pydantic-gpt5-reasoning-function-call-replay.1.response.json"
        ).read_bytes()
    )["body"]
    assert reply_usage("responses", recorded) == recorded["usage"]
    assert reply_usage("responses", [recorded]) is None
    # A passed-through JSON body, whole.
    kept = passed(orjson.dumps(recorded), 4)
    assert kept.usage("responses") == tokens_from_responses(recorded["usage"])
