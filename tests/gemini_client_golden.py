"""The golden cases of the Gemini-client compositions (Gemini out from Chat, Anthropic and
Responses upstreams): every recorded stream and every stored golden input of those
upstreams (tests/golden/inputs/), each with a signing key and thoughts on, thoughts off,
and no key, plus scripted pings and failures. tests/golden_gemini_client/record.py
records them, tests/twins/test_golden_gemini_client.py replays them on both implementations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from golden_cases import load_input
from hydra_proxy import transducers
from implementations import ANTHROPIC_STREAMS, NATIVE_MISSING, OPENAI_STREAMS, _native
from responses_streams import RESPONSES_STREAMS

HERE = Path(__file__).parent
GOLDEN = HERE / "golden_gemini_client"
INPUTS = HERE / "golden" / "inputs"
KEY = "golden-key"

# direction -> (class name, fixture folder, golden input folder, recorded streams)
DIRECTIONS: dict[str, tuple[str, str, str, list[str]]] = {
    "gemini_via_chat": ("GeminiViaChatStream", "openai", "chat", list(OPENAI_STREAMS)),
    "gemini_via_messages": ("GeminiViaMessagesStream", "anthropic", "anthropic", list(ANTHROPIC_STREAMS)),
    "gemini_via_responses": ("GeminiViaResponsesStream", "responses", "responses", list(RESPONSES_STREAMS)),
}  # fmt: skip

OPTIONS: dict[str, dict[str, Any]] = {
    "signed": {"signing_key": KEY},
    "no-thoughts": {"signing_key": KEY, "include_thoughts": False},
    "unsigned": {},
}


def make(case: dict[str, Any], impl: str) -> Any:
    class_name = DIRECTIONS[case["direction"]][0]
    if impl == "native":
        if _native is None:
            import pytest

            pytest.skip(NATIVE_MISSING)
        cls = getattr(_native, class_name)
    else:
        cls = getattr(transducers, class_name)
    options = dict(case["options"])
    if options.get("signing_key") is not None:
        options["signing_key"] = options["signing_key"].encode()
    return cls("resp_golden", "gemini-golden", **options)


def run(
    case: dict[str, Any], impl: str, cuts: list[int] | None = None
) -> tuple[bytes, dict[str, Any]]:
    """Run the case's script; "feed" feeds the input split at `cuts`. (output, end state)."""
    t = make(case, impl)
    data = load_input(case["input"])
    out = []
    for step in case["script"]:
        if step == "feed":
            start = 0
            for cut in sorted(cuts or []):
                out.append(t.feed(data[start:cut]))
                start = cut
            out.append(t.feed(data[start:]))
        elif step == "finish":
            out.append(t.finish())
        elif step == "ping":
            out.append(t.ping())
        else:
            out.append(t.fail(step[1], step[2]))
    state = {
        "finished": t.finished,
        "complete": t.complete,
        "error": list(t.error) if t.error is not None else None,
        "has_content": t.has_content,
        "stop_reason": t.stop_reason,
        "usage": list(t.usage),
        "reasoning_tokens": t.reasoning_tokens,
    }
    return b"".join(out), state


def _safe(name: str) -> str:
    return name.replace("/", "__")


def cases() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for direction, (_, folder, inputs, recorded) in DIRECTIONS.items():
        sources = [f"fixture:{folder}/{n}" for n in recorded] + [
            f"input:{inputs}/{p.name}" for p in sorted((INPUTS / inputs).glob("*.sse"))
        ]
        for source in sources:
            for label, options in OPTIONS.items():
                name = f"{_safe(source.partition(':')[2])}.{label}"
                out.append(
                    {
                        "direction": direction,
                        "name": name,
                        "input": source,
                        "options": options,
                        "script": ["feed", "finish"],
                    }
                )
        first = sources[0]
        out += [
            {
                "direction": direction,
                "name": "script-ping-fail",
                "input": first,
                "options": OPTIONS["signed"],
                "script": [
                    "ping",
                    "feed",
                    "ping",
                    ["fail", "overloaded_error", "upstream broke"],
                    "finish",
                    "ping",
                ],
            },
            {
                "direction": direction,
                "name": "script-fail-first",
                "input": first,
                "options": OPTIONS["signed"],
                "script": [["fail", "rate_limit_error", "slow down"], "feed", "finish"],
            },
            {
                "direction": direction,
                "name": "script-small-events",
                "input": first,
                "options": {**OPTIONS["signed"], "max_event_bytes": 64},
                "script": ["feed", "finish"],
            },
        ]
    return out  # fmt: skip
