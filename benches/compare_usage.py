"""What usage accounting costs per request, all of it, this checkout against another one.

    python benches/compare_usage.py --other ../main/python [--rounds 5] [--requests 20000]

Each round runs one child process per checkout, alternating (the same machine load for
both): it translates one recorded stream per request with the native transducer, then
measures the CPU time of the whole process (every thread: ``time.process_time``) spent on
closing the usage record of N finished requests (``accounting.close``; ``Account.close``
before the Exchange) and on ``UsageService.close`` after them (the
metrics summed and written, every ledger record written to SQLite), with metrics in
multiprocess mode (as with several workers) and the default SQLite ledger; and the same
with accounting off (the close without a service: the access-log details only).
Reported per request: accounting on minus off, the median over the rounds. Prints a
Markdown table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
THIS = HERE.parent / "python"
STREAM = HERE.parent / "tests" / "fixtures" / "chat" / "oaipy-gpt4o-text-usage.sse"

CHILD = r"""
import json, sys, tempfile, time
from pathlib import Path
n = int(sys.argv[1]); stream = Path(sys.argv[2]).read_bytes(); work = Path(tempfile.mkdtemp())
from hydra_proxy.usage.metrics import setup_multiprocess_dir
setup_multiprocess_dir(work / "prom")
from hydra_proxy._native import AnthropicViaChatStream
from hydra_proxy.usage.service import UsageService

def make():
    return AnthropicViaChatStream("msg_b", "claude-sonnet-4-5", 100)

try:  # a checkout with the Exchange (server/pipeline/exchange.py holds the per-request state)
    from hydra_proxy.config import Provider, Settings
    from hydra_proxy.config.routes import Attempt, Route, RouteDecision, RouteOptions
    from hydra_proxy.server.pipeline import accounting
    from hydra_proxy.server.pipeline.exchange import Exchange
    from hydra_proxy.server.transport.worker import Worker
except ImportError:  # before it: an Account per request, and the plan's Target
    from hydra_proxy.server.pipeline.accounting import Account
    from hydra_proxy.server.plan import Target

    target = Target("claude-*", "openai", "openai", "claude-sonnet-4-5", "gpt-4o", True)

    def one():
        account = Account("anthropic")
        account.target = target
        account.key = b"team-key"
        t = account.built_by(make)
        t.feed(stream)
        t.finish()
        account.first_byte = account.started + 0.3
        return lambda usage, i: account.close(usage, 200, f"req_{i}")
else:
    import os
    os.environ["HYDRA_SIGNING_KEY_FILE"] = str(work / "signing-key")
    worker = Worker.create(Settings())
    attempt = Attempt(Provider("openai", "chat", "https://x.test/v1"), "gpt-4o", RouteOptions())
    decision = RouteDecision(Route("claude-*", "openai"), 0, (attempt,), "claude-sonnet-4-5")
    scope = {"type": "http", "method": "POST", "path": "/v1/messages", "headers": []}

    def one():
        exchange = Exchange(worker, scope, None, None)
        exchange.account("anthropic")
        if hasattr(exchange, "route"):  # the exchange in parts: request, route, outcome
            from hydra_proxy.config.routes import RequestTraits
            from hydra_proxy.server.pipeline.exchange import Asked, Caller

            exchange.read_as(Asked(RequestTraits(decision.requested_model), stream=True))
            exchange.route.decided(decision)
            exchange.route.sending(attempt)
            exchange.caller = Caller(worker.signing_key, client_key=b"team-key")
        else:
            exchange.decision, exchange.attempt, exchange.stream = decision, attempt, True
            exchange.client_key = b"team-key"
        t = accounting.built_by(exchange, make)
        t.feed(stream)
        t.finish()
        if hasattr(exchange, "outcome"):
            exchange.outcome.first_byte = exchange.started + 0.3
            exchange.outcome.started(200)
        else:
            exchange.first_byte = exchange.started + 0.3
            exchange.status = 200
        return lambda usage, i: accounting.close(exchange, usage)

def finished():
    return [one() for _ in range(n)]

def cpu(usage):
    closes = finished()
    start = time.process_time()
    for i, close in enumerate(closes):
        close(usage, i)
    if usage is not None:
        usage.close()  # the rest of the work: metrics written, every ledger row written
    return (time.process_time() - start) / n * 1e6

off = cpu(None)
usage = UsageService.start(ledger_url=f"sqlite:{work / 'u.sqlite3'}",
                           ledger_options={"max_queue": 10 * n})
on = cpu(usage)
assert usage.ledger.written == n, usage.ledger.written
print(json.dumps({"on_us": on, "off_us": off}))
"""


def run(python_dir: Path, requests: int) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(python_dir))
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    with tempfile.TemporaryDirectory() as home:
        env["HOME"] = home
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(requests), str(STREAM)],
            env=env, capture_output=True, text=True, check=True, timeout=600,
        )  # fmt: skip
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--other", type=Path, required=True, help="the other checkout's python/ dir")
    p.add_argument("--other-label", default="other")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--requests", type=int, default=20_000)
    args = p.parse_args()
    sides = {"this": THIS, args.other_label: args.other.resolve()}
    results: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    for round_ in range(args.rounds):
        for name, python_dir in sides.items():
            result = run(python_dir, args.requests)
            results[name].append(result)
            print(f"round {round_}: {name}: {result}", file=sys.stderr)
    print("| checkout | CPU-µs per request, accounting on | off | on - off (median of rounds) |")
    print("|---|---:|---:|---:|")
    for name, rounds in results.items():
        on = statistics.median(r["on_us"] for r in rounds)
        off = statistics.median(r["off_us"] for r in rounds)
        cost = statistics.median(r["on_us"] - r["off_us"] for r in rounds)
        print(f"| {name} | {on:.1f} | {off:.1f} | {cost:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
