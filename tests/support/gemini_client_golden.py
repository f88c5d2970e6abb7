"""The golden cases of the Gemini-client compositions (Gemini out from Chat, Anthropic and
Responses upstreams): every recorded stream and every stored golden input of those
upstreams (tests/golden/inputs/), each with a signing key and thoughts on, thoughts off,
and no key, plus scripted pings and failures. tests/golden/record.py records them with
every other case, tests/twins/test_golden.py replays them on both implementations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.implementations import ANTHROPIC_STREAMS, CHAT_STREAMS
from support.responses_streams import RESPONSES_STREAMS

HERE = Path(__file__).parents[1]
INPUTS = HERE / "golden" / "inputs"
KEY = "golden-key"
CLIENT_ARGUMENTS = ("resp_golden", "gemini-golden")

# direction -> (class name, fixture folder, golden input folder, recorded streams); the
# encoder's leading arguments are CLIENT_ARGUMENTS.
DIRECTIONS: dict[str, tuple[str, str, str, list[str]]] = {
    "gemini_via_chat": ("GeminiViaChatStream", "chat", "chat", list(CHAT_STREAMS)),
    "gemini_via_anthropic": ("GeminiViaAnthropicStream", "anthropic", "anthropic", list(ANTHROPIC_STREAMS)),
    "gemini_via_responses": ("GeminiViaResponsesStream", "responses", "responses", list(RESPONSES_STREAMS)),
}  # fmt: skip

OPTIONS: dict[str, dict[str, Any]] = {
    "signed": {"signing_key": KEY},
    "no-thoughts": {"signing_key": KEY, "include_thoughts": False},
    "unsigned": {},
}


def cases() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for direction, (_, folder, inputs, recorded) in DIRECTIONS.items():
        sources = [f"fixture:{folder}/{n}" for n in recorded] + [
            f"input:{inputs}/{p.name}" for p in sorted((INPUTS / inputs).glob("*.sse"))
        ]
        for source in sources:
            for options in OPTIONS.values():
                out.append(
                    {
                        "direction": direction,
                        "input": source,
                        "options": options,
                        "script": ["feed", "finish"],
                    }
                )
        first = sources[0]
        out += [
            {
                "direction": direction,
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
                "input": first,
                "options": OPTIONS["signed"],
                "script": [["fail", "rate_limit_error", "slow down"], "feed", "finish"],
            },
            {
                "direction": direction,
                "input": first,
                "options": {**OPTIONS["signed"], "max_event_bytes": 64},
                "script": ["feed", "finish"],
            },
        ]
    return out  # fmt: skip
