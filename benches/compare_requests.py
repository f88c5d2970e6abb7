"""Request translation of this tree against another copy of the package, interleaved.

    git archive REV python/hydra_proxy | tar -x -C /tmp/previous
    HYDRA_BENCH_PREVIOUS_PACKAGE=/tmp/previous/python/hydra_proxy python benches/compare_requests.py

Every reader and writer of the request side, on recorded requests: the Claude Code
requests (tests/fixtures/claude-code) through the Chat, Responses and Gemini writers; the
Chat and Responses requests those writers make of them through the Chat and Responses
readers, and Codex's first turn (tests/fixtures/codex) through the Responses reader. The
other copy is imported under its own package name, so both run in one process. Each round
times a few milliseconds (of this thread's CPU time) of one case with each copy, back to
back (the order alternating between rounds), so both see the same load; the ratio is the median over the rounds of
previous / new time (above 1: the new tree is faster), which stays steady on a shared,
busy machine where a best-of-rounds time does not. Prints a Markdown table.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
ROUNDS = int(os.environ.get("HYDRA_BENCH_ROUNDS", "200"))
KEY = b"bench-key"

# Where each entry point lives, newest layout first (the other copy may be older).
ENTRIES: dict[str, tuple[tuple[str, str], ...]] = {
    "chat_writer": (("chat.request.writer", "chat_request_from_messages"),),
    "chat_target": (("chat.request.writer", "ChatTarget"),),
    "chat_reader": (("chat.request.reader", "messages_request_from_chat"),),
    "messages_target": (
        ("canonical.target", "MessagesTarget"),
        ("chat.request.reader", "MessagesTarget"),
    ),
    "responses_writer": (
        ("responses.request.writer", "responses_request_from_messages"),
        ("responses.request_writer", "responses_request_from_messages"),
    ),
    "responses_target": (
        ("responses.request.writer", "ResponsesTarget"),
        ("responses.request_writer", "ResponsesTarget"),
    ),
    "responses_reader": (
        ("responses.request.reader", "messages_request_from_responses"),
        ("responses.request_reader", "messages_request_from_responses"),
    ),
    "gemini_writer": (
        ("gemini.request.writer", "gemini_request_from_messages"),
        ("gemini.request_writer", "gemini_request_from_messages"),
    ),
    "gemini_target": (
        ("gemini.request.writer", "gemini_target"),
        ("gemini.request_writer", "gemini_target"),
    ),
}


def load_package(path: Path, name: str) -> ModuleType:
    """The package at `path` imported as `name` (its imports are relative)."""
    spec = importlib.util.spec_from_file_location(
        name, path / "__init__.py", submodule_search_locations=[str(path)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def entry(package: str, key: str) -> Any:
    for module, attribute in ENTRIES[key]:
        try:
            found = importlib.import_module(f"{package}.{module}")
        except ModuleNotFoundError:
            continue
        if hasattr(found, attribute):
            return getattr(found, attribute)
    raise LookupError(f"{package}: no {key}")


Case = tuple[str, int, Callable[[], None]]


def cases(package: str, inputs: dict[str, list[dict[str, Any]]]) -> list[Case]:
    """(name, requests, run) for every translator of `package`."""
    chat_write = entry(package, "chat_writer")
    chat = entry(package, "chat_target")(
        model="gpt-x", reasoning=True, replay_reasoning=True, signing_key=KEY
    )
    responses_write = entry(package, "responses_writer")
    responses = entry(package, "responses_target")(model="gpt-x-codex", signing_key=KEY)
    gemini_write = entry(package, "gemini_writer")
    gemini = entry(package, "gemini_target")("gemini-3-pro-preview", signing_key=KEY)
    chat_read = entry(package, "chat_reader")
    responses_read = entry(package, "responses_reader")
    messages = entry(package, "messages_target")(model="claude-x", continuation_key=KEY)
    claude_code, chat_requests, responses_requests = (
        inputs["claude-code"],
        inputs["chat"],
        inputs["responses"],
    )

    def chat_writer() -> None:
        for body in claude_code:
            chat_write(body, chat, stream=True)

    def responses_writer() -> None:
        for body in claude_code:
            responses_write(body, responses, stream=True)

    def gemini_writer() -> None:
        for body in claude_code:
            gemini_write(body, gemini)

    def chat_reader() -> None:
        for body in chat_requests:
            chat_read(body, messages, stream=True)

    def responses_reader() -> None:
        for body in responses_requests:
            responses_read(body, messages)

    return [
        ("Chat writer (Claude Code requests)", len(claude_code), chat_writer),
        ("Responses writer (Claude Code requests)", len(claude_code), responses_writer),
        ("Gemini writer (Claude Code requests)", len(claude_code), gemini_writer),
        ("Chat reader (Chat requests)", len(chat_requests), chat_reader),
        ("Responses reader (Responses requests, Codex)", len(responses_requests), responses_reader),
    ]


def recorded_inputs(package: str) -> dict[str, list[dict[str, Any]]]:
    """The recorded requests, and the Chat and Responses requests made of them."""
    claude_code = [
        orjson.loads(path.read_bytes())["body"]
        for path in sorted((FIXTURES / "claude-code").glob("request-*.json"))
    ]
    chat = entry(package, "chat_writer")
    chat_target = entry(package, "chat_target")(model="gpt-x")
    responses = entry(package, "responses_writer")
    responses_target = entry(package, "responses_target")(model="gpt-x-codex")
    codex = orjson.loads((FIXTURES / "codex" / "request-exec-first-turn.json").read_bytes())
    return {
        "claude-code": claude_code,
        "chat": [chat(body, chat_target, stream=True) for body in claude_code],
        "responses": [codex]
        + [responses(body, responses_target, stream=True) for body in claude_code],
    }


def calibrate(translate: Callable[[], None]) -> int:
    """How many calls make a measurement of about 3 ms (shorter ones are mostly noise)."""
    start = time.thread_time()
    translate()
    return max(1, int(0.003 / max(time.thread_time() - start, 1e-6)))


def timed(translate: Callable[[], None], repeat: int) -> float:
    # CPU time of this thread: what other processes on a shared machine take is not counted.
    start = time.thread_time()
    for _ in range(repeat):
        translate()
    return (time.thread_time() - start) / repeat


def main() -> None:
    previous = Path(os.environ["HYDRA_BENCH_PREVIOUS_PACKAGE"]).resolve()
    load_package(previous, "hydra_proxy_previous")
    packages = ["hydra_proxy", "hydra_proxy_previous"]
    inputs = recorded_inputs("hydra_proxy_previous")
    print(
        "| translator | requests | new, µs per request (best) | previous, µs (best) "
        "| previous / new (median of rounds) |"
    )
    print("|---|---:|---:|---:|---:|")
    runs = [cases(package, inputs) for package in packages]
    gc.disable()  # as timeit does: a collection would land in one copy's round
    for index, (name, count, _) in enumerate(runs[0]):
        new_run, old_run = (run[index][2] for run in runs)
        repeat = calibrate(new_run)
        new_times: list[float] = []
        old_times: list[float] = []
        for i in range(ROUNDS):
            if i % 2:
                old_times.append(timed(old_run, repeat))
                new_times.append(timed(new_run, repeat))
            else:
                new_times.append(timed(new_run, repeat))
                old_times.append(timed(old_run, repeat))
        ratio = statistics.median(o / n for o, n in zip(old_times, new_times, strict=True))
        print(
            f"| {name} | {count} | {min(new_times) / count * 1e6:.0f} "
            f"| {min(old_times) / count * 1e6:.0f} | {ratio:.3f} |"
        )


if __name__ == "__main__":
    main()
