"""Record the golden stream translations (tests/golden/cases.json and outputs/).

    PYTHONPATH=python:tests python tests/golden/record.py [--inputs | --gemini-inputs] [--responses-inputs] [--failure-inputs]

The goldens pin the bytes both transducers emit today, so a refactoring of the stream code
can be checked byte for byte (tests/twins/test_golden.py). Re-record only for an intended change
of output, and say so in the commit. `--inputs` also regenerates the generated inputs under
inputs/ (seeded hypothesis draws and hand-written corner cases); without it the stored
inputs are replayed (`--gemini-inputs` regenerates only inputs/gemini/, `--failure-inputs`
only the corner-fail-* bodies of tests/support/failure_streams.py). Each recording is checked
native == Python before it is written.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from support import gemini_client_golden, gemini_golden, golden_cases  # noqa: E402
from support.implementations import ANTHROPIC_STREAMS, CHAT_STREAMS, _native  # noqa: E402
from support.responses_streams import RESPONSES_STREAMS  # noqa: E402

KEY = "golden-key"


def _generated_inputs() -> dict[str, bytes]:
    """Seeded draws from the hypothesis strategies, plus truncations and corruptions."""
    from hypothesis import HealthCheck, given, seed, settings

    from support import anthropic_streams, chat_streams

    drawn: dict[str, list[bytes]] = {"chat": [], "anthropic": []}

    def collector(folder: str, strategy: Any) -> Any:
        @seed(20261201)
        @settings(
            max_examples=40,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(strategy)
        def collect(stream: Any) -> None:
            drawn[folder].append(stream.encode())

        return collect

    collector("chat", chat_streams.streams())()
    collector("anthropic", anthropic_streams.streams())()

    inputs: dict[str, bytes] = {}
    rng = random.Random(9)
    for folder, bodies in drawn.items():
        unique = list(dict.fromkeys(bodies))
        for i, body in enumerate(unique[:30]):
            inputs[f"{folder}/generated-{i:02d}.sse"] = body
        for i, body in enumerate(b for b in unique[:30] if len(b) > 8):
            if i >= 8:
                break
            cut = rng.randrange(1, len(body))
            inputs[f"{folder}/generated-{i:02d}-cut.sse"] = body[:cut]
            corrupted = bytearray(body)
            at = rng.randrange(len(corrupted))
            corrupted[at : at + 3] = rng.choice([b"\xff\xfe", b"}}", b'"', b"\n\n", b"\x00"])
            inputs[f"{folder}/generated-{i:02d}-corrupt.sse"] = bytes(corrupted)
    return inputs


def write_inputs() -> None:
    inputs = {**_generated_inputs(), **golden_cases.corner_inputs()}
    folder = HERE / "inputs"
    for old in folder.glob("*/*.sse"):
        if old.parent.name != "gemini":  # (gemini_golden.write_inputs writes those)
            old.unlink()
    for name, body in sorted(inputs.items()):
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)


def _responses_cases(chat_inputs: list[str], anthropic_inputs: list[str]) -> list[dict[str, Any]]:
    """The OpenAI Responses compositions: the encoder behind the Chat and the
    Anthropic decoders over their inputs, and the decoder over the Responses recordings."""
    from hydra_proxy.responses.context import ResponsesContext
    from hydra_proxy.responses.encoder import echo_text

    context = ResponsesContext("gpt-golden", instructions="golden", tools=[{"type": "web_search"}])
    full = {
        "echo": echo_text(context),
        "include_encrypted": True,
        "summary": True,
        "signing_key": KEY,
        "tool_names": [
            ["ns__Bash", "Bash", "ns", False],
            ["apply_patch", "apply_patch", None, True],
        ],
    }
    encoder_options: list[dict[str, Any]] = [full, {}]
    inputs = HERE / "inputs"
    responses_inputs = [f"fixture:responses/{n}" for n in sorted(RESPONSES_STREAMS)] + [
        f"input:{p.relative_to(inputs)}" for p in sorted((inputs / "responses").glob("*.sse"))
    ]
    out: list[dict[str, Any]] = []
    for direction, sources in (
        ("responses_via_chat", chat_inputs),
        ("responses_via_anthropic", anthropic_inputs),
    ):
        for source in sources:
            for options in encoder_options:
                out.append({"direction": direction, "input": source, "options": options})
    for source in responses_inputs:
        for signed in (True, False):
            out.append(
                {
                    "direction": "anthropic_via_responses",
                    "input": source,
                    "options": {"signing_key": KEY if signed else None},
                }
            )
            out.append(
                {
                    "direction": "chat_via_responses",
                    "input": source,
                    "options": {
                        "include_usage": signed,
                        "continuation_key": KEY if signed else None,
                        "signing_key": KEY if signed else None,
                    },
                }
            )
    out.append(
        {
            "direction": "responses_via_anthropic",
            "input": "input:anthropic/corner-cut-off.sse",
            "options": full,
            "script": ["ping", "feed", "ping", ["fail", "rate_limit_error", "broke"], "finish"],
        }
    )
    out.append(
        {
            "direction": "responses_via_chat",
            "input": "input:chat/corner-empty.sse",
            "options": full,
            "script": [["fail", "api_error", "before anything"], "feed", "finish"],
        }
    )
    return out


def write_responses_inputs() -> None:
    """Write only the Responses corner inputs (the others stay as recorded)."""
    for name, body in sorted(golden_cases.responses_corner_inputs().items()):
        path = HERE / "inputs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)


def write_failure_inputs() -> None:
    """Write only the failure bodies (tests/support/failure_streams.py)."""
    for name, body in sorted(golden_cases.failure_corner_inputs().items()):
        path = HERE / "inputs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)


def cases() -> list[dict[str, Any]]:
    """Every (direction, input, options, script) the goldens cover."""
    out: list[dict[str, Any]] = []
    inputs = HERE / "inputs"
    chat_inputs = [f"fixture:chat/{n}" for n in CHAT_STREAMS] + [
        f"input:{p.relative_to(inputs)}" for p in sorted((inputs / "chat").glob("*.sse"))
    ]
    anthropic_inputs = [f"fixture:anthropic/{n}" for n in sorted(ANTHROPIC_STREAMS)] + [
        f"input:{p.relative_to(inputs)}" for p in sorted((inputs / "anthropic").glob("*.sse"))
    ]
    for source in chat_inputs:
        for signed in (True, False):
            out.append(
                {
                    "direction": "anthropic_via_chat",
                    "input": source,
                    "options": {"signing_key": KEY if signed else None},
                }
            )
    for source in anthropic_inputs:
        for on in (True, False):
            out.append(
                {
                    "direction": "chat_via_anthropic",
                    "input": source,
                    "options": {"include_usage": on, "continuation_key": KEY if on else None},
                }
            )
    out += _responses_cases(chat_inputs, anthropic_inputs)
    out += golden_cases.scripted_cases()
    out += golden_cases.failure_cases()
    out += gemini_golden.cases()
    out += gemini_client_golden.cases()
    for case in out:
        case.setdefault("script", ["feed", "finish"])
        case["name"] = golden_cases.case_name(case)
    return out


def main() -> None:
    if _native is None:
        raise SystemExit("record with the native extension built: both must agree")
    if "--inputs" in sys.argv:
        write_inputs()
    if "--responses-inputs" in sys.argv:
        write_responses_inputs()
    if "--failure-inputs" in sys.argv:
        write_failure_inputs()
    if "--inputs" in sys.argv or "--gemini-inputs" in sys.argv:
        gemini_golden.write_inputs()
    recorded = []
    outputs = HERE / "outputs"
    for old in outputs.glob("*/*.sse"):
        old.unlink()
    for case in cases():
        results = [golden_cases.run(case, impl) for impl in ("native", "python")]
        if results[0] != results[1]:
            raise SystemExit(f"native and Python disagree on {case['name']}")
        output, state = results[0]
        path = outputs / case["direction"] / f"{case['name']}.sse"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(output)
        recorded.append({**case, "state": state})
    (HERE / "cases.json").write_text(json.dumps(recorded, indent=1, ensure_ascii=False) + "\n")
    print(f"recorded {len(recorded)} cases")


if __name__ == "__main__":
    main()
