"""How long a ``codex exec`` takes from start to exit, with Codex's built-in provider
pointed at a server (``openai_base_url``): it first asks for the Responses WebSocket
transport (``GET /v1/responses``, ``Upgrade: websocket``).

    .venv/bin/python benches/codex_start.py [--runs 5] [--out benches/results/codex_start.md]

Side by side in one run, the same one-turn prompt (a canned reply, no tool) through:

- ``refused bare``: the mock upstream itself, which answers the upgrade with a bare
  refusal (403, what the proxy did before): Codex retries the upgrade several times;
- ``426``: the proxy (on the same mock), which answers it 426 Upgrade Required;
- ``custom provider``: the proxy again, with a custom ``wire_api = "responses"`` provider
  (no WebSocket attempt): the floor.

Needs the pinned Codex in .e2e/ (`bash tests/run` installs it). Prints a Markdown table of
the median seconds and the ratios to the floor; writes it to --out when given.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "tests"), str(REPO / "python")]

from hydra_proxy.mock import MockServer  # noqa: E402
from support.codex_cli import CODEX_BIN, codex_env, provider_config  # noqa: E402
from support.servers import ProxyServer  # noqa: E402

PROMPT = "say hello"


def one_run(base_url: str, builtin: bool) -> float:
    import subprocess

    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as work:
        (Path(home) / ".codex").mkdir()
        env = codex_env(home, "sk-bench", builtin_provider=builtin)
        if builtin:
            config = [f'openai_base_url="{base_url}"']
        else:
            config = ["model_provider=hydra", f"model_providers.hydra={provider_config(base_url)}"]
        argv = [str(CODEX_BIN), "exec", "--skip-git-repo-check", "--ephemeral", "--json"]
        for item in [*config, 'model="gpt-5.1-codex"', 'web_search="disabled"']:
            argv += ["-c", item]
        start = time.monotonic()
        subprocess.run(
            [*argv, PROMPT], env=env, cwd=work, stdin=subprocess.DEVNULL,
            capture_output=True, check=True, timeout=120,
        )  # fmt: skip
        return time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    times: dict[str, list[float]] = {"refused bare": [], "426": [], "custom provider": []}
    with MockServer() as mock, ProxyServer(mock.url + "/v1") as proxy:
        for _ in range(args.runs):  # interleaved: the machine's load weighs on all alike
            times["refused bare"].append(one_run(mock.url + "/v1", builtin=True))
            times["426"].append(one_run(proxy.url + "/v1", builtin=True))
            times["custom provider"].append(one_run(proxy.url + "/v1", builtin=False))
    floor = statistics.median(times["custom provider"])
    lines = [
        f"`codex exec` start to exit, Codex 0.171.0, median of {args.runs} runs "
        "(benches/codex_start.py)",
        "",
        "| server answers the WebSocket upgrade | provider | median s | x floor |",
        "|---|---|---|---|",
    ]
    for name, values in times.items():
        provider = "custom (responses)" if name == "custom provider" else "built-in"
        answer = "not asked" if name == "custom provider" else name
        median = statistics.median(values)
        lines.append(f"| {answer} | {provider} | {median:.2f} | {median / floor:.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out is not None:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
