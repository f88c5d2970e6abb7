"""Stable prefixes: the upstream body of turn N+1 of a session starts with the bytes of turn
N's up to the end of its conversation, for every upstream kind, so that a provider's prompt
cache (by prefix) serves the whole history again.

The sessions are Claude Code's and Codex's real requests grown turn by turn
(recorded_sessions); each turn goes through the request path the proxy takes for that
client and upstream kind (the client's reader, then the upstream kind's writer, or the
passthrough) and is serialized as the proxy sends it. The share is the shared byte prefix
of two consecutive upstream bodies over turn N's bytes up to the end of its conversation
list (``messages``, ``input``, ``contents``); 100% means no byte before the new turn
varies. Two things are not the prefix's bytes and are set aside before comparing: the
``cache_control`` markers (a breakpoint marks a position, providers cache the content) and,
on an Anthropic upstream, what Claude Code itself varies in the bytes passed through: the
billing-header block it changes on every request (Anthropic reads it as billing metadata)
and a message it sends as one text block while last and as a string after.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from hydra_proxy.canonical.content import BILLING_HEADER_PREFIX
from hydra_proxy.canonical.target import MessagesTarget
from hydra_proxy.responses.request.reader import messages_request_from_responses
from hydra_proxy.server.pipeline.sessions import session_cache_key
from hydra_proxy.server.pipeline.upstream_kinds import WRITERS, BodyFor
from support.every_kind import UPSTREAMS, attempt_for
from support.recorded_sessions import SIGNING_KEY, claude_code_session, codex_session

TURNS = 6
CONVERSATION = {"chat": "messages", "anthropic": "messages", "responses": "input",
                "gemini": "contents"}  # fmt: skip


def _without_markers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_markers(v) for v in value]
    return value


def _client_variations_set_aside(body: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic upstream gets Claude Code's own bytes: its billing block, and a message
    it sends as one text block while last and as a string after (the same prompt)."""
    messages = [
        {**m, "content": m["content"][0]["text"]}
        if isinstance(m.get("content"), list)
        and len(m["content"]) == 1
        and set(m["content"][0]) == {"type", "text"}
        and m["content"][0]["type"] == "text"
        else m
        for m in body["messages"]
    ]
    body = {**body, "messages": messages}
    system = body.get("system")
    if not isinstance(system, list):
        return body
    blocks = [
        {**b, "text": BILLING_HEADER_PREFIX}
        if isinstance(b, dict) and str(b.get("text", "")).startswith(BILLING_HEADER_PREFIX)
        else b
        for b in system
    ]
    return {**body, "system": blocks}


def cache_key(asked: object, headers: dict[str, str]) -> str | None:
    def header(name: bytes) -> bytes | None:
        value = headers.get(name.decode())
        return value.encode() if value is not None else None

    return session_cache_key(asked, header)


def claude_code_upstream(
    upstream: str, body: dict[str, Any], headers: dict[str, str]
) -> dict[str, Any]:
    """Claude Code's request as the proxy sends it: the Messages reader is the identity."""
    attempt = attempt_for(upstream)
    key = cache_key(None, headers)
    _, out = WRITERS[attempt.provider.kind](body, BodyFor(attempt, SIGNING_KEY, True, key, None))
    result: dict[str, Any] = out
    return result


def codex_upstream(upstream: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    """Codex's request as the proxy sends it: passed through to a Responses upstream (the
    model renamed), else read into the canonical request and written for the upstream."""
    attempt = attempt_for(upstream)
    if attempt.provider.kind == "responses":
        return {**body, "model": attempt.model}
    translation = messages_request_from_responses(
        body,
        MessagesTarget(
            model=attempt.model,
            max_tokens_limit=attempt.max_tokens_limit,
            continuation_key=SIGNING_KEY,
        ),
    )
    key = cache_key(translation.context.prompt_cache_key, headers)
    _, out = WRITERS[attempt.provider.kind](
        translation.body, BodyFor(attempt, SIGNING_KEY, True, key, None)
    )
    result: dict[str, Any] = out
    return result


def conversation_end(body: dict[str, Any], key: str) -> int:
    """The byte offset in `orjson.dumps(body)` of the end of the conversation list's last
    item (orjson keeps the keys in order: the body up to that list, closed)."""
    head: dict[str, Any] = {}
    for name, value in body.items():
        head[name] = value
        if name == key:
            break
    assert key in head, f"no {key!r} in the upstream body"
    return len(orjson.dumps(head)) - 2  # before "]}"


def shared_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    i = 0
    step = 4096
    while i < n and a[i : i + step] == b[i : i + step]:
        i += step
    i = min(i, n)
    while i > 0 and a[:i] != b[:i]:
        i -= 1
    while i < n and a[i] == b[i]:
        i += 1
    return i


# Fields a client changes per turn itself, passed through as they are (no provider caches
# them): Codex's turn metadata.
CLIENT_PER_TURN = ("client_metadata",)


def rest_of_body(body: dict[str, Any], kind: str) -> bytes:
    """Everything but the conversation: system text, tools, settings (a provider renders
    them before the conversation, whatever their place in the JSON)."""
    skip = (CONVERSATION[kind], *CLIENT_PER_TURN)
    return orjson.dumps({k: v for k, v in body.items() if k not in skip})


def prefix_shares(
    session: list[tuple[dict[str, str], dict[str, Any]]],
    write: Callable[[str, dict[str, Any], dict[str, str]], dict[str, Any]],
    upstream: str,
) -> list[tuple[float, int, bytes, bytes]]:
    """(share, offset of the first differing byte, its context in turn N, in turn N+1) of
    every consecutive pair of turns."""
    kind = attempt_for(upstream).provider.kind
    bodies = []
    for headers, body in session:
        out = _without_markers(write(upstream, body, headers))
        if kind == "anthropic":
            out = _client_variations_set_aside(out)
        bodies.append(out)
    shares = []
    for before, after in itertools.pairwise(bodies):
        assert rest_of_body(before, kind) == rest_of_body(after, kind), upstream
        old, new = orjson.dumps(before), orjson.dumps(after)
        end = conversation_end(before, CONVERSATION[kind])
        common = shared_prefix(old, new)
        share = min(common, end) / end
        shares.append(
            (share, common, old[common - 60 : common + 80], new[common - 60 : common + 80])
        )
    return shares


def _report(name: str, shares: list[tuple[float, int, bytes, bytes]]) -> str:
    worst = min(shares, key=lambda s: s[0])
    return (
        f"{name}: shares {[round(s[0] * 100, 2) for s in shares]}%; first difference at byte "
        f"{worst[1]}:\n  turn N:   {worst[2]!r}\n  turn N+1: {worst[3]!r}"
    )


@pytest.mark.parametrize("upstream", sorted(UPSTREAMS))
def test_claude_code_prefix_is_stable(upstream: str) -> None:
    shares = prefix_shares(claude_code_session(TURNS), claude_code_upstream, upstream)
    assert len(shares) == TURNS - 1
    assert all(share == 1.0 for share, *_ in shares), _report(upstream, shares)


@pytest.mark.parametrize("upstream", sorted(UPSTREAMS))
def test_codex_prefix_is_stable(upstream: str) -> None:
    shares = prefix_shares(codex_session(TURNS), codex_upstream, upstream)
    assert len(shares) == TURNS - 1
    assert all(share == 1.0 for share, *_ in shares), _report(upstream, shares)


def test_billing_header_stays_out_of_translated_upstreams() -> None:
    """The block changes on every request: before a non-Anthropic upstream it is dropped
    (with it, no byte of the prefix would ever repeat)."""
    (_, first), (_, second) = claude_code_session(2)
    assert first["system"][0]["text"] != second["system"][0]["text"]
    for upstream in UPSTREAMS:
        if attempt_for(upstream).provider.kind == "anthropic":
            continue
        for headers, body in claude_code_session(2):
            out = orjson.dumps(claude_code_upstream(upstream, body, headers))
            assert b"x-anthropic-billing-header" not in out, upstream
            assert b"cc_version" not in out, upstream


def test_a_varying_byte_before_the_new_turn_fails_the_measure() -> None:
    """The measure itself: a per-request value early in the body is caught."""
    session = claude_code_session(3)

    def stamped(upstream: str, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
        out = claude_code_upstream(upstream, body, headers)
        first = out["messages"][0]
        return {**out, "messages": [{"name": body["system"][0]["text"], **first},
                                    *out["messages"][1:]]}  # fmt: skip

    shares = prefix_shares(session, stamped, "openai")
    assert all(share < 0.01 for share, *_ in shares), shares


def _markers(value: Any) -> int:
    if isinstance(value, dict):
        return ("cache_control" in value) + sum(_markers(v) for v in value.values())
    if isinstance(value, list):
        return sum(_markers(v) for v in value)
    return 0


@pytest.mark.parametrize("upstream", sorted(UPSTREAMS))
def test_cache_hints_follow_the_preset(upstream: str) -> None:
    """OpenAI gets the session as prompt_cache_key; OpenRouter gets Claude Code's
    breakpoints (the system prompt's and the last message's) as cache_control parts; the
    others get neither (an Anthropic upstream has the client's own)."""
    (headers, body), (_, later) = claude_code_session(2)[1], claude_code_session(3)[2]
    session = headers["x-claude-code-session-id"]
    hints = attempt_for(upstream).provider.cache_hints
    for request in (body, later):
        out = claude_code_upstream(upstream, request, headers)
        assert out.get("prompt_cache_key") == (session if hints == "prompt_cache_key" else None)
        if hints == "cache_control":
            messages = out["messages"]
            assert messages[0]["content"][-1]["cache_control"] == {"type": "ephemeral"}
            last = messages[-1]["content"]
            assert isinstance(last, list) and last[-1]["cache_control"] == {"type": "ephemeral"}
            assert _markers(out) == 2
        elif attempt_for(upstream).provider.kind != "anthropic":
            assert _markers(out) == 0, upstream
    codex_headers, codex = codex_session(1)[0]
    out = codex_upstream(upstream, codex, codex_headers)
    if hints == "prompt_cache_key" or attempt_for(upstream).provider.kind == "responses":
        assert out["prompt_cache_key"] == codex["prompt_cache_key"]
    else:
        assert "prompt_cache_key" not in out
    if hints == "cache_control":  # Codex asks for caching: its last message is the breakpoint
        assert _markers(out) == 1
        assert out["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
