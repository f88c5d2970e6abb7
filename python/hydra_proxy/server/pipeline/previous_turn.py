"""A long session's previous requests, kept so that its next request parses only what is new.

An agent resends the whole conversation on every turn: late in a session each request is
megabytes, of which only the last turn or two are new. Each worker keeps, per client
session, the last few request bodies with their parsed messages. The next request's
``messages`` are split off its bytes (the native core's `json_member_elements`), and each
leading message byte-equal to the one at the same place before is the *same* parsed object
as then; the rest is parsed by orjson as always: the text around the array (with ``[]`` in
its place) and every message that changed or is new. The request is what a fresh parse
gives (the tests compare them); an unchanged message being the same object lets later steps
reuse what they made of it (`KeptRequest.memo`: the Chat writer's state, the token counts).

Nothing downstream may change a parsed request in place (they copy before changing: the
same rule lets the attempts of one fallback chain share it), or the next turn would see
the change.

Bounded per worker: MAX_SESSIONS sessions of at most TURNS_PER_SESSION bodies each (a
session's subagents have their own conversations) and `session_reuse_bytes` of bodies in
all (default MAX_BYTES; 0: none kept), the least recently used dropped first; what is
parsed of them is about as large again. A body under MIN_BYTES is parsed as always: there
is little to gain. Without the native core there is no split and every body is parsed
whole.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

_elements: Callable[[bytes, bytes], tuple[int, int, list[int], int] | None] | None
_same_leading: Callable[[bytes, list[int], bytes, list[int]], int] | None
try:
    from ... import _native
except ImportError:  # pragma: no cover - the pure-Python install
    _elements = _same_leading = None
else:
    _elements = _native.json_member_elements
    _same_leading = _native.json_same_leading

__all__ = ["MAX_BYTES", "MIN_BYTES", "KeptRequest", "PreviousTurns"]

MIN_BYTES = 64 << 10
# A body at least this large is parsed a turn at a time even when it is not kept: each
# orjson call holds the GIL for one turn only, so a thread parsing it (server/app.py)
# leaves the worker's event loop running (orjson holds it for a whole body: seconds).
PIECEWISE_BYTES = 1 << 20
MAX_BYTES = 64 << 20
MAX_SESSIONS = 256
TURNS_PER_SESSION = 4
# A request that keeps all but at most this many of a kept turn's messages goes on with
# its conversation (Claude Code moves the cache breakpoint off the last one).
CONTINUED = 2


@dataclass(slots=True)
class KeptRequest:
    """One request of a session: its body, where its messages stand in it, the parsed
    messages, and what later steps keep of them for the next turn."""

    body: bytes
    offsets: list[int]
    messages: list[Any]
    depth: int
    """How deep the body's JSON nests (the split measured it)."""
    memo: dict[Any, Any] = field(default_factory=dict)
    """The steps' own records (keyed by the step), carried on to the session's next turn."""
    reused: int = 0
    """How many leading messages were the previous turn's objects (for the tests)."""


class PreviousTurns:
    """The recent turns of each session of one worker (least recently used dropped)."""

    def __init__(
        self,
        max_bytes: int = MAX_BYTES,
        max_sessions: int = MAX_SESSIONS,
        min_bytes: int = MIN_BYTES,
    ) -> None:
        self.max_bytes = max_bytes
        self.max_sessions = max_sessions
        self.min_bytes = min_bytes
        self.size = 0
        self._sessions: OrderedDict[Any, list[KeptRequest]] = OrderedDict()
        # A big body is parsed in a thread (server/app.py): the sessions' lookups and
        # changes are short and taken one at a time; the parsing is not.
        self._lock = threading.Lock()

    def parse(
        self, session: Any, body: bytes, member: bytes = b"messages"
    ) -> tuple[Any, KeptRequest | None]:
        """`body` parsed (a fresh orjson parse's equal), and its KeptRequest when it is kept (None:
        parsed whole and not kept); `member`: where the body keeps its turns (a Gemini
        body's ``contents``, a Responses body's ``input``). Raises what orjson raises for a
        body it refuses; the caller parses it again for the error message."""
        kept = session is not None and len(body) <= self.max_bytes
        if (
            _elements is None
            or len(body) < self.min_bytes
            or (not kept and len(body) < PIECEWISE_BYTES)
        ):
            return orjson.loads(body), None
        split = _elements(body, member)
        if split is None:
            return orjson.loads(body), None
        open_at, close_at, offsets, depth = split
        previous: KeptRequest | None = None
        reused = 0
        if kept:
            with self._lock:
                turns = self._sessions.get(session)
                previous, reused = self._closest(list(turns or ()), body, offsets)
        request = orjson.loads(body[:open_at] + b"[]" + body[close_at:])
        name = member.decode()
        if type(request) is not dict or request.get(name) != []:
            return orjson.loads(body), None  # not the split it looked like
        messages = previous.messages[:reused] if previous is not None else []
        for k in range(reused, len(offsets) // 2):
            messages.append(orjson.loads(body[offsets[2 * k] : offsets[2 * k + 1]]))
        request[name] = messages
        if not kept:
            return request, None
        turn = KeptRequest(
            body, offsets, messages, depth, previous.memo if previous else {}, reused
        )
        with self._lock:
            self._keep(session, self._sessions.get(session), previous, turn)
        return request, turn

    def _closest(
        self, turns: list[KeptRequest], body: bytes, offsets: list[int]
    ) -> tuple[KeptRequest | None, int]:
        """The kept turn sharing the most leading messages with `body`, and how many."""
        assert _same_leading is not None
        best, most = None, 0
        for turn in turns:
            same = _same_leading(turn.body, turn.offsets, body, offsets)
            if same > most:
                best, most = turn, same
        return best, most

    def _keep(
        self,
        session: Any,
        turns: list[KeptRequest] | None,
        previous: KeptRequest | None,
        turn: KeptRequest,
    ) -> None:
        if turns is None:
            turns = self._sessions[session] = []
        self._sessions.move_to_end(session)
        kept = previous is not None and any(t is previous for t in turns)
        if kept and previous is not None and turn.reused >= len(previous.messages) - CONTINUED:
            # The conversation went on: its older body is done with (a conversation that
            # only began the same, such as a subagent's, is kept beside it; one dropped
            # meanwhile by another thread's request is gone already).
            turns.remove(previous)
            self.size -= len(previous.body)
        elif len(turns) >= TURNS_PER_SESSION:
            self.size -= len(turns.pop(0).body)
        turns.append(turn)
        self.size += len(turn.body)
        while self._sessions and (
            self.size > self.max_bytes or len(self._sessions) > self.max_sessions
        ):
            _, dropped = self._sessions.popitem(last=False)
            self.size -= sum(len(t.body) for t in dropped)
