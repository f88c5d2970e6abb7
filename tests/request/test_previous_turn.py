"""A long session's next request reuses what its previous one parsed, wrote and counted
(server/pipeline/previous_turn.py, the Chat writer's record, the token and image memos), and is
answered exactly as a fresh request: the same parsed request, the same upstream bytes for
every upstream kind, the same errors; nothing reused is changed by the request path."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hydra_proxy.chat.request.writer import ChatTarget, chat_request_from_messages
from hydra_proxy.chat.request.writer.messages import WriterRecord
from hydra_proxy.config.routes import request_traits
from hydra_proxy.errors import ProxyError
from hydra_proxy.json_depth import nested_deeper_than
from hydra_proxy.server.checks.limits import parse_object, parse_request
from hydra_proxy.server.pipeline import previous_turn
from hydra_proxy.server.pipeline.previous_turn import PreviousTurns
from hydra_proxy.server.pipeline.upstream_kinds import ClientReply, SessionHints, translated
from hydra_proxy.tokens import estimate_input_tokens
from support.every_kind import attempt_for
from support.implementations import NATIVE_MISSING, _native
from support.long_sessions import session
from support.recorded_sessions import SIGNING_KEY, claude_code_session

pytestmark = pytest.mark.skipif(_native is None, reason=NATIVE_MISSING)

SESSION = ("client key", "session-1")
KINDS = ("openai", "openai-reasoning", "deepseek", "openrouter", "anthropic", "responses",
         "gemini")  # fmt: skip


def plan_body(request: dict[str, Any], upstream: str, memo: dict[Any, Any] | None) -> bytes:
    """The upstream body the server sends for `request` on `upstream`'s kind."""
    exchange = SimpleNamespace(
        caller=SimpleNamespace(signing_key=SIGNING_KEY), worker=SimpleNamespace(impl=None)
    )
    reply = ClientReply(
        "anthropic",
        True,
        request["model"],
        lambda message: message,
        lambda factory: None,  # type: ignore[arg-type,return-value]
    )
    plan = translated(
        exchange,  # type: ignore[arg-type]  # the transducer is never built here
        request,
        attempt_for(upstream),
        reply,
        SessionHints(lambda: "session-1", memo),
    )
    return plan.body


def records(memo: dict[Any, Any]) -> list[WriterRecord]:
    return [v for v in memo.values() if isinstance(v, WriterRecord)]


def test_each_turn_reuses_the_messages_before_it_and_is_sent_as_a_fresh_one_would_be() -> None:
    turns = PreviousTurns(min_bytes=0)
    previous: list[Any] = []
    for n, body in enumerate(session(6)):
        request, turn = parse_request(body, 128, turns, lambda: SESSION)
        assert turn is not None
        assert request == orjson.loads(body)
        messages = request["messages"]
        if n:  # all but the last message before, whose breakpoint moved on
            assert turn.reused == len(previous) - 1
            assert all(a is b for a, b in zip(messages[: turn.reused], previous, strict=False))
            assert messages[turn.reused] is not previous[turn.reused]
        for upstream in KINDS:
            assert plan_body(request, upstream, turn.memo) == plan_body(
                orjson.loads(body), upstream, None
            ), upstream
        if n:
            chat = [r for r in records(turn.memo) if r.target.model == "gpt-4.1"]
            assert chat and chat[0].resumed == turn.reused
        assert estimate_input_tokens(request, turn.memo) == estimate_input_tokens(
            orjson.loads(body)
        )
        assert request_traits(request, memo=turn.memo) == request_traits(orjson.loads(body))
        assert request == orjson.loads(body)  # nothing the path read was changed
        previous = messages


def test_claude_codes_changing_billing_line_does_not_stop_the_writer_resuming() -> None:
    turns = PreviousTurns(min_bytes=0)
    target = ChatTarget(model="m", cache_control=True)
    resumed = []
    for _, body in claude_code_session(6):
        raw = orjson.dumps(body)
        request, turn = turns.parse(SESSION, raw)
        assert turn is not None
        out = chat_request_from_messages(request, target, stream=True, memo=turn.memo)
        fresh = chat_request_from_messages(orjson.loads(raw), target, stream=True)
        assert orjson.dumps(out) == orjson.dumps(fresh)
        resumed.append(records(turn.memo)[0].resumed)
    assert resumed[0] == 0 and all(r > 0 for r in resumed[2:]), resumed


def test_two_conversations_of_one_session_each_reuse_their_own() -> None:
    """A Claude Code session's subagent has its own conversation, under the same id."""
    turns = PreviousTurns(min_bytes=0)
    main, sub = list(session(4)), list(session(4, start=50))
    for a, b in zip(main, sub, strict=True):
        for body in (a, b):
            request, turn = turns.parse(SESSION, body)
            assert request == orjson.loads(body) and turn is not None
    assert turn.reused == len(request["messages"]) - 3


def test_a_rewound_or_edited_conversation_reuses_only_what_is_still_the_same() -> None:
    turns = PreviousTurns(min_bytes=0)
    bodies = list(session(5))
    turns.parse(SESSION, bodies[4])
    request, turn = turns.parse(SESSION, bodies[1])  # rewound: an earlier prefix
    assert request == orjson.loads(bodies[1]) and turn is not None and turn.reused > 0
    edited = orjson.loads(bodies[4])
    edited["messages"][3]["content"] = "changed"
    raw = orjson.dumps(edited)
    request, turn = turns.parse(SESSION, raw)
    assert request == edited and turn is not None and turn.reused == 3


def test_what_is_not_a_plain_split_is_parsed_whole() -> None:
    turns = PreviousTurns(min_bytes=0)
    base = next(session(1))
    turns.parse(SESSION, base)
    inner = base[base.index(b'"messages":') + len(b'"messages":') : -1]
    for body in (
        b'{"messages": [], ' + base[1:],  # the key twice: the last one counts
        b'{"messag\\u0065s": [1], ' + base[1:],  # a key spelt with an escape
        base[:-1] + b', "x": 1}',
        base.replace(b'"messages":', b'"messages" :\n', 1),
    ):
        request, _ = turns.parse(SESSION, body)
        assert request == orjson.loads(body)
    assert inner  # the split found the array in the plain body


@pytest.mark.parametrize(
    "tail",
    [
        b', {"role": "user", "content": "cut',  # invalid JSON in the new message
        b', {"role": "user", "content": "\xff"}',  # invalid UTF-8 in it
        b', {"role": "user", "content": ' + b"[" * 300 + b"]" * 300 + b"}",  # too deep
    ],
)
def test_a_broken_new_turn_is_refused_as_a_fresh_parse_refuses_it(tail: bytes) -> None:
    turns = PreviousTurns(min_bytes=0)
    bodies = list(session(2))
    turns.parse(SESSION, bodies[0])
    at = bodies[1].index(b"]", bodies[1].rindex(b'"role":"user"'))
    broken = bodies[1][:at] + tail + bodies[1][at:]
    with pytest.raises(ProxyError) as fresh:
        parse_object(broken, 128)
    with pytest.raises(ProxyError) as reused:
        parse_request(broken, 128, turns, lambda: SESSION)
    assert (reused.value.status, reused.value.message) == (fresh.value.status, fresh.value.message)


def test_the_kept_bodies_are_bounded() -> None:
    bodies = list(session(3))
    turns = PreviousTurns(max_bytes=len(bodies[2]) * 2, min_bytes=0)
    for i in range(4):
        turns.parse(("key", f"s{i}"), bodies[2])
    assert turns.size <= turns.max_bytes
    assert len(turns._sessions) == 2
    one = PreviousTurns(min_bytes=0)
    for start in range(0, 60, 10):  # six conversations under one session id
        one.parse(SESSION, list(session(3, start=start))[-1])
    assert len(one._sessions[SESSION]) == previous_turn.TURNS_PER_SESSION
    assert one.size == sum(len(t.body) for t in one._sessions[SESSION])


def test_without_a_session_or_the_native_core_every_body_is_parsed_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    body = next(session(1))
    turns = PreviousTurns(min_bytes=0)
    assert turns.parse(None, body)[1] is None
    monkeypatch.setattr(previous_turn, "_elements", None)
    request, turn = turns.parse(SESSION, body)
    assert turn is None and request == orjson.loads(body)


# -- the split against orjson, on generated JSON -----------------------------------------

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**60), 2**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet=st.sampled_from('ab"\\\n\t]}[{,: \u00e9\u2028'), max_size=12),
)  # fmt: skip
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet='ab"\\[', max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


@st.composite
def _documents(draw: st.DrawFn) -> tuple[bytes, dict[str, Any]]:
    members = draw(st.dictionaries(st.sampled_from(["model", "system", "x\\y", "tools"]),
                                   _values, max_size=3))  # fmt: skip
    document = {**members, "messages": draw(st.lists(_values, max_size=6))}
    if draw(st.booleans()):
        document = {"messages": document.pop("messages"), **document}
    indent = draw(st.sampled_from([None, 0, 2]))
    separators = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,\t", " :\r\n")]))
    text = json.dumps(document, indent=indent, separators=separators, ensure_ascii=False)
    return (" " + text + "\n").encode(), document


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_documents())
def test_the_native_split_finds_what_orjson_reads(case: tuple[bytes, dict[str, Any]]) -> None:
    text, document = case
    assert _native is not None
    split = _native.json_member_elements(text, b"messages")
    if "x\\y" in document:  # a key with an escape: never split
        assert split is None
        return
    assert split is not None
    open_at, close_at, offsets, depth = split
    pieces = [text[offsets[i] : offsets[i + 1]] for i in range(0, len(offsets), 2)]
    assert [orjson.loads(p) for p in pieces] == document["messages"]
    rest = orjson.loads(text[:open_at] + b"[]" + text[close_at:])
    assert rest == {**document, "messages": []}
    value = orjson.loads(text)
    assert nested_deeper_than(value, depth - 1) and not nested_deeper_than(value, depth)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_values, max_size=5), min_size=1, max_size=5))
def test_any_sequence_of_requests_parses_as_orjson_parses_each(
    conversations: list[list[Any]],
) -> None:
    turns = PreviousTurns(min_bytes=0)
    for messages in conversations:
        body = orjson.dumps({"model": "m", "messages": messages})
        request, _ = turns.parse(SESSION, body)
        assert request == orjson.loads(body)
