"""A separate process writing usage: ``python usage_writer.py ledger|metrics TARGET SEED COUNT``.

``ledger``: records ``make_records(COUNT, SEED)`` into the ledger at TARGET (small batches,
so that two processes contend for the database) and closes it cleanly.
``metrics``: observes the same records with PROMETHEUS_MULTIPROC_DIR=TARGET.
Both wait for the file ``TARGET.go`` (or ``$USAGE_GO``) to exist, so processes start together.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1]))

from support.usage_data import make_records


def main() -> None:
    mode, target, seed, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    records = make_records(count, seed)
    go = Path(os.environ["USAGE_GO"])
    deadline = time.monotonic() + 60
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    if mode == "ledger":
        from hydra_proxy.usage.backends import open_ledger

        ledger = open_ledger(target, batch_size=25, flush_interval=0.01, max_queue=count)
        for rec in records:
            ledger.record(rec)
            if rec.request_id.endswith("0"):
                time.sleep(0)  # let the writer thread interleave
        ledger.close()
        assert ledger.dropped == 0, ledger.dropped
        print(ledger.written)
    else:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = target
        from hydra_proxy.usage.metrics import Metrics

        metrics = Metrics(max_models=4)
        for rec in records:
            metrics.observe(rec)
        metrics.stream_opened("*", "openai")
        metrics.stream_opened("*", "openai")
        metrics.stream_closed("*", "openai")
        metrics.flush()  # what a worker's flush thread does every second
        print(len(records))
        sys.stdout.flush()
        # Stay alive (one stream open) until told to finish, so the live gauge can be read.
        stop = Path(os.environ["USAGE_STOP"])
        while not stop.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        metrics.close()


if __name__ == "__main__":
    main()
