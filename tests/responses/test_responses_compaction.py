"""The compaction carrier and how the Responses reader takes compaction items: the summary
round-trips only with the key it was made for (a rotated key still verifies, another
client's does not, a changed byte never does); ``compaction_trigger`` only as the last
item; a carrier restored as user text at its place, anything else noted as foreign."""

from __future__ import annotations

from typing import Any

import pytest

from hydra_proxy.canonical.target import MessagesTarget
from hydra_proxy.errors import ProxyError
from hydra_proxy.responses.compaction import (
    COMPACTION_PREFIX,
    SUMMARY_REQUEST,
    compact_history,
    compaction_item,
    compaction_stream,
    decode_compaction,
    encode_compaction,
    restored_summary,
)
from hydra_proxy.responses.request.reader import messages_request_from_responses
from hydra_proxy.signing_key import SigningKey, for_client

KEY = b"k" * 32
SUMMARY = "The user wants ünïcödé kept; ran `ls`, saw a.txt.\nNext: edit a.txt."


def test_the_summary_round_trips_with_its_key_only() -> None:
    carrier = encode_compaction(SUMMARY, KEY)
    assert carrier.startswith(COMPACTION_PREFIX) and SUMMARY not in carrier
    assert decode_compaction(carrier, KEY) == SUMMARY
    rotated = SigningKey([b"n" * 32, KEY])  # a new key first, the old one still verifies
    assert decode_compaction(carrier, rotated) == SUMMARY
    assert decode_compaction(carrier, b"x" * 32) is None
    alice, bob = for_client(KEY, b"alice-key"), for_client(KEY, b"bob-key")
    assert decode_compaction(encode_compaction(SUMMARY, alice), bob) is None
    assert decode_compaction(carrier, None) is None


@pytest.mark.parametrize("at", [len(COMPACTION_PREFIX), -5, -1])
def test_a_changed_byte_never_verifies(at: int) -> None:
    carrier = encode_compaction(SUMMARY, KEY)
    changed = carrier[:at] + ("A" if carrier[at] != "A" else "B") + carrier[at + 1 :]
    assert decode_compaction(changed, KEY) is None
    assert decode_compaction("gAAAAB-openai-opaque", KEY) is None
    assert decode_compaction(COMPACTION_PREFIX + "no-dot", KEY) is None


def read(items: list[Any]) -> Any:
    body = {"model": "m", "input": items}
    return messages_request_from_responses(body, MessagesTarget(model="m", continuation_key=KEY))


USER = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}


def test_a_trigger_asks_for_the_summary_with_no_tool_called() -> None:
    tools = [{"type": "function", "name": "f", "parameters": {"type": "object"}}]
    body = {"model": "m", "input": [USER, {"type": "compaction_trigger"}], "tools": tools}
    translation = messages_request_from_responses(body, MessagesTarget(model="m"))
    assert translation.compaction
    last = translation.body["messages"][-1]
    assert last["role"] == "user" and last["content"][-1]["text"] == SUMMARY_REQUEST
    assert translation.body["tool_choice"] == {"type": "none"}


def test_a_trigger_anywhere_but_last_is_a_400() -> None:
    with pytest.raises(ProxyError) as caught:
        read([{"type": "compaction_trigger"}, USER])
    assert caught.value.status == 400 and caught.value.param == "input[0].type"


def test_a_carrier_is_the_summary_at_its_place_and_a_foreign_item_is_noted() -> None:
    item = compaction_item(SUMMARY, KEY, "cmp_1")
    translation = read([USER, item, USER])
    texts = [b["text"] for m in translation.body["messages"] for b in m["content"]]
    assert texts == ["hi", restored_summary(SUMMARY), "hi"]
    assert translation.foreign_compaction is None and not translation.compaction
    foreign = read([USER, {"type": "compaction", "encrypted_content": "gAAAAB-opaque"}])
    assert foreign.foreign_compaction == "input[1]"


def test_the_compact_endpoint_keeps_user_messages_then_the_item() -> None:
    item = compaction_item(SUMMARY, KEY, "cmp_1")
    developer = {"type": "message", "role": "developer", "content": []}
    assert compact_history([developer, USER, {"type": "function_call"}], item) == {
        "output": [USER, item]
    }


def test_the_stream_of_a_compaction() -> None:
    item = compaction_item(SUMMARY, KEY, "cmp_1")
    response = {"id": "resp_1", "status": "completed", "output": [item], "usage": {"x": 1}}
    events = compaction_stream(response).decode().split("\n\n")[:-1]
    kinds = [e.splitlines()[0] for e in events]
    assert kinds == [
        "event: response.created",
        "event: response.output_item.added",
        "event: response.output_item.done",
        "event: response.completed",
    ]
