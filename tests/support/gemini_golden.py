"""The Gemini golden cases (tests/golden/record.py, tests/twins/test_golden.py): every Gemini
recording and the hand-written corner cases through AnthropicViaGeminiStream and
ChatViaGeminiStream, plus seeded draws of the Gemini stream strategy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hydra_proxy import transducers
from support.gemini_streams import GEMINI_STREAMS, chunk, frame
from support.implementations import NATIVE_MISSING, _native

GEMINI_DIRECTIONS = ("anthropic_via_gemini", "chat_via_gemini")
GOLDEN = Path(__file__).parents[1] / "golden"
KEY = "golden-key"
SIG = "EpwICpkIAXLI2nx+/w=="
USAGE = {
    "promptTokenCount": 120,
    "cachedContentTokenCount": 20,
    "candidatesTokenCount": 30,
    "thoughtsTokenCount": 7,
}


def gemini_class(direction: str, impl: str) -> Any:
    name = (
        "AnthropicViaGeminiStream" if direction == "anthropic_via_gemini" else "ChatViaGeminiStream"
    )
    if impl == "python":
        return getattr(transducers, name)
    if _native is None:
        import pytest

        pytest.skip(NATIVE_MISSING)
    return getattr(_native, name)


def make_gemini(direction: str, impl: str, options: dict[str, Any]) -> Any:
    cls = gemini_class(direction, impl)
    if direction == "anthropic_via_gemini":
        return cls("msg_golden", "claude-golden", 42, **options)
    return cls("chatcmpl-golden", "gemini-golden", 1764547200, message_id="msg_golden", **options)


def _streamed_call(name: str, *pieces: dict[str, Any], end: bool = True) -> list[dict[str, Any]]:
    parts = [{"functionCall": {"name": name, "willContinue": True}}]
    parts += [{"functionCall": {"partialArgs": [p], "willContinue": True}} for p in pieces]
    return parts + ([{"functionCall": {}}] if end else [])


def corners() -> dict[str, bytes]:
    text = chunk({"text": "Hello"})
    stop = chunk({"text": ""}, finish="STOP", usage=USAGE)
    return {
        "empty": b"",
        "text-cut-off": frame(text),
        "text-lf-framing": frame(text, stop, crlf=False),
        "late-usage": frame(text, chunk(finish="STOP"), {"usageMetadata": USAGE}),
        "error-chunk": frame(text, {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
        "error-chunk-bad-key": frame({"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}}),
        "error-chunk-no-message": frame({"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}}),
        "error-odd-shape": frame({"error": {"code": 500, "message": "boom"}, "candidates": 7}),
        "blocked-prompt": frame({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {"promptTokenCount": 9}}),
        "safety": frame(text, chunk(finish="SAFETY", usage=USAGE)),
        "max-tokens": frame(chunk({"text": "Hel"}), chunk({"text": "lo"}, finish="MAX_TOKENS", usage=USAGE)),
        "malformed-function-call": frame(chunk({"text": "Let me call it"}), {"candidates": [{"content": {"parts": []}, "finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": "Malformed function call: print(x"}]}),
        "thought-then-text": frame(chunk({"text": "Think", "thought": True}), chunk({"text": "ing.", "thought": True}), chunk({"text": "Answer", "thoughtSignature": SIG}), stop),
        "thought-unsigned": frame(chunk({"text": "Think", "thought": True}), chunk({"text": "Answer"}), stop),
        "thought-signed-on-thought": frame(chunk({"text": "Think", "thought": True, "thoughtSignature": SIG}), chunk({"text": "Answer"}), stop),
        "signature-not-base64": frame(chunk({"text": "Think", "thought": True}), chunk({"text": "Answer", "thoughtSignature": "not base64!"}), stop),
        "trailing-signature": frame(chunk({"text": "Answer"}), chunk({"text": "", "thoughtSignature": SIG}, finish="STOP", usage=USAGE)),
        "parallel-calls": frame(chunk({"functionCall": {"name": "Read", "args": {"path": "a.txt"}}, "thoughtSignature": SIG}, {"functionCall": {"name": "Read", "args": {"path": "b.txt"}}}), stop),
        "call-with-id-and-odd-args": frame(chunk({"functionCall": {"id": "call_7", "name": "A", "args": [1, 2]}}, {"functionCall": {"id": "bad id!", "name": "B"}}, {"functionCall": {"name": "C", "args": {"x": 1.5e20, "y": 1e-7, "z": -0.0, "w": "\u00e9\\"}}}), stop),
        "partial-args": frame(*[chunk(p) for p in _streamed_call("Write", {"jsonPath": "$.path", "stringValue": "a.", "willContinue": True}, {"jsonPath": "$.path", "stringValue": "txt"}, {"jsonPath": "$.lines[0]", "numberValue": 3}, {"jsonPath": "$.lines[1]", "numberValue": 0.5}, {"jsonPath": "$.opts.force", "boolValue": True}, {"jsonPath": "$['odd key']", "nullValue": "NULL_VALUE"})], stop),
        "partial-args-no-end-marker": frame(*[chunk(p) for p in _streamed_call("Write", {"jsonPath": "$.a", "stringValue": "x"}, end=False)], stop),
        "partial-args-then-text": frame(*[chunk(p) for p in _streamed_call("Write", {"jsonPath": "$.a", "stringValue": "x"}, end=False)], chunk({"text": "done"}), stop),
        "partial-args-bad-path": frame(*[chunk(p) for p in _streamed_call("Write", {"jsonPath": "$.a[5]", "stringValue": "x"})], stop),
        "partial-args-no-path": frame(*[chunk(p) for p in _streamed_call("Write", {"stringValue": "x"})], stop),
        "partial-args-cut-off": frame(*[chunk(p) for p in _streamed_call("Write", {"jsonPath": "$.a", "stringValue": "x", "willContinue": True}, end=False)]),
        "code-parts": frame(chunk({"executableCode": {"language": "PYTHON", "code": "print(1)"}}, {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}}, {"inlineData": {"mimeType": "image/png", "data": "AAAA"}}), stop),
        "invalid-json": frame(text, b"{not json"),
        "bad-shape": frame(text, {"candidates": [{"content": {"parts": [{"text": 5}]}}]}),
        "bad-shape-candidate": frame({"candidates": [None]}),
        "not-an-object": frame([1, 2]),
        "escapes": frame(chunk({"text": "q\"\\\n\x00\u2028 \U0001f600"}), stop),
        "whitespace-text": frame(chunk({"text": "\n\n"}), chunk({"text": "Hi"}), chunk({"text": "  "}), stop),
        "oversize-event": frame(chunk({"text": "x" * 200}), stop),
        "repeated-keys-last-wins": frame(b'{"candidates":[{"content":{"parts":[{"text":5,"text":"ok","thought":1,"thought":false}]}}],"error":{},"error":null}', stop),
        "repeated-arg-keys": frame(b'{"candidates":[{"content":{"parts":[{"functionCall":{"name":"A","args":{"x":1,"y":2,"x":[1.0,1E2]}}}]}}]}', b'{"candidates":[{"content":{"parts":[{"functionCall":{"name":"B","args":{"x":1,"y":2,"x":{"z":-0}}}}]}}]}', stop),
        "deep-args": frame(chunk({"functionCall": {"name": "D", "args": {"a": [[[[[[[[[[[]]]]]]]]]]], "b": 12345678901234567890123}}}), stop),
        "other-candidates-unread": frame(b'{"candidates":[{"content":{"parts":[{"text":"first"}]}},{"content":7},null]}', stop),
    }  # fmt: skip


def generated() -> dict[str, bytes]:
    """Seeded draws of the hypothesis strategy (tests/support/gemini_streams.py)."""
    from hypothesis import HealthCheck, given, seed, settings

    from support import gemini_streams

    drawn: list[bytes] = []

    @seed(20261201)
    @settings(
        max_examples=30,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(gemini_streams.streams())
    def collect(stream: bytes) -> None:
        drawn.append(stream)

    collect()
    unique = list(dict.fromkeys(drawn))[:20]
    return {f"generated-{i:02d}": body for i, body in enumerate(unique)}  # fmt: skip


def write_inputs() -> None:
    folder = GOLDEN / "inputs" / "gemini"
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.sse"):
        old.unlink()
    from support.failure_streams import failure_inputs

    inputs = {f"corner-{k}": v for k, v in corners().items()} | generated()
    inputs |= {f"corner-fail-{k}": v for k, v in failure_inputs()["gemini"].items()}
    for name, body in sorted(inputs.items()):
        (folder / f"{name}.sse").write_bytes(body)


def cases() -> list[dict[str, Any]]:
    sources = [f"fixture:gemini/{n}" for n in GEMINI_STREAMS] + [
        f"input:gemini/{p.name}" for p in sorted((GOLDEN / "inputs" / "gemini").glob("*.sse"))
    ]
    out: list[dict[str, Any]] = []
    for source in sources:
        for signed in (True, False):
            key = KEY if signed else None
            out.append(
                {
                    "direction": "anthropic_via_gemini",
                    "input": source,
                    "options": {"signing_key": key},
                }
            )
            out.append(
                {
                    "direction": "chat_via_gemini",
                    "input": source,
                    "options": {
                        "include_usage": signed,
                        "signing_key": key,
                        "continuation_key": key,
                    },
                }
            )
    oversize = "input:gemini/corner-oversize-event.sse"
    out += [
        {"direction": "anthropic_via_gemini", "input": oversize, "options": {"signing_key": KEY, "max_event_bytes": 128}},
        {"direction": "chat_via_gemini", "input": oversize, "options": {"signing_key": KEY, "max_event_bytes": 128}},
        {"direction": "anthropic_via_gemini", "input": "input:gemini/corner-text-cut-off.sse", "options": {"signing_key": KEY}, "script": ["ping", "feed", "ping", ["fail", "overloaded_error", "upstream broke"], "finish"]},
        {"direction": "chat_via_gemini", "input": "input:gemini/corner-empty.sse", "options": {"include_usage": True}, "script": ["ping", "feed", "ping", "finish", "ping"]},
    ]  # fmt: skip
    return out
