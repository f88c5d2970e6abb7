"""The signing keys: at least 32 random bytes, created once (atomically, mode 0600) however
many workers start together, refused when shorter; several files for a rotation (the first
signs, every one verifies) across every kind of signature the proxy hands out; a client
key's own derived keys, so a carrier made for one client does not verify for another."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import orjson
import pytest

from hydra_proxy import continuation, signature
from hydra_proxy.gemini.thought_signature import carried_thought_signature, thought_signature_block
from hydra_proxy.responses.reasoning import (
    decode_carrier,
    encode_carrier,
    sign_upstream_item,
    verify_upstream_item,
)
from hydra_proxy.signing_key import (
    MIN_KEY_BYTES,
    SigningKey,
    SigningKeyError,
    for_client,
    load_signing_key,
    verifying_keys,
)
from support.implementations import (
    IMPLEMENTATIONS,
    anthropic_via_chat_class,
    chat_via_anthropic_class,
    feed_all,
)

OLD = b"o" * 32
NEW = b"n" * 32


def test_a_new_key_is_created_once_by_workers_starting_together(tmp_path: Path) -> None:
    path = tmp_path / "dir" / "signing-key"
    keys: list[bytes] = []
    barrier = threading.Barrier(8)

    def start() -> None:
        barrier.wait()
        keys.append(bytes(load_signing_key(str(path))))

    threads = [threading.Thread(target=start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(keys)) == 1 and len(keys[0]) == MIN_KEY_BYTES
    assert keys[0] == path.read_bytes()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert os.listdir(path.parent) == ["signing-key"]  # nothing left aside


@pytest.mark.parametrize("size", [0, 1, 16, 31])
def test_a_short_key_is_refused_never_replaced(tmp_path: Path, size: int) -> None:
    path = tmp_path / "signing-key"
    path.write_bytes(b"k" * size)
    with pytest.raises(SigningKeyError, match=f"holds {size} bytes"):
        load_signing_key(str(path))
    assert path.read_bytes() == b"k" * size


def test_a_verifying_key_file_must_exist_and_is_never_created(tmp_path: Path) -> None:
    first, second = tmp_path / "new", tmp_path / "old"
    with pytest.raises(SigningKeyError, match="does not exist"):
        load_signing_key([str(first), str(second)])
    assert not second.exists()
    second.write_bytes(OLD)
    key = load_signing_key(f"{first}{os.pathsep}{second}")  # the variable's form
    assert verifying_keys(key) == (first.read_bytes(), OLD)
    assert bytes(key) == first.read_bytes()


def rotated() -> SigningKey:
    return SigningKey([NEW, OLD])


def test_a_rotation_keeps_every_old_signature_verifying_and_signs_with_the_new_key() -> None:
    thinking = "Let me think about this."
    sig = signature.sign_thinking(thinking, OLD)
    assert signature.verify_thinking(thinking, sig, rotated())
    assert not signature.verify_thinking(thinking, sig, SigningKey([NEW]))
    assert signature.sign_thinking(thinking, rotated()) == signature.sign_thinking(thinking, NEW)
    # Gemini thoughtSignature carriers.
    block = thought_signature_block("c2lnbmF0dXJl", OLD)
    assert block is not None
    assert carried_thought_signature(block, rotated()) == "c2lnbmF0dXJl"
    assert carried_thought_signature(block, SigningKey([NEW])) is None
    # Continuation suffixes (Chat clients).
    blocks: list[continuation.Block] = [
        continuation.ThinkingBlock("abc", "sig"),
        continuation.RedactedBlock("r"),
    ]
    text = "abc" + continuation.encode(blocks, OLD)
    found = continuation.find(text, rotated())
    assert isinstance(found, continuation.VerifiedSuffix) and found.blocks == blocks
    assert continuation.find(text, SigningKey([NEW])) is False
    # Responses reasoning carriers, both kinds.
    carrier = encode_carrier([{"type": "thinking", "thinking": "t", "signature": "s"}], OLD)
    assert decode_carrier(carrier, rotated()) == [
        {"type": "thinking", "thinking": "t", "signature": "s"}
    ]
    assert decode_carrier(carrier, SigningKey([NEW])) is None
    item = sign_upstream_item("t", "rs_1", "gAAAA", OLD)
    assert verify_upstream_item("t", item, rotated()) == {
        "id": "rs_1",
        "encrypted_content": "gAAAA",
    }
    assert verify_upstream_item("t", item, SigningKey([NEW])) is None


def test_a_carrier_made_for_one_client_key_does_not_verify_for_another() -> None:
    alice, bob = for_client(rotated(), b"team-key-alice"), for_client(rotated(), b"team-key-bob")
    assert bytes(alice) != bytes(bob) and bytes(alice) not in (NEW, OLD)
    sig = signature.sign_thinking("plan", alice)
    assert signature.verify_thinking("plan", sig, for_client(rotated(), b"team-key-alice"))
    assert not signature.verify_thinking("plan", sig, bob)
    assert not signature.verify_thinking("plan", sig, rotated())
    text = "plan" + continuation.encode([continuation.ThinkingBlock("plan", "s")], alice)
    assert continuation.find(text, bob) is False
    # A rotation still holds per client: alice's old-key carrier verifies after it.
    before = for_client(SigningKey([OLD]), b"team-key-alice")
    assert signature.verify_thinking("plan", signature.sign_thinking("plan", before), alice)
    assert "team-key" not in repr(alice) and repr(NEW) not in repr(rotated())


def sse(*events: dict[str, object]) -> bytes:
    return b"".join(
        b"event: " + str(e["type"]).encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n"
        for e in events
    )


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_both_transducers_sign_with_the_first_key(impl: str) -> None:
    chunk = (
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
        b'[{"index":0,"delta":{"reasoning_content":"hmm"},"finish_reason":null}]}\n\n'
        b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":'
        b'[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )
    out = feed_all(anthropic_via_chat_class(impl)("msg_1", "m", 5, signing_key=rotated()), chunk)
    assert signature.sign_thinking("hmm", NEW).encode() in out
    # The continuation suffix a Chat client is handed: made with the first key.
    stream = sse(
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role":
         "assistant", "model": "m", "content": [], "usage": {"input_tokens": 1, "output_tokens": 0}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking",
         "thinking": "", "signature": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta",
         "signature": "EqQBCgIYAhIM"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}},
        {"type": "message_stop"},
    )  # fmt: skip
    chat = chat_via_anthropic_class(impl)("c", "m", 1, continuation_key=rotated())
    reasoning = "".join(
        orjson.loads(line[6:])["choices"][0]["delta"].get("reasoning_content") or ""
        for line in feed_all(chat, stream).split(b"\n")
        if line.startswith(b"data: {") and b'"choices":[{' in line
    )
    assert isinstance(continuation.find(reasoning, SigningKey([NEW])), continuation.VerifiedSuffix)
    assert continuation.find(reasoning, SigningKey([OLD])) is False
