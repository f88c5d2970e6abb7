"""Native events/s of this build against another (e.g. the previous commit's), interleaved.

    HYDRA_BENCH_PREVIOUS=/path/to/previous/_native.abi3.so python benches/compare_builds.py

On a shared machine, load drifts over a benchmark run; timing the two builds in alternating
rounds (each round translates the whole corpus once with each build) and taking each one's
best round makes the ratio robust to it. Same streams and chunkings as the micro benchmark
(streams.py) for AnthropicViaChatStream, and the recorded Anthropic streams for
ChatViaAnthropicStream. Prints a Markdown table; the ratio is new / previous events/s.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from streams import CHUNKINGS, STREAMS  # noqa: E402

ROUNDS = int(os.environ.get("HYDRA_BENCH_ROUNDS", "40"))


def load(path: str, package: str) -> Any:
    """A build of the extension under its own package name (the init symbol is the same)."""
    name = f"{package}._native"
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_file_location(name, path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def anthropic_via_chat(module: Any, chunked: list[list[bytes]]) -> None:
    for chunks in chunked:
        t = module.AnthropicViaChatStream("msg_bench", "claude-sonnet-4-5", 100, signing_key=b"k")
        for chunk in chunks:
            t.feed(chunk)
        t.finish()


def chat_via_anthropic(module: Any, chunked: list[list[bytes]]) -> None:
    for chunks in chunked:
        t = module.ChatViaAnthropicStream(
            "chatcmpl-bench", "claude-x", 1764547200, include_usage=True, continuation_key=b"k"
        )
        for chunk in chunks:
            t.feed(chunk)
        t.finish()


def best_rounds(
    run: Callable[[Any, list[list[bytes]]], None], builds: list[Any], chunked: list[list[bytes]]
) -> list[float]:
    best = [float("inf")] * len(builds)
    for i in range(ROUNDS):
        order = range(len(builds)) if i % 2 == 0 else reversed(range(len(builds)))
        for b in order:
            start = time.perf_counter()
            run(builds[b], chunked)
            best[b] = min(best[b], time.perf_counter() - start)
    return best


def _rate(n: float) -> str:
    return f"{n / 1e6:.2f} M" if n >= 1e6 else f"{n / 1e3:.0f} k"


def main() -> None:
    import hydra_proxy._native as current

    previous = load(os.environ["HYDRA_BENCH_PREVIOUS"], "hydra_proxy_previous")
    builds = [current, previous]
    print(
        "| transducer | stream | chunking | native events/s | previous build events/s | new / previous |"
    )
    print("|---|---|---|---:|---:|---:|")
    cases: list[tuple[str, str, list[bytes], Callable[[Any, list[list[bytes]]], None]]] = [
        ("AnthropicViaChat", name, STREAMS[name]().split(b"\x00"), anthropic_via_chat)
        for name in STREAMS
    ]
    from support.implementations import ANTHROPIC_STREAMS

    anthropic = [b for n, b in sorted(ANTHROPIC_STREAMS.items()) if b"message_stop" in b]
    cases.append(("ChatViaAnthropic", "anthropic corpus", anthropic, chat_via_anthropic))
    for transducer, stream, bodies, run in cases:
        events = sum(body.count(b"\n\n") for body in bodies)
        for chunking, split in CHUNKINGS.items():
            chunked = [split(body) for body in bodies]
            new, old = best_rounds(run, builds, chunked)
            print(
                f"| {transducer} | {stream} | {chunking} | {_rate(events / new)} "
                f"| {_rate(events / old)} | {old / new:.3f} |"
            )


if __name__ == "__main__":
    main()
