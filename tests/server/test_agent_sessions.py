"""The agents of one session (Claude Code's lead and its teammates, which share the
session header and differ by ``x-claude-code-agent-id``): each its own prompt-cache key and
its own place in the fair queue; the teammate route trait reads the same header."""

from __future__ import annotations

from collections.abc import Callable

from hydra_proxy.config.routes import request_traits
from hydra_proxy.server.checks.admission import session_of
from hydra_proxy.server.pipeline.sessions import agent_id, session_cache_key

SESSION = b"0f8c2f1e-6f0b-4c0e-9d55-2f3a1b7c9e10"
BODY = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}


def headers(agent: bytes | None) -> list[tuple[bytes, bytes]]:
    out = [(b"x-claude-code-session-id", SESSION)]
    return [*out, (b"x-claude-code-agent-id", agent)] if agent else out


def reader(agent: bytes | None) -> Callable[[bytes], bytes | None]:
    return lambda name: dict(headers(agent)).get(name)


def test_each_agent_of_a_session_its_own_cache_key_and_queue() -> None:
    lead, mate, other = None, b"a1b2c3d4e5", b"f6e5d4c3b2"
    keys = [session_cache_key(None, reader(a)) for a in (lead, mate, other)]
    assert keys[0] == SESSION.decode() and len(set(keys)) == 3
    assert all(k is not None and k.startswith(SESSION.decode()) for k in keys)
    queues = [session_of({"headers": headers(a)}, None) for a in (lead, mate, other)]
    assert len(set(queues)) == 3 and all(q.startswith("s:" + SESSION.decode()) for q in queues)
    assert [agent_id(reader(a)) for a in (lead, mate)] == [None, "a1b2c3d4e5"]


def test_the_teammate_trait() -> None:
    assert not request_traits(BODY, headers=headers(None)).teammate
    assert request_traits(BODY, headers=headers(b"a1b2c3d4e5")).teammate
