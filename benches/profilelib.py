"""py-spy on a benchmark's server: sample one process, sum the samples by step.

`record` runs ``py-spy record --format raw`` (collapsed stacks, one ``frame;frame;... N``
line per distinct stack) on a pid for some seconds; `collapse` sums the samples by the
innermost frame on each stack that names a step (the caller's table: substrings of
py-spy's ``function (file:line)`` frames), and by leaf function. py-spy is the bench extra (``pip install -e '.[bench]'``); without it
the profile is reported as skipped.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

Steps = tuple[tuple[str, tuple[str, ...]], ...]


def py_spy() -> str | None:
    found = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    return found if Path(found).exists() else None


def record(pid: int, seconds: float, out: Path, *, native: bool = False) -> dict[str, Any]:
    """Sample `pid` for `seconds` into `out` (raw); {"skipped": why} when it cannot."""
    spy = py_spy()
    if spy is None:
        return {"skipped": "py-spy is not installed (the bench extra)"}
    argv = [spy, "record", "--format", "raw", "--rate", "250", "--nonblocking",
            "--duration", str(max(1, round(seconds))), "--output", str(out), "--pid", str(pid)]  # fmt: skip
    if native:
        argv.append("--native")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60, check=False)
    if done.returncode != 0 or not out.exists():
        return {"skipped": f"py-spy failed: {done.stderr[-500:]}"}
    return {"written": str(out)}


def collapse(text: str, steps: Steps, other: str = "other") -> dict[str, Any]:
    """Samples by step (share of all) and the 15 busiest leaf functions."""
    by_step: dict[str, int] = {}
    by_leaf: dict[str, int] = {}
    total = 0
    for line in text.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = stack.split(";")
        step = next(
            (
                name
                for frame in reversed(frames)  # the innermost step on the stack wins
                for name, needles in steps
                if any(needle in frame for needle in needles)
            ),
            other,
        )
        by_step[step] = by_step.get(step, 0) + count
        leaf = frames[-1]
        by_leaf[leaf] = by_leaf.get(leaf, 0) + count
    if not total:
        return {"samples": 0, "by_step": {}, "top_leaves": []}
    ranked = sorted(by_step.items(), key=lambda kv: -kv[1])
    top = sorted(by_leaf.items(), key=lambda kv: -kv[1])[:15]
    return {
        "samples": total,
        "by_step": {k: v / total for k, v in ranked},
        "top_leaves": [(k, v / total) for k, v in top],
    }
