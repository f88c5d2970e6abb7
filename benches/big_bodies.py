"""What one big body costs a worker, per client protocol: CPU seconds and peak memory per
MB of body, and the longest the same worker left /health unanswered meanwhile.

    python benches/big_bodies.py [--mb 30] [--python-dir DIR] [--label NAME]

Each protocol's request is its entry's example (server/app.py MODEL_ENTRIES) with the
conversation grown to --mb MB of small turns (the most work a body of that size asks),
sent once to a fresh proxy (one worker) in front of a raw upstream that answers at once.
--python-dir runs another tree of the package (e.g. an export of an older commit) for a
before/after table; results go to benches/results/big_bodies[.LABEL].md.
"""

from __future__ import annotations

import argparse
import http.client
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support import servers  # noqa: E402
from support.raw_upstream import RawUpstream, Reply, chat_json, chat_stream  # noqa: E402

PROTOCOLS = {
    "Messages": ("/v1/messages", "messages", {"role": "user", "content": "hi"}),
    "Chat": ("/v1/chat/completions", "messages", {"role": "user", "content": "hi"}),
    "Responses": ("/v1/responses", "input", {"role": "user", "content": "hi"}),
    "Gemini": (
        "/v1beta/models/gpt-4o:generateContent",
        "contents",
        {"role": "user", "parts": [{"text": "hi"}]},
    ),
}


def reply(head: bytes, body: bytes) -> Reply:
    return chat_stream(3) if b'"stream":true' in body else Reply(body=chat_json("ok"))


def body_of(path: str, member: str, turn: dict[str, Any], size: int) -> bytes:
    body: dict[str, Any] = {"model": "gpt-4o", "max_tokens": 16}
    if path.startswith("/v1beta"):
        body = {}
    body[member] = [turn] * ((size - 4096) // (len(orjson.dumps(turn)) + 1))
    return orjson.dumps(body)


def worker_pid(root: int) -> int:
    """The granian worker under the proxy's process (its only grandchild process)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = []
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == root:
                found.append(int(pid))
        if found:
            return max(found)
        time.sleep(0.1)
    raise RuntimeError("no worker process")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def run(name: str, size: int, upstream: RawUpstream) -> str:
    path, member, turn = PROTOCOLS[name]
    data = body_of(path, member, turn, size)
    env = {"HYDRA_USAGE_LEDGER": "off", "HYDRA_MAX_BODY_BYTES": str(max(size, 32 << 20))}
    with servers.ProxyServer(upstream.url + "/v1", "--workers", "1", env=env) as proxy:
        assert proxy.process is not None
        pid = worker_pid(proxy.process.pid)
        cpu0, mem0 = cpu_seconds(pid), peak_mb(pid)
        done = threading.Event()
        status: list[int] = []

        def big() -> None:
            conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=600)
            conn.request("POST", path, data, {"content-type": "application/json"})
            response = conn.getresponse()
            response.read()
            status.append(response.status)
            done.set()

        sender = threading.Thread(target=big)
        sender.start()
        longest = 0.0
        health = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=600)
        while not done.is_set():
            sent = time.monotonic()
            health.request("GET", "/health")
            health.getresponse().read()
            longest = max(longest, time.monotonic() - sent)
            time.sleep(0.01)
        sender.join()
        mb = len(data) / (1 << 20)
        cpu = cpu_seconds(pid) - cpu0
        mem = peak_mb(pid) - mem0
    return (
        f"| {name} | {mb:.0f} | {status[0]} | {cpu:.2f} | {cpu / mb:.3f} | {mem:.0f} "
        f"| {mem / mb:.1f} | {longest:.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=float, default=30)
    parser.add_argument("--python-dir", default=None)
    parser.add_argument("--label", default="")
    args = parser.parse_args()
    if args.python_dir:
        servers.PYTHON_DIR = Path(args.python_dir)
    size = int(args.mb * (1 << 20))
    with RawUpstream(reply=reply) as upstream:
        rows = [run(name, size, upstream) for name in PROTOCOLS]
    table = "\n".join(
        [
            "| protocol | body MB | status | worker CPU s | CPU s per MB | peak memory MB "
            "| memory MB per MB | longest /health wait s |",
            "|---|---|---|---|---|---|---|---|",
            *rows,
        ]
    )
    print(table)
    suffix = f".{args.label}" if args.label else ""
    out = Path(__file__).parent / "results" / f"big_bodies{suffix}.md"
    tree = args.python_dir or "this tree"
    out.write_text(
        f"# One big body per protocol ({tree})\n\n`python benches/big_bodies.py "
        f"--mb {args.mb:g}`: one worker, a body of small turns, the upstream answering at "
        "once; CPU and peak memory of the worker process, the longest /health wait while "
        "the request ran.\n\n" + table + "\n"
    )


if __name__ == "__main__":
    main()
