"""How many modules a request crosses before its first upstream byte (benches/request_path.py
counts them): a reader follows one streamed Claude Code request to a Chat upstream through
at most 18 files, from the ASGI call to the upstream socket write (two of them the parts of the
exchange that the route decides and the answer records, each set in its own module; one the
client's request reader, at the path every protocol has it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent.parent
MAX_MODULES = 18


def test_a_streamed_messages_request_crosses_at_most_18_modules_before_its_first_byte(
    tmp_path: Path,
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HYDRA_", "OPENAI_"))}
    env["HOME"] = str(tmp_path)
    out = subprocess.run(
        [sys.executable, str(REPO / "benches" / "request_path.py"), "--json"],
        env=env,
        capture_output=True,
        check=True,
        timeout=120,
    )
    found = orjson.loads(out.stdout.splitlines()[-1])
    modules: list[str] = found["modules"]
    # From the app's ASGI call to the upstream client's write: the request really went out.
    assert modules[0] == "hydra_proxy.server.app"
    assert modules[-1] == "hydra_proxy.server.transport.http1"
    assert "hydra_proxy.chat.request.writer.translate" in modules  # translated for Chat
    assert len(modules) == found["count"] <= MAX_MODULES, modules
