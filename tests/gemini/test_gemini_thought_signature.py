"""Gemini thoughtSignatures carried in proxy-signed thinking blocks (signature.py kind gts)."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from hydra_proxy.gemini.thought_signature import (
    carried_thought_signature,
    same_signature,
    sign_thought_signature,
    signature_bytes,
    thought_signature_block,
)
from hydra_proxy.signature import (
    KIND_GEMINI_THOUGHT_SIGNATURE,
    is_proxy_signature,
    open_carried,
    sign_carried,
    sign_thinking,
    verify_thinking,
)
from support.gemini_fixtures import load_json, stream_chunks

KEY = b"k" * 32
OTHER_KEY = b"o" * 32
RECORDING = "pydantic-gemini3pro-stream-function-call-thought-signature"


def _turn1_signature() -> str:
    part = stream_chunks(f"{RECORDING}.1.sse")[0]["candidates"][0]["content"]["parts"][0]
    signature: str = part["thoughtSignature"]
    return signature


def _turn2_replayed_signature() -> str:
    body = load_json(f"{RECORDING}.2.request.json")["body"]
    signature: str = body["contents"][1]["parts"][0]["thoughtSignature"]
    return signature


def test_recordings_show_both_base64_alphabets() -> None:
    sent, replayed = _turn1_signature(), _turn2_replayed_signature()
    assert sent != replayed
    assert "+" in sent and "/" in sent and "-" not in sent
    assert "-" in replayed and "_" in replayed and "+" not in replayed
    assert signature_bytes(sent) == signature_bytes(replayed)
    assert same_signature(sent, replayed)


def test_signature_bytes_ignores_padding_and_rejects_non_base64() -> None:
    sent = _turn1_signature()
    assert signature_bytes(sent.rstrip("=")) == signature_bytes(sent)
    with pytest.raises(ValueError):
        signature_bytes("not base64!")
    assert not same_signature("not base64!", "not base64!")


def test_block_round_trip_keeps_the_exact_text() -> None:
    sent = _turn1_signature()
    block = thought_signature_block(sent, KEY, "summary")
    assert block is not None
    assert block["type"] == "thinking" and block["thinking"] == "summary"
    assert is_proxy_signature(block["signature"])  # stripped before any Anthropic upstream
    assert carried_thought_signature(block, KEY) == sent


def test_summary_text_is_not_bound() -> None:
    block = thought_signature_block(_turn1_signature(), KEY, "summary")
    assert block is not None
    edited = {**block, "thinking": "a client rebuilt this text"}
    assert carried_thought_signature(edited, KEY) == _turn1_signature()


@pytest.mark.parametrize(
    "mangle",
    [
        lambda s: s.replace("hydra1.gts.E", "hydra1.gts.F", 1),  # payload changed
        lambda s: s[:-1] + ("A" if s[-1] != "A" else "B"),  # MAC changed
        lambda s: s.replace("hydra1.gts.", "hydra1.xyz.", 1),  # other kind
        lambda s: s.rsplit(".", 1)[0],  # no MAC
        lambda s: s + "=",
    ],
)
def test_tampered_carrier_is_refused(mangle: object) -> None:
    block = thought_signature_block(_turn1_signature(), KEY)
    assert block is not None
    assert callable(mangle)
    assert (
        carried_thought_signature({**block, "signature": mangle(block["signature"])}, KEY) is None
    )


def test_other_key_and_other_blocks_are_refused() -> None:
    block = thought_signature_block(_turn1_signature(), KEY)
    assert carried_thought_signature(block, OTHER_KEY) is None
    text_signed = {"type": "thinking", "thinking": "t", "signature": sign_thinking("t", KEY)}
    assert carried_thought_signature(text_signed, KEY) is None
    assert carried_thought_signature({"type": "redacted_thinking", "data": "x"}, KEY) is None
    assert carried_thought_signature("hydra1.gts.AAAA.x", KEY) is None


def test_kinds_do_not_cross() -> None:
    carrier = sign_carried(KIND_GEMINI_THOUGHT_SIGNATURE, "QUJD", KEY)
    assert not verify_thinking("", carrier, KEY)
    assert not verify_thinking("QUJD", carrier, KEY)
    # Reasoning text the proxy signs can never double as a carrier (separate MAC domain).
    forged_mac = sign_thinking("gts\x00QUJD", KEY).removeprefix("hydra1.")
    assert open_carried(f"hydra1.gts.QUJD.{forged_mac}", KIND_GEMINI_THOUGHT_SIGNATURE, KEY) is None
    assert open_carried(carrier, KIND_GEMINI_THOUGHT_SIGNATURE, KEY) == "QUJD"


def test_payload_alphabet_is_enforced() -> None:
    with pytest.raises(ValueError):
        sign_carried(KIND_GEMINI_THOUGHT_SIGNATURE, "a.b", KEY)
    with pytest.raises(ValueError):
        sign_carried("Bad.Kind", "QUJD", KEY)
    assert sign_thought_signature("not base64!", KEY) is None
    assert thought_signature_block("not base64!", KEY) is None


def test_carrier_wire_format_follows_the_documented_formula() -> None:
    """The bytes a native twin must reproduce: hydra1.<kind>.<payload>.<base64url(
    HMAC-SHA256(key, b"hydra1-carried\\0" + kind + b"\\0" + payload)[:18])>."""
    key = bytes(range(32))
    payload = "EpwICpkIAXLI2nx+/w=="
    mac = hmac.new(key, b"hydra1-carried\x00gts\x00" + payload.encode(), hashlib.sha256).digest()
    expected = f"hydra1.gts.{payload}.{base64.urlsafe_b64encode(mac[:18]).decode()}"
    assert sign_carried(KIND_GEMINI_THOUGHT_SIGNATURE, payload, key) == expected
    assert expected == "hydra1.gts.EpwICpkIAXLI2nx+/w==.2uh9x1y90Fh8bgbXXWz41U_i"
