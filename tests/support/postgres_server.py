"""A throwaway PostgreSQL server on 127.0.0.1 for tests, from Debian's ``postgresql``.

initdb refuses to run as root, so as root the cluster belongs to the ``postgres`` system
user (created by the Debian package) and every server command runs through ``runuser``.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["find_initdb", "postgres_server"]


def find_initdb() -> Path | None:
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path)
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]) if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def why_unavailable() -> str | None:
    if find_initdb() is None:
        return "PostgreSQL server not installed (Debian package 'postgresql': initdb not found)"
    if os.geteuid() == 0:
        try:
            import pwd

            pwd.getpwnam("postgres")
        except KeyError:
            return "PostgreSQL: running as root and no 'postgres' user to own the cluster"
        if shutil.which("runuser") is None:
            return "PostgreSQL: running as root and runuser (util-linux) is missing"
    return None


@contextmanager
def postgres_server() -> Iterator[str]:
    """Yield the URL of a fresh server (database ``postgres``, user ``hydra``); stop it after."""
    initdb = find_initdb()
    assert initdb is not None
    bindir = initdb.parent
    root = Path(tempfile.mkdtemp(prefix="hydra-pg-"))
    data, sockets = root / "data", root / "sock"
    sockets.mkdir()
    prefix: list[str] = []
    if os.geteuid() == 0:
        prefix = ["runuser", "-u", "postgres", "--"]
        shutil.chown(root, "postgres")
        shutil.chown(sockets, "postgres")
    port = _free_port()
    log = root / "server.log"

    def run(*args: str) -> None:
        subprocess.run([*prefix, *args], check=True, capture_output=True, timeout=120)

    run(str(bindir / "initdb"), "-D", str(data), "-U", "hydra", "-A", "trust", "-E", "UTF8",
        "--no-sync")  # fmt: skip
    options = f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c fsync=off"
    run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60",
        "start")  # fmt: skip
    url = f"postgresql://hydra@127.0.0.1:{port}/postgres"
    try:
        yield url
    finally:
        subprocess.run(
            [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(root, ignore_errors=True)


def wait_ready(url: str, timeout: float = 30) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg.connect(url, connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
