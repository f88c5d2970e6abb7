"""`serve --workers`: a count or `auto` (one worker process per CPU this process may run on)."""

from __future__ import annotations

import argparse
import http.client
import os
import time
from pathlib import Path

import orjson
import pytest

from hydra_proxy import cli
from hydra_proxy.mock import MockServer
from support.servers import ProxyServer


def test_auto_is_one_worker_per_usable_cpu() -> None:
    assert cli._workers("auto") == cli._workers("AUTO") == len(os.sched_getaffinity(0))
    assert cli._workers("3") == 3
    with pytest.raises(argparse.ArgumentTypeError, match="not a number or auto"):
        cli._workers("many")


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes()
            except OSError:
                continue
            if int(stat[stat.rindex(b")") + 2 :].split()[1]) == pid:
                found.append(int(entry))
    return found


@pytest.mark.e2e
def test_serve_workers_auto_starts_one_worker_per_cpu_and_serves(tmp_path: Path) -> None:
    with MockServer() as mock, ProxyServer(mock.url + "/v1", "--workers", "auto") as proxy:
        assert proxy.process is not None
        # The port answers once the first worker listens; the others may still be starting.
        cpus = len(os.sched_getaffinity(0))
        deadline = time.monotonic() + 15
        while len(_children(proxy.process.pid)) < cpus and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(_children(proxy.process.pid)) == cpus
        mock.script([{"text": "from a worker"}])
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=30)
        body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
        conn.request("POST", "/v1/chat/completions", orjson.dumps(body),
                     {"content-type": "application/json"})  # fmt: skip
        reply = conn.getresponse()
        assert reply.status == 200
        assert orjson.loads(reply.read())["choices"][0]["message"]["content"] == "from a worker"
