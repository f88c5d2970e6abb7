"""What the cluster tests run: an upstream that counts the streams it serves at once, a
throwaway redis-server, HAProxy with the shipped deploy/haproxy.cfg, and a client that
streams Chat Completions through any of them."""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import orjson

from hydra_proxy.mock.server import free_port
from support.raw_upstream import Conn, RawUpstream, Reply, chat_chunk

ROOT = Path(__file__).resolve().parents[2]
HAPROXY_CFG = ROOT / "deploy" / "haproxy.cfg"
# The usage chunk of every stream (recorded gpt-4o shape): the ledger must hold exactly these.
PROMPT_TOKENS, COMPLETION_TOKENS = 11, 7


def usage_stream(pieces: int, delay: float, marker: str) -> Reply:
    """A Chat stream of `pieces` deltas, `delay` s apart, echoing `marker`, with usage."""
    words = [chat_chunk({"role": "assistant", "content": ""})]
    words += [chat_chunk({"content": f"{marker} "}) for _ in range(pieces)]
    words.append(chat_chunk({}, "stop"))
    usage = {
        "id": "chatcmpl-raw",
        "object": "chat.completion.chunk",
        "created": 1727346171,
        "model": "gpt-4o-2024-08-06",
        "choices": [],
        "usage": {
            "prompt_tokens": PROMPT_TOKENS,
            "completion_tokens": COMPLETION_TOKENS,
            "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
        },
    }
    words += [b"data: " + orjson.dumps(usage) + b"\n\n", b"data: [DONE]\n\n"]
    return Reply(stream=words, delay=delay, content_type="text/event-stream")


class CountingUpstream(RawUpstream):
    """A `RawUpstream` that counts the streams it is writing at once (`most`: the peak)."""

    def __init__(self, pieces: int = 6, delay: float = 0.05) -> None:
        super().__init__(reply=self._reply)
        self.pieces, self.delay = pieces, delay
        self.active = 0
        self.most = 0
        self.served = 0
        self.counting = threading.Lock()

    def _reply(self, head: bytes, body: bytes) -> Reply:
        marker = orjson.loads(body)["messages"][-1]["content"]
        return usage_stream(self.pieces, self.delay, marker)

    async def _answer(self, conn: Conn, reply: Reply) -> None:
        with self.counting:
            self.active += 1
            self.most = max(self.most, self.active)
        try:
            await super()._answer(conn, reply)
        finally:
            with self.counting:
                self.active -= 1
                self.served += 1

    def reset_peak(self) -> None:
        with self.counting:
            self.most = self.active


def stream_chat(port: int, marker: str, headers: dict[str, str], timeout: float = 60) -> dict:
    """One streamed Chat request: its status, the text streamed and the served-by header."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    body = {
        "model": "gpt-4o",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": marker}],
    }
    try:
        conn.request(
            "POST", "/v1/chat/completions", orjson.dumps(body),
            {"content-type": "application/json", **headers},
        )  # fmt: skip
        reply = conn.getresponse()
        raw = reply.read()
        text = ""
        complete = False
        if reply.status == 200:
            for line in raw.split(b"\n"):
                if line == b"data: [DONE]":
                    complete = True
                elif line.startswith(b"data: {"):
                    for choice in orjson.loads(line[6:]).get("choices", []):
                        text += choice.get("delta", {}).get("content") or ""
        return {
            "status": reply.status,
            "text": text,
            "complete": complete,
            "body": raw if reply.status != 200 else b"",
            "served_by": reply.getheader("x-served-by"),
        }
    except (OSError, http.client.HTTPException) as exc:
        return {"status": None, "error": repr(exc), "served_by": None, "complete": False}
    finally:
        conn.close()


def redis_available() -> str | None:
    if shutil.which("redis-server") is None:
        return "Redis server not installed (Debian package 'redis-server')"
    return None


def haproxy_available() -> str | None:
    if shutil.which("haproxy") is None:
        return "HAProxy not installed (Debian package 'haproxy')"
    return None


class RedisServer:
    """redis-server on loopback, no persistence: a restart starts empty."""

    def __init__(self) -> None:
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="hydra-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socketpair_ping(self.port):
                    return
            except OSError:
                time.sleep(0.02)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)

    def command(self, *args: str) -> bytes:
        out = subprocess.run(
            ["redis-cli", "-p", str(self.port), *args], capture_output=True, timeout=10
        )
        return out.stdout


@contextmanager
def socketpair_ping(port: int) -> Iterator[None]:
    import socket

    with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
        s.sendall(b"PING\r\n")
        if not s.recv(64).startswith(b"+PONG"):
            raise OSError("no PONG")
        yield


@contextmanager
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)


def haproxy_config(listen: int, replicas: list[int]) -> str:
    """deploy/haproxy.cfg, its listener and servers pointed at this test's ports (all else
    as shipped), and a response header naming the replica that served."""
    lines = []
    servers_done = False
    for line in HAPROXY_CFG.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("bind ") and "3456" in stripped:
            lines.append(f"    bind 127.0.0.1:{listen}")
        elif stripped.startswith("server replica"):
            if not servers_done:
                template = stripped.split(None, 3)[3]  # the options after name and address
                for i, port in enumerate(replicas, 1):
                    lines.append(f"    server replica{i} 127.0.0.1:{port} {template}")
                lines.append("    http-response set-header x-served-by %s")
                servers_done = True
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


@contextmanager
def haproxy(replicas: list[int]) -> Iterator[int]:
    listen = free_port()
    folder = Path(tempfile.mkdtemp(prefix="hydra-haproxy-"))
    cfg = folder / "haproxy.cfg"
    cfg.write_text(haproxy_config(listen, replicas))
    check = subprocess.run(["haproxy", "-c", "-f", str(cfg)], capture_output=True, timeout=30)
    if check.returncode != 0:
        raise RuntimeError(check.stderr.decode() + check.stdout.decode())
    log = open(folder / "log", "wb")  # noqa: SIM115
    process = subprocess.Popen(["haproxy", "-db", "-f", str(cfg)], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:  # up when every replica passed its checks
            if process.poll() is not None:
                log.flush()
                raise RuntimeError((folder / "log").read_text())
            try:
                conn = http.client.HTTPConnection("127.0.0.1", listen, timeout=1)
                conn.request("GET", "/health")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                time.sleep(0.05)
        time.sleep(1.0)  # every server's first checks
        yield listen
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def kill_group(pid: int) -> None:
    """SIGKILL a proxy and its workers at once: a machine gone without a word."""
    os.killpg(pid, signal.SIGKILL)
