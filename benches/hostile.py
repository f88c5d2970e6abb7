"""The adversarial benchmark: what each hostile request costs, and whether the worker keeps
answering while it runs.

    PYTHONPATH=python:tests python benches/hostile.py [--repeat 5] [--write]
        [--python-dir DIR] [--timeout 20]

Every input is 1-8 MB aimed at one scan over request content (the issue's list: PDF page
counts, image headers, texts for the token estimate, base64 documents, continuation
suffixes, reasoning and thought-signature carriers, Gemini tool schemas, embedded JSON).
Two numbers each, measured in one run:

- scan CPU: ``time.process_time`` around the function the server runs on that request
  (the token estimate, the Chat/Responses reader, the Gemini writer), in this process,
  the median of ``--repeat`` runs on a cold cache; the target is under 50 ms;
- worker CPU: the proxy worker's utime + stime (/proc, 10 ms ticks) for the first such
  request (cold caches), and the median over ``--repeat`` more (texts counted before come
  from the token cache), minus the same for a small plain request of the same endpoint:
  what the request cost the worker, receiving and parsing its megabytes included. The
  ``control-`` rows (ordinary prose, ordinary small objects) are that cost for a body of
  that size and shape.

While each hostile request runs, a second thread asks ``GET /health`` every 20 ms: the
table gives how many answered and the slowest answer. ``--python-dir`` serves another
checkout's ``python/`` (e.g. the code before these defences); a request that takes longer
than ``--timeout`` seconds is reported as such, and that proxy is restarted.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import copy
import http.client
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "python"), str(REPO / "tests"), str(REPO / "benches")]

import loadlib_proc as proc  # noqa: E402
from hydra_proxy import continuation, tokens  # noqa: E402
from hydra_proxy.canonical.target import MessagesTarget  # noqa: E402
from hydra_proxy.chat.request.reader import messages_request_from_chat  # noqa: E402
from hydra_proxy.errors import ProxyError  # noqa: E402
from hydra_proxy.gemini.request.writer import (  # noqa: E402
    gemini_request_from_messages,
    gemini_target,
)
from hydra_proxy.mock import MockServer  # noqa: E402
from hydra_proxy.responses.reasoning import CARRIER_PREFIX  # noqa: E402
from hydra_proxy.responses.request.reader import messages_request_from_responses  # noqa: E402
from hydra_proxy.signature import sign_carried  # noqa: E402
from support.servers import ProxyServer  # noqa: E402

MB = 1 << 20
KEY = b"k" * 32
GEMINI_MODEL = "hostile-gemini-2.5-pro"
CONFIG = """
[providers.gemini-native]
base_url = "{mock}/v1beta"

[[routes]]
match = "hostile-gemini-*"
provider = "gemini-native"

[[routes]]
match = "*"
client = "chat"
provider = "anthropic"
"""


@dataclass
class Case:
    name: str
    what: str
    path: str
    body: dict[str, Any]
    scan: Callable[[dict[str, Any]], object]  # the server's work on it, in process


def _messages(*blocks: dict[str, Any], model: str = "claude-sonnet-4-5") -> dict[str, Any]:
    return {
        "model": model,
        "max_tokens": 16,
        "messages": [{"role": "user", "content": list(blocks)}],
    }


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _document(data: bytes, media: str = "application/pdf") -> dict[str, Any]:
    return {
        "type": "document",
        "source": {"type": "base64", "media_type": media, "data": _b64(data)},
    }


def _estimate(body: dict[str, Any]) -> object:
    return tokens.estimate_input_tokens(body)


def _chat(body: dict[str, Any]) -> object:
    target = MessagesTarget(model="m", continuation_key=KEY)
    return messages_request_from_chat(body, target, stream=False)


def _responses(body: dict[str, Any]) -> object:
    return messages_request_from_responses(body, MessagesTarget(model="m", continuation_key=KEY))


def _gemini(body: dict[str, Any]) -> object:
    return gemini_request_from_messages(body, gemini_target(GEMINI_MODEL, signing_key=KEY))


def _ref_bomb() -> dict[str, Any]:
    """A tool schema that expands to 16,383 nodes through $ref: just under the 20,000 nodes
    one schema was allowed before, so each tool of the request is expanded in full."""
    defs: dict[str, Any] = {
        f"d{i}": {
            "type": "object",
            "properties": {"a": {"$ref": f"#/$defs/d{i + 1}"}, "b": {"$ref": f"#/$defs/d{i + 1}"}},
        }
        for i in range(12)
    }
    defs["d12"] = {"type": "string"}
    return {"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs}


def _plain_schema() -> dict[str, Any]:
    """As many objects as `_ref_bomb`, no $ref: what parsing that many objects costs."""
    return {
        "type": "object",
        "properties": {
            f"p{i}": {
                "type": "object",
                "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
            }
            for i in range(17)
        },
    }


def _replayed(content: str) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": content, "reasoning_content": content},
            {"role": "user", "content": "again"},
        ],
    }


def cases() -> list[Case]:
    forged = continuation.encode([continuation.ThinkingBlock("r" * 200, "sig")], b"another-key" * 3)
    forged_unit = "r" * 200 + forged
    carrier = (
        CARRIER_PREFIX
        + "t" * 300
        + continuation.encode([continuation.ThinkingBlock("t" * 300, "sig")], b"another-key" * 3)
    )
    gts = sign_carried("gts", "A" * (6 * MB), b"another-key" * 3)
    deep = "[" * 300 + "]" * 300
    return [
        Case("control-8mb", "control: 8 MB of ordinary prose in one text", "/v1/messages/count_tokens",
             _messages({"type": "text", "text": "The quick brown fox jumps over the lazy dog. "
                        * (8 * MB // 45)}), _estimate),
        Case("pdf-count", "a 1 MB PDF of `/Count 1 `", "/v1/messages/count_tokens",
             _messages(_document(b"%PDF-1.7\n" + b"/Count 1 " * (MB // 9))), _estimate),
        Case("pdf-count-8mb", "the same, 6 MB of PDF (8 MB of base64)", "/v1/messages/count_tokens",
             _messages(_document(b"%PDF-1.7\n" + b"/Count 1 " * (6 * MB // 9))), _estimate),
        Case("pdf-page-tree", "6 MB of `/Type /Pages /Count 7 ` in one dictionary",
             "/v1/messages/count_tokens",
             _messages(_document(b"%PDF-1.7 << " + b"/Type /Pages /Count 7 " * (6 * MB // 22))),
             _estimate),
        Case("jpeg-segments", "6 MB of JPEG segments that never reach a frame",
             "/v1/messages/count_tokens",
             _messages({"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                        "data": _b64(b"\xff\xd8" + b"\xff\xe1\x00\x02" * (6 * MB // 4))}}),
             _estimate),
        Case("text-letters", "8 MB of one letter (one BPE piece)", "/v1/messages/count_tokens",
             _messages({"type": "text", "text": "a" * (8 * MB)}), _estimate),
        Case("text-emoji", "2 M emoji (8 MB)", "/v1/messages/count_tokens",
             _messages({"type": "text", "text": "\U0001f600" * (2 * MB)}), _estimate),
        Case("text-blocks", "2,000 distinct texts of 4 kB", "/v1/messages/count_tokens",
             _messages(*({"type": "text", "text": f"{i:05d} " + "lorem ipsum dolor " * 220}
                         for i in range(2000))), _estimate),
        Case("base64-text", "a 6 MB text document in base64", "/v1/messages/count_tokens",
             _messages(_document(b"plain words in a text file\n" * (6 * MB // 27), "text/plain")),
             _estimate),
        Case("suffix-markers", "4 MB of bare continuation markers (Chat replay)",
             "/v1/chat/completions",
             _replayed(continuation.PREFIX * (2 * MB // len(continuation.PREFIX))), _chat),
        Case("suffix-forged", "4 MB of well-formed suffixes signed with another key",
             "/v1/chat/completions",
             _replayed(forged_unit * (2 * MB // len(forged_unit))), _chat),
        Case("reasoning-carriers", "10,000 forged Responses reasoning carriers",
             "/v1/responses",
             {"model": "gpt-4o", "store": False, "input": [
                 *({"type": "reasoning", "id": f"rs_{i}", "summary": [],
                    "encrypted_content": carrier} for i in range(10_000)),
                 {"role": "user", "content": "hi"}]}, _responses),
        Case("gts-carrier", "a 6 MB thought-signature carrier with a forged MAC", "/v1/messages",
             {"model": GEMINI_MODEL, "max_tokens": 16, "messages": [
                 {"role": "user", "content": "hi"},
                 {"role": "assistant", "content": [
                     {"type": "thinking", "thinking": "", "signature": gts},
                     {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}]},
                 {"role": "user", "content": [
                     {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]}]},
             _gemini),
        Case("schema-bombs", "5,000 tools, each a $ref bomb, to Gemini", "/v1/messages",
             {**_messages({"type": "text", "text": "hi"}, model=GEMINI_MODEL),
              "tools": [{"name": f"t{i}", "description": "d", "input_schema": _ref_bomb()}
                        for i in range(5000)]}, _gemini),
        Case("control-objects", "control: 8 MB of small JSON objects (count_tokens)",
             "/v1/messages/count_tokens",
             {**_messages({"type": "text", "text": "hi"}),
              "tools": [{"name": f"t{i}", "description": "d", "input_schema": _plain_schema()}
                        for i in range(5000)]}, _estimate),
        Case("deep-arguments", "tool call arguments nested 300 deep, 2,000 times (Chat)",
             "/v1/chat/completions",
             {"model": "claude-sonnet-4-5", "messages": [
                 {"role": "user", "content": "hi"},
                 {"role": "assistant", "tool_calls": [
                     {"id": f"call_{i}", "type": "function",
                      "function": {"name": "f", "arguments": '{"x":' + deep + "}"}}
                     for i in range(2000)]},
                 *({"role": "tool", "tool_call_id": f"call_{i}", "content": "ok"}
                   for i in range(2000))]}, _chat),
    ]  # fmt: skip


PLAIN = {
    "/v1/messages/count_tokens": _messages({"type": "text", "text": "hi"}),
    "/v1/messages": _messages({"type": "text", "text": "hi"}, model=GEMINI_MODEL),
    "/v1/chat/completions": _replayed("plain"),
    "/v1/responses": {"model": "gpt-4o", "store": False, "input": "hi"},
}
HEADERS = {"content-type": "application/json", "anthropic-version": "2023-06-01"}


def scan_cpu(case: Case, repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        body = copy.deepcopy(case.body)
        tokens._cache.clear()
        start = time.process_time()
        with contextlib.suppress(ProxyError):  # refused: the server answers 400 the same way
            case.scan(body)
        runs.append(time.process_time() - start)
    return statistics.median(runs)


def post(port: int, path: str, body: bytes, timeout: float) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, body, HEADERS)
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def worker_cpu(
    proxy: ProxyServer, path: str, body: bytes, repeat: int, timeout: float
) -> tuple[float, int]:
    assert proxy.process is not None
    pids = proc.tree(proxy.process.pid)
    runs = []
    status = 0
    for _ in range(repeat):
        before = proc.cpu_seconds(pids)
        status = post(proxy.port, path, body, timeout)
        runs.append(proc.cpu_delta(before, proc.cpu_seconds(pids)))
    return statistics.median(runs), status


def health_during(
    proxy: ProxyServer, path: str, body: bytes, timeout: float
) -> tuple[int, float, float, int | None]:
    """(health answers, slowest one in ms, the worker's CPU seconds, the request's status)."""
    assert proxy.process is not None
    pids = proc.tree(proxy.process.pid)
    before = proc.cpu_seconds(pids)
    done = threading.Event()
    answers: list[float] = []

    def probe() -> None:
        while not done.is_set():
            start = time.monotonic()
            try:
                conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=timeout)
                conn.request("GET", "/health")
                conn.getresponse().read()
                conn.close()
                answers.append(time.monotonic() - start)
            except OSError:
                answers.append(float("inf"))
            done.wait(0.02)

    prober = threading.Thread(target=probe)
    prober.start()
    status: int | None
    try:
        status = post(proxy.port, path, body, timeout)
    except OSError:
        status = None
    done.set()
    prober.join()
    cpu = proc.cpu_delta(before, proc.cpu_seconds(pids))
    answered = [a for a in answers if a != float("inf")]
    return len(answered), max(answers, default=0.0) * 1000, cpu, status


@contextmanager
def running(mock: MockServer, python_dir: str | None) -> Iterator[ProxyServer]:
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "hydra.toml"
        config.write_text(CONFIG.format(mock=mock.url))
        env = {
            "HYDRA_ANTHROPIC_BASE_URL": mock.url,
            "ANTHROPIC_API_KEY": "sk-ant-bench",
            "GEMINI_API_KEY": "AIza-bench-0000000000000000000",
            "HYDRA_USAGE_LEDGER": "off",
            "HYDRA_CONTINUATION": "always",
        }
        if python_dir:
            env["PYTHONPATH"] = python_dir
        with ProxyServer(mock.url + "/v1", "--config", str(config), env=env) as proxy:
            yield proxy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--python-dir", help="serve this python/ directory instead")
    parser.add_argument("--only", help="comma-separated case names")
    parser.add_argument(
        "--write",
        action="store_true",
        help="write benches/results/hostile.md (hostile.before.md with --python-dir)",
    )
    args = parser.parse_args()
    chosen = [c for c in cases() if not args.only or c.name in args.only.split(",")]
    rows = []
    with MockServer() as mock:
        proxy_cm = running(mock, args.python_dir)
        proxy = proxy_cm.__enter__()
        try:
            baseline = {
                path: worker_cpu(proxy, path, orjson.dumps(body), args.repeat, args.timeout)[0]
                for path, body in PLAIN.items()
            }
            for case in chosen:
                raw = orjson.dumps(case.body)
                scan = scan_cpu(case, args.repeat) if not args.python_dir else float("nan")
                answers, slowest, cold, status = health_during(proxy, case.path, raw, args.timeout)
                if status is None:  # frozen: restart, report the timeout
                    proxy_cm.__exit__(None, None, None)
                    proxy_cm = running(mock, args.python_dir)
                    proxy = proxy_cm.__enter__()
                    rows.append((case, len(raw), scan, None, None, None, answers, slowest))
                    print(f"{case.name}: no answer in {args.timeout:g} s", flush=True)
                    continue
                cpu, status = worker_cpu(proxy, case.path, raw, args.repeat, args.timeout)
                cpu -= baseline[case.path]
                cold -= baseline[case.path]
                rows.append((case, len(raw), scan, cold, cpu, status, answers, slowest))
                print(
                    f"{case.name}: scan {scan * 1000:.1f} ms, worker {cold * 1000:.0f} ms first, "
                    f"{cpu * 1000:.0f} ms again, "
                    f"HTTP {status}, health {answers} answers (slowest {slowest:.0f} ms)",
                    flush=True,
                )
        finally:
            proxy_cm.__exit__(None, None, None)
    table = [
        "| input | body | scan CPU | worker CPU, first / again | status | /health meanwhile |",
        "|---|---|---|---|---|---|",
    ]
    for case, size, scan, cold, cpu, status, answers, slowest in rows:
        scan_text = "-" if scan != scan else f"{scan * 1000:.1f} ms"
        if cold is None or cpu is None:
            cpu_text = f"no answer in {args.timeout:g} s"
            health = f"{answers} answered before it, then none"
        else:
            cpu_text = f"{cold * 1000:.0f} / {cpu * 1000:.0f} ms"
            health = f"{answers} answers, slowest {slowest:.0f} ms"
        table.append(
            f"| {case.name}: {case.what} | {size / MB:.1f} MB | {scan_text} | {cpu_text} | "
            f"{status or '-'} | {health} |"
        )
    text = "\n".join(table)
    print(text)
    if args.write:
        name = "hostile.before.md" if args.python_dir else "hostile.md"
        out = REPO / "benches" / "results" / name
        served = f", serving {args.python_dir}" if args.python_dir else ""
        head = (
            f"# Hostile requests: CPU per input, /health meanwhile{served}\n\n"
            f"`python benches/hostile.py --repeat {args.repeat}` on {os.cpu_count()} cores "
            "(the module's docstring says what each column measures).\n\n"
        )
        out.write_text(head + text + "\n")


if __name__ == "__main__":
    main()
