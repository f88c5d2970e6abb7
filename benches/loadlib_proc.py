"""Process accounting for the load benchmark, read from /proc (Linux only).

A server is measured as its whole process tree (granian's main process and its workers,
node and any children), found by walking parent pids from the process we started.
"""

from __future__ import annotations

import os
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    return raw[raw.rindex(b")") + 2 :].decode().split()


def tree(root: int) -> list[int]:
    """`root` and every live descendant of it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat_fields(int(entry))
        if fields is not None:
            children.setdefault(int(fields[1]), []).append(int(entry))
    found: list[int] = []
    todo = [root]
    while todo and len(found) < 10_000:
        pid = todo.pop()
        if pid in found:
            continue
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return [pid for pid in found if Path(f"/proc/{pid}").exists()]


def trees(roots: list[int]) -> list[int]:
    pids: list[int] = []
    for root in roots:
        pids.extend(p for p in tree(root) if p not in pids)
    return pids


def cpu_seconds(pids: list[int]) -> dict[int, float]:
    """utime + stime of each process (all its threads), in seconds."""
    out: dict[int, float] = {}
    for pid in pids:
        fields = _stat_fields(pid)
        if fields is not None:
            # After the command: state is fields[0], so utime (14) and stime (15) are 11, 12.
            out[pid] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return out


def cpu_delta(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds the processes spent between two cpu_seconds() readings."""
    return sum(after[pid] - before.get(pid, 0.0) for pid in after)


def rss_bytes(pids: list[int]) -> int:
    """Summed resident set size (VmRSS) of the processes."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/statm").read_text().split()
        except OSError:
            continue
        total += int(fields[1]) * PAGE_SIZE
    return total


def pss_bytes(pids: list[int]) -> int:
    """Summed proportional set size (shared pages split between sharers), from smaps_rollup."""
    total = 0
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("Pss:"):
                total += int(line.split()[1]) * 1024
                break
    return total


def open_fds(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            total += len(os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            continue
    return total
